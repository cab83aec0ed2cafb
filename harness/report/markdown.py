"""A Markdown summary sized for a pull-request comment or a CI step summary.

It keeps to what a reviewer reads at a glance: the verdict, the scoreboard (a leaderboard
when several agents are compared), the failing checks with their one-line evidence, the
failpoints caught, and the latency percentiles. Full evidence lives in the HTML report; the
failure list is cut at ``MAX_FAILURES`` so the comment stays far below GitHub's size limit.
"""

from __future__ import annotations

from typing import Sequence

from harness.report.latency import format_ns
from harness.model import RunResult
from harness.report.aggregate import (
    Scoreboard,
    failpoints,
    headline,
    is_leaderboard,
    latency_ids,
    leaderboard,
    scoreboards,
)
from harness.report.text import md_cell, plain

MAX_FAILURES = 40


def render_markdown(runs: Sequence[RunResult]) -> str:
    boards = scoreboards(runs)
    lines = [f"## stopbench {'leaderboard' if is_leaderboard(boards) else 'report'}: {headline(runs, boards)}", ""]
    lines += _runs(runs)
    lines += _scoreboard(boards)
    lines += _failures(boards)
    lines += _failpoints(runs, boards)
    lines += _latencies(boards)
    return "\n".join(lines).rstrip() + "\n"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str = "") -> list[str]:
    align = align or "l" * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(rule) + " |",
        *("| " + " | ".join(md_cell(str(c)) for c in row) + " |" for row in rows),
        "",
    ]


def _runs(runs: Sequence[RunResult]) -> list[str]:
    keys = ("agent", "agent_version", "profile", "stopbench_version", "host", "started", "ended", "shard")
    rows = [[i, *(plain(r.run.get(k)) for k in keys)] for i, r in enumerate(runs, 1)]
    return _table(["file", "agent", "version", "profile", "stopbench", "host", "started", "ended", "shard"], rows)


def _scoreboard(boards: Sequence[Scoreboard]) -> list[str]:
    ranked = is_leaderboard(boards)
    latencies = latency_ids(boards)
    rows = []
    for rank, b in enumerate(leaderboard(boards) if ranked else boards, 1):
        passed, decided = b.mandatory
        o = b.outcomes
        row = [b.label, b.adapter, b.verdict, f"{b.conformant}/{len(b.ran)}", f"{passed}/{decided}",
               o["pass"], o["fail"], o["unknown"], o["skipped"],
               *(_maybe_ns(b.median(latency)) for latency in latencies)]
        rows.append([rank, *row] if ranked else row)
    header = ["agent", "adapter", "verdict", "conformant tasks", "mandatory checks passed", "pass", "fail", "unknown",
              "skipped", *(f"{latency} p50" for latency in latencies)]
    title = "### Leaderboard" if ranked else "### Scoreboard"
    align = ("r" if ranked else "") + "lllrrrrrr" + "r" * len(latencies)
    return [title, "", *_table(["#", *header] if ranked else header, rows, align)]


def _maybe_ns(value: int | None) -> str:
    return "-" if value is None else format_ns(value)


def _failures(boards: Sequence[Scoreboard]) -> list[str]:
    """One line per failing check over its repeats (the first failing repeat's evidence)."""
    found = []
    for b in boards:
        where = f"{md_cell(b.label)} / {md_cell(b.adapter)}"
        for t in b.tasks:
            if t.error is not None:
                found.append(f"- **{where} / {md_cell(t.task)} #{t.repeat}: task error**: {md_cell(t.error)}")
        for row in b.rows:
            if row.status not in ("fail", "unknown"):
                continue
            bad = [(rep, r) for rep, r in row.results if r.outcome.value == row.status]
            repeats = ", ".join(f"#{rep}" for rep, _ in bad)
            found.append(f"- **{where} / {md_cell(row.task)}: {md_cell(row.check)} {md_cell(row.name)}** "
                         f"({row.tier}) {row.status} in {repeats} of {len(row.results)}: "
                         f"{md_cell(bad[0][1].evidence.summary)}")
    if not found:
        return []
    lines = ["### Failing checks", "", *found[:MAX_FAILURES]]
    if len(found) > MAX_FAILURES:
        lines.append(f"- … and {len(found) - MAX_FAILURES} more (see the HTML report)")
    return lines + [""]


def _failpoints(runs: Sequence[RunResult], boards: Sequence[Scoreboard]) -> list[str]:
    rows = [[f.label, f.failpoint, ", ".join(f.targets), len(f.runs), "caught" if f.caught else "SURVIVED",
             ", ".join(f.caught_by)] for f in failpoints(runs, boards)]
    if not rows:
        return []
    caught = sum(r[4] == "caught" for r in rows)
    return [f"### Failpoints: {caught} of {len(rows)} caught", "",
            *_table(["agent", "failpoint", "targets", "runs", "result", "caught by"], rows, "lllrll")]


def _latencies(boards: Sequence[Scoreboard]) -> list[str]:
    rows = []
    for b in boards:
        for (task, latency), s in b.summaries().items():
            rows.append([b.label, b.adapter, task, latency, s.n,
                         format_ns(s.p50), format_ns(s.p90), format_ns(s.p99), format_ns(s.max)])
    if not rows:
        return []
    rows.sort(key=lambda r: (r[3], r[0], r[1], r[2]))
    return ["### Latencies", "",
            *_table(["agent", "adapter", "task", "latency", "n", "p50", "p90", "p99", "max"], rows, "llllrrrrr")]
