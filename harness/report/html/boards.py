"""The tables over many runs: the scoreboard (a leaderboard for several agents), the check
matrix with the legend that defines its checks, cells and verdict levels, and the failpoints."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from harness.contract import CHECKS, Verdict, check_info
from harness.model import Outcome, RunResult, RunStatus, TaskResult
from harness.report.aggregate import (
    INVARIANTS,
    RUN_STATUSES,
    STANDING_MEANING,
    STATUS_COLUMNS,
    TALLY_COLUMNS,
    VERDICT_MEANING,
    Scoreboard,
    failpoints,
    is_leaderboard,
    leaderboard,
    plural,
    ranked_agents,
    run_title,
    scoreboard_latencies,
)
from harness.report.html.latencies import LATENCY_INFO
from harness.report.html.markup import Page, badge, data_table, esc, level_class, status_class
from harness.report.latency import format_ns


def invariants_section(boards: Sequence[Scoreboard]) -> list[str]:
    """The leaderboard's opening: each agent (in rank order) × each mandatory invariant."""
    if not is_leaderboard(boards):
        return []
    rows = []
    for rank, agent in enumerate(ranked_agents(boards), 1):
        standings = agent.standings
        rows.append([str(rank), esc(agent.label), str(standings.held), str(standings.defects),
                     *(f'<span class="badge {status_class(s.value)}">{esc(s.value)}</span>'
                       for s in standings.by_check.values())])
    legend = "; ".join(f"<em>{esc(s.value)}</em>: {esc(meaning)}" for s, meaning in STANDING_MEANING.items())
    return ['<h2 id="invariants">Invariants, agent by agent</h2>',
            f"<p>Ranked by invariants held, then defects found (each once). {legend}.</p>",
            data_table(["#", "agent", "held", "defects", *INVARIANTS], rows, [0, 2, 3], css="wide standings",
                       titles=["rank", "", "mandatory invariants a run passed and none failed",
                               "mandatory invariants broken, each defect once",
                               *(f"{c}: {check_info(c).title}" for c in INVARIANTS)],
                       widths=["2.5em", "10em", "4em", "5.5em", *("" for _ in INVARIANTS)])]


def scoreboard_section(boards: Sequence[Scoreboard]) -> list[str]:
    ranked = is_leaderboard(boards)
    latencies = scoreboard_latencies(boards)
    rows = []
    for rank, b in enumerate(leaderboard(boards) if ranked else boards, 1):
        held = b.standings
        row = [esc(b.label), esc(b.version), esc(b.adapter), f'<span class="badge {level_class(b.verdict)}">'
               f"{esc(b.verdict)}</span>", esc(b.profile_fits),
               *(str(b.count(s)) for s in RUN_STATUSES), str(b.retries),
               str(held.held), str(held.defects),
               *(esc(format_ns(m)) if (m := b.median(latency)) is not None else "–" for latency in latencies)]
        rows.append([str(rank), *row] if ranked else row)
    header = ["agent", "version", "adapter", "verdict", "profile fits", *STATUS_COLUMNS, "retries", *TALLY_COLUMNS,
              *(f"{latency} p50" for latency in latencies)]
    titles = ["", "", "", "the contract's level for this agent on this adapter",
              "whether every pattern and rule the profile relies on held in every run (no: what did not)",
              "task runs that ran: their checks are verdicts",
              "task runs that do not apply to the agent (no driver for them): never counted as conformant",
              "task runs whose race never came (the moment to interrupt passed), after their retries",
              "task runs the harness itself failed: nothing about the agent is known",
              "task runs the profile could not drive (a session it cannot name after a kill, …): fix the profile",
              "earlier tries of races that were not exercised, run again",
              "mandatory invariants a run passed and none failed",
              "mandatory invariants broken: each defect counted once, however many runs or drivers show it",
              *(f"{lat}: {LATENCY_INFO[lat].title} ({LATENCY_INFO[lat].span}); median over every task"
                if lat in LATENCY_INFO else lat for lat in latencies)]
    offset = 1 if ranked else 0
    return [f'<h2 id="scoreboard">{"Leaderboard" if ranked else "Scoreboard"}</h2>',
            '<p>Task runs counted by what became of them; hover a column heading for what it counts.</p>',
            data_table(["#", *header] if ranked else header, rows, range(offset + 5, len(header) + offset),
                       css="wide score", titles=["rank", *titles] if ranked else titles)]


