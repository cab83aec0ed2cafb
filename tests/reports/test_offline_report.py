"""A run whose agent tried to reach the network is reported: a note under the terminal's
scoreboard and a table in the HTML page. It is not a check failure; a run on the host's
network says why offline was not enforced."""

from __future__ import annotations

import dataclasses

from harness.model import RunResult, RunStatus
from harness.report import render_html
from harness.report.progress import failures, scoreboard

ATTEMPTS = [{"at_ms": 535.4, "proto": "tcp", "dst": "93.184.216.34", "port": 443},
            {"at_ms": 536.0, "proto": "udp", "dst": "10.255.255.53", "port": 53, "dns_name": "registry.npmjs.org"}]


def _with_network(run: RunResult, network: dict[str, object]) -> RunResult:
    first = next(i for i, t in enumerate(run.tasks) if t.status is RunStatus.RAN)
    tasks = list(run.tasks)
    tasks[first] = dataclasses.replace(tasks[first], evidence={**tasks[first].evidence, "network": network})
    return RunResult(run.run, tuple(tasks), run.latencies)


def test_the_terminal_notes_outbound_attempts_apart_from_failures(run):
    reached = _with_network(run, {"kind": "netns", "attempts": ATTEMPTS})
    text = scoreboard(list(reached.tasks))
    assert "note: outbound attempts, refused offline (not a check failure):" in text
    assert "tcp 93.184.216.34:443 at +535 ms; dns registry.npmjs.org (udp 10.255.255.53:53) at +536 ms" in text
    assert failures(list(reached.tasks)) == failures(list(run.tasks))
    assert "outbound attempts" not in scoreboard(list(_with_network(run, {"kind": "netns", "attempts": []}).tasks))


def test_the_page_lists_every_attempt_or_why_offline_was_not_enforced(run):
    page = render_html([_with_network(run, {"kind": "netns", "attempts": ATTEMPTS})])
    assert "Network: netns" in page and "registry.npmjs.org" in page and "93.184.216.34" in page
    host = render_html([_with_network(run, {"kind": "host", "why": "offline not enforced: in-process"})])
    assert "Network: host" in host and "offline not enforced: in-process" in host
