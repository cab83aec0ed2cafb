"""A Markdown summary sized for a pull-request comment or a CI step summary.

It keeps to what a reviewer reads at a glance: the verdict, the scoreboard (a leaderboard
when several agents are compared), the failing checks with their one-line evidence, the
mutants caught, and the latency percentiles. Full evidence lives in the HTML report; the
failure list is cut at ``MAX_FAILURES`` so the comment stays far below GitHub's size limit.
"""

from __future__ import annotations

from typing import Sequence

from harness.latency import format_ns
from harness.model import RunResult
from harness.report.aggregate import Scoreboard, is_leaderboard, leaderboard, scoreboards, verdict
from harness.report.text import md_cell

MAX_FAILURES = 40


def render_markdown(runs: Sequence[RunResult]) -> str:
    boards = scoreboards(runs)
    lines = [f"## stopbench: {verdict(runs)}", ""]
    lines += _runs(runs)
    lines += _scoreboard(boards)
    lines += _failures(boards)
    lines += _mutants(boards)
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
    rows = []
    for i, r in enumerate(runs, 1):
        info = r.run
        rows.append([i, info.get("agent", ""), info.get("agent_version", ""), info.get("profile", ""),
                     info.get("stopbench_version", ""), info.get("host", ""), info.get("started", ""),
                     info.get("ended", ""), info.get("shard") or ""])
    return _table(["file", "agent", "version", "profile", "stopbench", "host", "started", "ended", "shard"], rows)


def _scoreboard(boards: Sequence[Scoreboard]) -> list[str]:
    ranked = is_leaderboard(boards)
    rows = []
    for rank, b in enumerate(leaderboard(boards) if ranked else boards, 1):
        passed, decided = b.mandatory
        o = b.outcomes
        row = [b.label, b.adapter, f"{b.conformant}/{len(b.tasks)}", f"{passed}/{decided}",
               o["pass"], o["fail"], o["unknown"], o["skipped"]]
        rows.append([rank, *row] if ranked else row)
    header = ["agent", "adapter", "conformant tasks", "mandatory checks passed", "pass", "fail", "unknown", "skipped"]
    title = "### Leaderboard" if ranked else "### Scoreboard"
    return [title, "", *_table(["#", *header] if ranked else header, rows,
                               ("r" if ranked else "") + "llrrrrrr")]


def _failures(boards: Sequence[Scoreboard]) -> list[str]:
    found = [(b, f) for b in boards for f in b.failures]
    if not found:
        return []
    lines = ["### Failing checks", ""]
    for b, f in found[:MAX_FAILURES]:
        if f.result is None:
            lines.append(f"- **{md_cell(b.label)} / {b.adapter} / {md_cell(f.title)}**: {md_cell(f.task.error or '')}")
        else:
            lines.append(f"- **{md_cell(b.label)} / {b.adapter} / {md_cell(f.title)}** "
                         f"({f.result.outcome.value}, {f.result.tier.value}): {md_cell(f.result.evidence.summary)}")
    if len(found) > MAX_FAILURES:
        lines.append(f"- … and {len(found) - MAX_FAILURES} more (see the HTML report)")
    return lines + [""]


def _mutants(boards: Sequence[Scoreboard]) -> list[str]:
    rows = [[b.label, b.adapter, t.mutant, f"{t.task} #{t.repeat}", "missed" if t.conformant else "caught"]
            for b in boards for t in b.mutants]
    if not rows:
        return []
    return ["### Failpoints", "", *_table(["agent", "adapter", "failpoint", "task", "result"], rows)]


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