# --- the check matrix and its legend ----------------------------------------------------


def matrix_section(page: Page) -> list[str]:
    out = ['<h2 id="checks">Checks</h2>',
           "<p>One row per task, one column per check in the contract’s order. A cell counts the runs of its "
           "task: <code>3/3 pass</code> passed in all 3 runs that exercised it, <code>1/3 fail</code> failed in "
           "1 of 3, <code>unknown</code> undecided; <code>skipped</code>, <code>not run</code> and "
           "<code>not exercised</code> say why a check has no verdict. Hover a cell for the details, follow it "
           "to the run; the <a href=\"#legend\">legend</a> defines every check.</p>"]
    for b in page.boards:
        out.append(f"<h3>{esc(b.label)} · adapter {esc(b.adapter)} — {esc(b.verdict)}</h3>")
        checks = b.checks
        tasks = b.task_names
        if not tasks or not checks and not any(t.status is not RunStatus.RAN for t in b.tasks):
            out.append("<p>No checks ran.</p>")
            continue
        head = ['<th scope="col">task</th>', '<th scope="col">runs</th>']
        for check in checks:
            head.append(_check_heading(check, b.tier(check)))
        rows = []
        for task in tasks:
            runs = [t for t in b.tasks if t.task == task]
            statuses = Counter(t.status.value for t in runs)
            retries = sum(len(t.attempts) for t in runs)
            summary = ", ".join(f"{n} {s}" for s, n in statuses.items())
            if retries:
                summary += f" · {plural(retries, 'retry').replace('retrys', 'retries')}"
            line = [f'<th scope="row">{esc(run_title(task, runs[0].driver, ""))}</th>', f"<td>{esc(summary)}</td>"]
            for check in checks:
                cell = b.cell(task, check)
                if cell is None:
                    line.append('<td title="not a check of this task"></td>')
                    continue
                target = _cell_target(cell)
                text = esc(cell.text)
                inner = f'<a href="#{page.anchor(target)}">{text}</a>' if target is not None else text
                line.append(f'<td class="cell {status_class(cell.status)}" title="{esc(_cell_title(cell))}">'
                            f"{inner}</td>")
            rows.append("<tr>" + "".join(line) + "</tr>")
        out.append('<table class="matrix"><colgroup><col class="task-col"><col class="runs-col">'
                   f'<col span="{len(checks)}"></colgroup><thead><tr>{"".join(head)}</tr></thead>'
                   f"<tbody>{''.join(rows)}</tbody></table>")
    return out


def _check_heading(check: str, tier: str) -> str:
    try:
        info = check_info(check)
    except KeyError:
        return f'<th scope="col" class="check">{esc(check)}</th>'
    advisory = tier != "mandatory" or info.advisory
    word = f" ({tier if tier != 'mandatory' else 'advisory'})" if advisory else ""
    hover = f"{info.id} {info.name}{word}: {info.description}"
    return (f'<th scope="col" class="check{" advisory" if advisory else ""}" title="{esc(hover)}">'
            f'<a href="#check-{esc(info.anchor)}">{esc(info.id)}</a>'
            f'<span class="check-title">{esc(info.title)}{esc(word)}</span></th>')


def _cell_target(cell) -> TaskResult | None:
    """The run a cell links to: its first failing, then undecided, then any run."""
    for outcome in (Outcome.FAIL, Outcome.UNKNOWN):
        for t, r in cell.results:
            if r.outcome is outcome:
                return t
    if cell.results:
        return cell.results[0][0]
    return cell.others[0] if cell.others else None


