"""A Markdown summary sized for a pull-request comment or a CI step summary.

It keeps to what a reviewer reads at a glance: the verdict (the contract's level, with what
it means), the scoreboard (a leaderboard when several agents are compared) counting task
runs that ran, were not run, were not exercised or errored, what went wrong — real failures
first, identical outcomes as one line — the failpoints caught, and the latency percentiles
with each latency named. Full evidence and the timelines live in the HTML report; the list
of findings is cut at ``MAX_FAILURES`` so the comment stays far below GitHub's size limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.contract import LATENCIES
from harness.model import RunResult
from harness.report.aggregate import (
    INVARIANTS,
    RUN_STATUSES,
    STANDING_MEANING,
    STATUS_COLUMNS,
    TALLY_COLUMNS,
    VERDICT_MEANING,
    Agent,
    Finding,
    Scoreboard,
    agents,
    failpoints,
    headline,
    is_leaderboard,
    latency_order,
    leaderboard,
    ranked_agents,
    report_level,
    runs_text,
    scoreboard_latencies,
    scoreboards,
)
from harness.report.latency import ERROR_HEADER, ERROR_NOTE, format_ns
from harness.report.text import md_cell, plain

MAX_FAILURES = 40
LATENCY_TITLE = {info.id: info.title for info in LATENCIES}


def render_markdown(runs: Sequence[RunResult]) -> str:
    boards = scoreboards(runs)
    lines = [f"## stopbench {'leaderboard' if is_leaderboard(boards) else 'report'}: {headline(runs, boards)}", ""]
    level = report_level(runs)
    if level is not None and not is_leaderboard(boards):
        lines += [f"*{level.value.capitalize()}*: {VERDICT_MEANING[level]}.", ""]
    lines += _notes(runs)
    lines += _invariants(boards)
    lines += _scoreboard(boards)
    lines += _findings(boards)
    lines += _failpoints(runs, boards)
    lines += _latencies(boards)
    lines += _runs(runs)
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
    return ["### Results files", "",
            *_table(["file", "agent", "version", "profile", "stopbench", "host", "started", "ended", "shard"], rows),
            *_published(runs)]


def _notes(runs: Sequence[RunResult]) -> list[str]:
    """What a published results file says of how it was measured, first: it qualifies every row."""
    notes = [f"- **{md_cell(plain(r.run.get('agent')))}@{md_cell(plain(r.run.get('agent_version')))}** (file {i}): "
             f"{md_cell(plain(note))}" for i, r in enumerate(runs, 1)
             if isinstance(r.run.get("published"), dict) and (note := r.run["published"].get("note"))]
    return ["### Notes", "", *notes, ""] if notes else []


def _published(runs: Sequence[RunResult]) -> list[str]:
    """For published results files (harness.report.publish): what they keep, and which task
    runs a later run replaced."""
    notes = [(i, r.run["published"]) for i, r in enumerate(runs, 1) if isinstance(r.run.get("published"), dict)]
    if not notes:
        return []
    lines = [f"Published results files keep {md_cell(plain(notes[0][1].get('kept')))}; the full evidence stays "
             "in each run's own report folder.", ""]
    for i, note in notes:
        for later in note.get("replaced") or ():
            lines.append(f"- file {i}: {md_cell(', '.join(later.get('task_runs') or ()))} from a later run "
                         f"(started {md_cell(plain(later.get('started')))}, {md_cell(plain(later.get('from')))})")
    return lines + ([""] if lines[-1] else [])


def _scoreboard(boards: Sequence[Scoreboard]) -> list[str]:
    ranked = is_leaderboard(boards)
    latencies = scoreboard_latencies(boards)
    rows = []
    for rank, b in enumerate(leaderboard(boards) if ranked else boards, 1):
        held = b.standings
        row = [b.label, b.adapter, b.verdict, b.profile_fits, *(b.count(s) for s in RUN_STATUSES), b.retries,
               held.held, held.defects,
               *(_maybe_ns(b.median(latency)) for latency in latencies)]
        rows.append([rank, *row] if ranked else row)
    header = ["agent", "adapter", "verdict", "profile fits", *STATUS_COLUMNS, "retries", *TALLY_COLUMNS,
              *(f"{latency} p50" for latency in latencies)]
    title = "### Leaderboard" if ranked else "### Scoreboard"
    named = [f"{lat}: {LATENCY_TITLE[lat]}" for lat in latencies if lat in LATENCY_TITLE]
    align = ("r" if ranked else "") + "llll" + "r" * (len(header) - 4)
    return [title, "", *_table(["#", *header] if ranked else header, rows, align),
            "Task runs counted by what became of them: *not run* (no driver for it) never counts as conformant; "
            "*not exercised*: the race never came, after its retries; *errored*: the harness failed; *profile "
            "problem*: the profile could not drive the agent. *Profile fits*: every pattern and rule the profile "
            "relies on held in every run (*no*: what did not; *unknown*: not every one was seen). "
            "*Held*, *defects*: mandatory invariants a run "
            "passed and none failed; broken (each defect once, however many runs or drivers show it)."
            + (f" {'; '.join(named)}." if named else ""), ""]


def _invariants(boards: Sequence[Scoreboard]) -> list[str]:
    """The leaderboard's opening: each agent (in rank order) × each mandatory invariant."""
    if not is_leaderboard(boards):
        return []
    rows = [[rank, agent.label, agent.standings.held, agent.standings.defects,
             *(s.value for s in agent.standings.by_check.values())]
            for rank, agent in enumerate(ranked_agents(boards), 1)]
    return ["### Invariants, agent by agent", "",
            *_table(["#", "agent", "held", "defects", *INVARIANTS], rows, "rlrr" + "l" * len(INVARIANTS)),
            "Ranked by invariants held, then defects found. "
            + "; ".join(f"*{s.value}*: {meaning}" for s, meaning in STANDING_MEANING.items()) + ".", ""]


