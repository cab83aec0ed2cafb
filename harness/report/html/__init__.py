"""The self-contained HTML report: one file, inline CSS and SVG, no script, no network.

A page that fits the window and explains itself. Sections, in reading order: the verdict
(the contract's level, with what it means); the scoreboard (a ranked leaderboard when
several agents are in the report) counting task runs that ran, were not run, were not
exercised or errored, with retries and the medians of the latencies measured; the check
matrix per agent and adapter, headed by each check's id and name, right after it, so where
an agent stands is seen before the evidence; what went wrong, real failures first and
identical outcomes as one line, each with its evidence as tables that link to the moment on
the run's timeline (raw JSON folded beside); a legend that defines every check, cell and
verdict level; every task run, named "task · driver · adapter · repeat", with its timeline
(one lane per actor on one axis from the task's start, in one unit; harmless probes of paths
the server does not serve on a lane of their own; open for a run that failed, folded for one
that passed), its checks, the agent's command lines and output tails and the server's
records; failpoints; latencies with those measured defined beside them (plots only where a
sample has five values or more, every value as a dot otherwise, one unit along each axis);
and the results files themselves.

Every piece of text from the results is escaped; the only links are to anchors in the page.

The pieces: ``page`` (the skeleton, its style, the verdict and the results files), ``markup``
(escaping, tables, badges and the page's anchors), ``boards`` (scoreboard, check matrix and
legend, failpoints), ``findings`` (what went wrong, with its evidence), ``runs`` (every task
run and its timeline) and ``latencies``.
"""

from harness.report.html.page import render_html

__all__ = ["render_html"]