def _cell_title(cell) -> str:
    first = cell.results[0][0] if cell.results else cell.others[0] if cell.others else None
    lines = [f"{cell.check} on {run_title(cell.task, first.driver if first else '', '')}: {cell.explanation}"]
    for t, r in cell.results:
        lines.append(f"#{t.repeat}: {r.outcome.value}: {r.evidence.summary}")
    for t in cell.others:
        lines.append(f"#{t.repeat}: {t.status.value}" + (f": {t.reason}" if t.reason else ""))
    return "\n".join(lines)


def legend_section() -> list[str]:
    rows = []
    for info in CHECKS:
        rows.append([f'<strong id="check-{esc(info.anchor)}">{esc(info.id)}</strong>',
                     esc(info.title) + (" <em>(advisory)</em>" if info.advisory else ""),
                     f"<code>{esc(info.name)}</code>", esc(info.observes.value), esc(info.description),
                     f"<code>docs/checks.md#{esc(info.anchor)}</code>"])
    levels = "".join(f"<dt>{badge(v.value, level_class(v.value))}</dt><dd>{esc(VERDICT_MEANING[v])}.</dd>"
                     for v in Verdict)
    cells = "".join(f"<dt>{badge(word, css)}</dt><dd>{esc(meaning)}</dd>" for word, css, meaning in (
        ("3/3 pass", "pass", "passed in each of the 3 runs that exercised it"),
        ("1/3 fail", "fail", "failed in 1 of the 3 runs that exercised it (it decides: not conformant)"),
        ("1/3 → C8", "consequence", "failed only on what C8 failed on (one defect: shown, counted once, there)"),
        ("unknown", "unknown", "the evidence could not decide it in any run (2/3 unknown: in 2 of 3)"),
        ("skipped", "skipped", "no run exercised it (the turn had ended before Stop, …)"),
        ("not run", "not-run", "the task does not apply to the agent (no driver for it); never counted as conformant"),
        ("not exercised", "not-exercised", "the race the task meant to run never came, after its retries"),
        ("errored", "errored", "the harness failed; nothing about the agent is known")))
    return ['<h2 id="legend">What the checks mean</h2>',
            "<p>The contract’s checks, in its order; <em>observes</em> says whether a check is decided from outside "
            "(B: requests the fake server received, exit codes, the process table), from the agent’s log through "
            "a log reader (L), or both. Each is described at length in the section of <code>docs/checks.md</code> "
            "named beside it.</p>",
            data_table(["check", "title", "checker", "observes", "what it asks", "described in"], rows, css="wide",
                       widths=["4.5em", "15em", "19em", "6.5em", "", "12.5em"]),
            '<div class="with-defs"><div><h3>Cells</h3><dl>' + cells + "</dl></div>"
            '<aside class="defs"><h3>Verdict levels</h3><dl>' + levels + "</dl></aside></div>"]


# --- failpoints --------------------------------------------------------------------------


def failpoints_section(runs: Sequence[RunResult], boards: Sequence[Scoreboard]) -> list[str]:
    found = failpoints(runs, boards)
    rows = []
    for f in found:
        result = "caught" if f.caught else "missed"
        rows.append([esc(f.label), esc(f.failpoint), esc(", ".join(f.targets)), str(len(f.runs)),
                     f'<span class="{result}">{"caught" if f.caught else "SURVIVED"}</span>',
                     esc(", ".join(f.caught_by))])
    if not rows:
        return []
    caught = sum(f.caught for f in found)
    return [f'<h2 id="failpoints">Failpoints: {caught} of {len(rows)} caught</h2>',
            "<p>Each failpoint breaks the agent on purpose; it is caught when a mandatory check of one of its "
            "runs failed or stayed undecided, or the run could not complete.</p>",
            data_table(["agent", "failpoint", "targets", "runs", "result", "caught by"], rows, [3], css="wide")]