def _maybe_ns(value: int | None) -> str:
    return "-" if value is None else format_ns(value)


def _finding_line(a: Agent, f: Finding) -> str:
    where = md_cell(a.label)
    listed = md_cell(runs_text(f.runs))
    if len(listed) > 300:
        listed = listed[:299] + "…"
    line = f"- **{where}: {md_cell(f.headline)}**"
    if f.summary:
        line += f" — {md_cell(f.summary)}"
    return line + f" · in {listed}"


def _findings(boards: Sequence[Scoreboard]) -> list[str]:
    """One line per group of identical outcomes, real failures first."""
    found = [_finding_line(a, f) for a in agents(boards) for f in a.findings]
    if not found:
        return []
    lines = ["### What went wrong", "", *found[:MAX_FAILURES]]
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
    shown_error = any(b.errors for b in boards)  # the stopwatch's error beside each figure, where it was measured
    rows = []
    for b in boards:
        for (task, latency), s in b.summaries().items():
            error = b.errors.get((task, latency))
            rows.append([b.label, b.adapter, task, latency, s.n,
                         format_ns(s.p50), format_ns(s.p90), format_ns(s.p99), format_ns(s.max),
                         *([error.text() if error else "-"] if shown_error else [])])
    if not rows:
        return []
    rows.sort(key=lambda r: (latency_order(str(r[3])), r[0], r[1], r[2]))
    measured = sorted({str(r[3]) for r in rows}, key=latency_order)
    defs = [f"- **{info.id}** {info.title}: {info.span}" for info in LATENCIES if info.id in measured]
    header = ["agent", "adapter", "task", "latency", "n", "p50", "p90", "p99", "max",
              *([ERROR_HEADER] if shown_error else [])]
    return ["### Latencies", "",
            *_table(header, rows, "llllrrrrr" + ("l" if shown_error else "")),
            *defs, *([f"- {ERROR_NOTE}"] if shown_error else []), ""]
