"""The self-contained HTML report: one file, inline CSS and SVG, no script, no network.

A page that fits the window and explains itself. Sections, in reading order: the verdict
(the contract's level, with what it means); the scoreboard (a ranked leaderboard when
several agents are in the report) counting task runs that ran, were not run, were not
exercised or errored, with retries and the L1–L4 and L7 medians; what went wrong, real
failures first and identical outcomes as one line, each with its evidence as tables that
link to the moment on the run's timeline (raw JSON folded beside); the check matrix per
agent and adapter, headed by each check's id and name, with a legend that defines every
check, cell and verdict level; every task run with its timeline (one lane per actor on one
axis in ms from the task's start; open for a run that failed, folded for one that passed),
its checks, the agent's command lines and output tails and the server's records; failpoints;
latencies with L1–L7 defined beside them (plots only where a sample has five values or more,
every value as a dot otherwise); and the results files themselves.

Every piece of text from the results is escaped; the only links are to anchors in the page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from harness.contract import CHECKS, LATENCIES, Verdict, check_info, check_order
from harness.model import CheckResult, Outcome, RunResult, RunStatus, TaskResult, task_verdict
from harness.report.aggregate import (
    NOTHING_RAN,
    RANK_READER,
    RANK_UNKNOWN,
    RUN_STATUSES,
    VERDICT_MEANING,
    Finding,
    Scoreboard,
    agents,
    attempts_text,
    check_title,
    failpoints,
    headline,
    is_leaderboard,
    latency_order,
    leaderboard,
    plural,
    report_level,
    run_groups,
    run_name,
    scoreboard_latencies,
    scoreboards,
    verdict,
)
from harness.report.evidence import Context, Field, fields
from harness.report.latency import format_ns
from harness.report.svg import (
    MIN_PLOT_N,
    PALETTE,
    dot_plot,
    histogram,
    ms_text,
    percentile_plot,
    timeline,
    timeline_legend,
)
from harness.report.svg import timeline_ids as svg_timeline_ids
from harness.report.text import item_label, item_text, plain, xml_safe

MAX_MEMBERS_WITH_EVIDENCE = 5  # per finding; the other runs are listed as links
LATENCY_INFO = {info.id: info for info in LATENCIES}

CSS = """
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; padding: 0 1.5em 3em; color: #222; background: #fff; }
h1 { margin: .6em 0 .1em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.8em; padding-bottom: .15em; }
h3 { margin: 1.2em 0 .4em; } h4 { margin: .8em 0 .3em; } h5 { margin: .6em 0 .2em; font-size: 1em; color: #444; }
p, li, td, th, summary, dd, dt, h3, h4, h5 { overflow-wrap: break-word; }
table.fixed { table-layout: fixed; width: 100%; } table.fixed td, table.fixed th, pre { overflow-wrap: anywhere; }
a { color: #0b57a4; }
nav { display: flex; flex-wrap: wrap; gap: .3em 1.2em; margin: .6em 0; }
table { border-collapse: separate; border-spacing: 0; margin: .5em 0 1.2em; max-width: 100%; }
th, td { border: 1px solid #d4d4d4; border-width: 0 1px 1px 0; padding: .25em .5em; text-align: left;
         vertical-align: top; }
tr > :first-child { border-left-width: 1px; } table.kv tr:first-child > * { border-top-width: 1px; }
thead th { position: sticky; top: 0; z-index: 2; background: #f1f1f1; border-top-width: 1px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; } th.num { text-align: right; }
table.wide { width: 100%; }
table.score { font-size: 13px; } table.score td.num { white-space: normal; } table.score .badge { white-space: normal; }
table.matrix { width: 100%; table-layout: fixed; }
table.matrix col.task-col { width: 13em; } table.matrix col.runs-col { width: 7em; }
table.matrix th.check { font-size: 12px; line-height: 1.2; }
table.matrix th.check a { font-weight: bold; font-size: 13px; }
table.matrix th.check .check-title { display: block; font-weight: normal; color: #444; }
table.matrix th.advisory { font-style: italic; }
table.matrix td { font-size: 12.5px; text-align: center; overflow-wrap: anywhere; }
table.matrix th { overflow-wrap: anywhere; }
table.kv { table-layout: fixed; width: 100%; } table.kv td { overflow-wrap: anywhere; }
table.kv th { background: #fafafa; font-weight: 600; width: 11em; overflow-wrap: anywhere; }
table.kv table { width: 100%; margin: 0; table-layout: fixed; } table.kv td ol { margin: 0; padding-left: 1.4em; }
.verdict { font-size: 1.3em; font-weight: bold; display: inline-block; padding: .15em .6em; border-radius: 4px; }
.meaning { margin: .3em 0; color: #333; }
.lvl-conformant, .lvl-conformant-black-box { background: #dcf2d8; }
.lvl-not-conformant { background: #f9d6d5; } .lvl-incomplete { background: #fdf0c8; }
.lvl-nothing-ran { background: #eee; } .lvl-board { background: #e6eef8; }
.pass { background: #e3f4e1; } .fail { background: #f9d6d5; } .unknown { background: #fdf0c8; }
.skipped, .not-run { background: #eee; color: #666; } .not-exercised { background: #e8e4f6; }
.errored { background: #f3c9b8; } .missed { background: #f9d6d5; } .caught { background: #e3f4e1; }
.badge { white-space: nowrap; display: inline-block; padding: 0 .45em; border-radius: 3px; font-size: .9em;
         font-weight: 600; border: 1px solid rgba(0,0,0,.12); }
td.cell a { color: inherit; text-decoration: none; display: block; }
details { border: 1px solid #ddd; border-radius: 4px; margin: .45em 0; padding: .3em .7em; }
details > summary { cursor: pointer; font-weight: 600; }
details.raw, details.marks { border: 0; padding: 0; margin: .2em 0; }
details.raw > summary, details.marks > summary { font-weight: normal; color: #555; font-size: .9em; }
ol.findings { padding-left: 1.6em; }
.member { border-left: 3px solid #ddd; padding-left: .7em; margin: .6em 0; }
.item { margin: .3em 0 .6em; }
pre { background: #f6f6f6; padding: .45em; margin: .2em 0; white-space: pre-wrap; word-break: break-word;
      max-height: 24em; overflow-y: auto; }
code { background: #f3f3f3; padding: 0 .2em; }
.legend-row { display: flex; flex-wrap: wrap; gap: .2em 1.2em; font-size: 12px; color: #444; margin: .2em 0 .6em; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; }
.with-defs { display: grid; grid-template-columns: minmax(0, 1fr); gap: 1.5em; }
@media (min-width: 1100px) { .with-defs { grid-template-columns: minmax(0, 1fr) 22em; } }
aside.defs { border-left: 3px solid #ddd; padding-left: 1em; align-self: start; position: sticky; top: 1em; }
aside.defs dt { font-weight: bold; margin-top: .5em; } aside.defs dd { margin: 0; }
svg { background: #fff; border: 1px solid #ddd; max-width: 100%; }
svg.timeline { display: block; height: auto; }
svg .axis { stroke: #444; } svg text { font: 10px sans-serif; fill: #333; }
svg .lane-name { font-size: 11px; font-weight: bold; } svg .annotation { font-size: 11px; font-weight: bold; }
svg .span-label { font-size: 10px; fill: #111; }
svg .plot-title { font-weight: bold; font-size: 11px; } svg .legend { font-size: 10px; }
svg g.mark:target rect, svg g.mark:target path, svg g.mark:target circle { stroke: #000; stroke-width: 3; }
"""

# ---------------------------------------------------------------------------
# Small pieces


def _e(value: Any) -> str:
    return escape(str(value))


def _level_class(text: str) -> str:
    return "lvl-" + "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-").replace("--", "-")


def _status_class(status: str) -> str:
    return status.replace(" ", "-")


def _badge(text: str, css: str) -> str:
    return f'<span class="badge {_e(css)}">{_e(text)}</span>'


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = (), *,
           css: str = "", titles: Sequence[str] = (), widths: Sequence[str] = ()) -> str:
    """A table whose cells are markup already escaped; the header is text. ``widths`` (CSS
    lengths, "" for the rest) make it a fixed-layout table that never outgrows the page."""
    numeric = set(numeric)
    head = "".join(
        f'<th{" class=num" if i in numeric else ""}{_title_attr(titles[i] if i < len(titles) else "")}>{_e(h)}</th>'
        for i, h in enumerate(header))
    body = "\n".join(
        "<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    if widths:
        css = f"{css} fixed".strip()
    cols = ("<colgroup>" + "".join(f'<col style="width: {w}">' if w else "<col>" for w in widths) + "</colgroup>"
            if widths else "")
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}>{cols}\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def _kv(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column table of a label (text) and a value (markup already escaped)."""
    return '<table class="kv">' + "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _title_attr(text: str) -> str:
    return f' title="{_e(text)}"' if text else ""


def _check_label(check: str, name: str = "") -> str:
    title = check_title(check, name)
    return f"{check} {title}".strip()


class Page:
    """What every section needs to link into the rest of the page."""

    def __init__(self, boards: Sequence[Scoreboard]):
        self.boards = boards
        self.ids: dict[int, dict[str, str]] = {}  # id(task) -> ref -> element id on its timeline
        self.anchors: dict[int, str] = {}  # id(task) -> the run's anchor
        for b in boards:
            for i, t in enumerate(b.tasks):
                anchor = b.anchors[i]
                self.anchors[id(t)] = anchor
                self.ids[id(t)] = svg_timeline_ids(t.timeline, f"{anchor}-tl")

    def anchor(self, task: TaskResult) -> str:
        return self.anchors[id(task)]

    def run_link(self, task: TaskResult, text: str | None = None) -> str:
        return f'<a href="#{self.anchor(task)}">{_e(text or run_name(task))}</a>'

    def ref_link(self, task: TaskResult, ref: str | None, text: str) -> str:
        target = self.ids.get(id(task), {}).get(ref or "")
        return f'<a href="#{target}" title="its moment on the timeline">{_e(text)}</a>' if target else _e(text)


# ---------------------------------------------------------------------------
# The page


def render_html(runs: Sequence[RunResult]) -> str:
    boards = scoreboards(runs)
    page = Page(boards)
    ranked = is_leaderboard(boards)
    title = "stopbench leaderboard" if ranked else "stopbench report"
    body = [
        *_header(runs, boards, title),
        *_scoreboard(boards),
        *_findings(page),
        *_matrices(page),
        *_legend(),
        *_task_runs(page),
        *_failpoints(runs, boards),
        *_latencies(boards),
        *_files(runs),
    ]
    return xml_safe(
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _header(runs: Sequence[RunResult], boards: Sequence[Scoreboard], title: str) -> list[str]:
    level = report_level(runs)
    text = verdict(runs)
    css = "lvl-board" if is_leaderboard(boards) else _level_class(level.value if level else NOTHING_RAN)
    out = [f"<header>\n<h1>{_e(title)}</h1>", f'<p class="verdict {css}">{_e(headline(runs, boards))}</p>']
    if is_leaderboard(boards):
        out.append('<p class="meaning">Each agent’s verdict is on its row of the leaderboard.</p>')
    elif level is not None:
        out.append(f'<p class="meaning"><strong>{_e(level.value.capitalize())}</strong>: '
                   f"{_e(VERDICT_MEANING[level])}.</p>")
    elif text:
        out.append(f'<p class="meaning">{_e(text.capitalize())}: no task run counted towards a verdict.</p>')
    links = [("scoreboard", "Leaderboard" if is_leaderboard(boards) else "Scoreboard"),
             ("findings", "What went wrong"), ("checks", "Checks"), ("legend", "What the checks mean"),
             ("runs", "Task runs"), ("latency", "Latencies"), ("files", "Results files")]
    out.append("<nav>" + "".join(f'<a href="#{i}">{_e(t)}</a>' for i, t in links) + "</nav>\n</header>")
    return out


def _scoreboard(boards: Sequence[Scoreboard]) -> list[str]:
    ranked = is_leaderboard(boards)
    latencies = scoreboard_latencies(boards)
    rows = []
    for rank, b in enumerate(leaderboard(boards) if ranked else boards, 1):
        passed, decided = b.mandatory
        row = [_e(b.label), _e(b.version), _e(b.adapter), f'<span class="badge {_level_class(b.verdict)}">'
               f"{_e(b.verdict)}</span>",
               *(str(b.count(s)) for s in RUN_STATUSES), str(b.retries),
               f"{b.conformant}/{len(b.ran)}", f"{passed}/{decided}",
               *(_e(format_ns(m)) if (m := b.median(latency)) is not None else "–" for latency in latencies)]
        rows.append([str(rank), *row] if ranked else row)
    header = ["agent", "version", "adapter", "verdict", "ran", "not run", "not exercised", "errored", "retries",
              "conformant runs", "mandatory checks passed", *(f"{latency} p50" for latency in latencies)]
    titles = ["", "", "", "the contract's level for this agent on this adapter",
              "task runs that ran: their checks are verdicts",
              "task runs that do not apply to the agent (no driver for them): never counted as conformant",
              "task runs whose race never came (the moment to interrupt passed), after their retries",
              "task runs the harness itself failed: nothing about the agent is known",
              "earlier tries of races that were not exercised, run again",
              "task runs that ran and reached a conformant level, of those that ran",
              "mandatory check results that passed, of those decided or undecided (skipped ones excluded)",
              *(f"{lat}: {LATENCY_INFO[lat].title} ({LATENCY_INFO[lat].span}); median over every task"
                if lat in LATENCY_INFO else lat for lat in latencies)]
    offset = 1 if ranked else 0
    return [f'<h2 id="scoreboard">{"Leaderboard" if ranked else "Scoreboard"}</h2>',
            '<p>Task runs counted by what became of them; hover a column heading for what it counts.</p>',
            _table(["#", *header] if ranked else header, rows, range(offset + 4, len(header) + offset),
                   css="wide score", titles=["rank", *titles] if ranked else titles)]


# --- what went wrong --------------------------------------------------------------------


def _findings(page: Page) -> list[str]:
    out = ['<h2 id="findings">What went wrong</h2>',
           "<p>Failed checks first, then the agent’s own failures, harness errors, undecided checks, advisory "
           "findings, checks that need a log reader, races not exercised and tasks not run. Identical outcomes "
           "are one line.</p>"]
    any_found = False
    for a in agents(page.boards):
        found = a.findings
        if not found:
            continue
        any_found = True
        adapters = ", ".join(b.adapter for b in a.boards)
        out.append(f"<h3>{_e(a.label)} on {_e(adapters)} — {_e(a.verdict)}</h3>")
        out.append('<ol class="findings">')
        out += [_finding(page, f) for f in found]
        out.append("</ol>")
    if not any_found:
        out.append("<p>Nothing: every check that ran passed or was skipped.</p>")
    return out


def _finding_class(f: Finding) -> str:
    if f.is_check:
        return f.outcome
    return {"ran": "fail"}.get(f.outcome, _status_class(f.outcome))


def _finding(page: Page, f: Finding) -> str:
    is_open = " open" if f.rank <= RANK_UNKNOWN else ""
    word = "agent failed" if f.outcome == "ran" else f.outcome
    head = (f"<summary>{_badge(word, _finding_class(f))} {_e(f.headline)}"
            + (f" — {_e(f.summary)}" if f.summary else "") + "</summary>")
    runs = f.runs
    listing = "<p>In " + "; ".join(
        _e(pattern.split("{repeats}")[0]) + ", ".join(page.run_link(t, f"#{t.repeat}") for t in members)
        + _e(pattern.split("{repeats}")[1]) for pattern, members in run_groups(runs)) + ".</p>"
    parts = [listing]
    if f.is_check and f.rank < RANK_READER:
        shown = 0
        for t, r in f.members:
            if r is None or shown >= MAX_MEMBERS_WITH_EVIDENCE:
                continue
            shown += 1
            parts.append(_member(page, t, r))
        if len(f.members) > shown:
            parts.append(f"<p>Evidence of the other {len(f.members) - shown} is in each run’s section.</p>")
    elif not f.is_check:
        parts += [_run_problem(page, t) for t in runs[:MAX_MEMBERS_WITH_EVIDENCE]]
    return f'<li class="finding"><details{is_open}>{head}{"".join(parts)}</details></li>'


def _member(page: Page, task: TaskResult, r: CheckResult) -> str:
    decided = f" · decided by the {r.decided_by.value} half" if r.decided_by else ""
    anchor = page.anchor(task)
    links = [page.run_link(task, "timeline"), f'<a href="#{anchor}-processes">command lines and output</a>',
             f'<a href="#{anchor}-records">server records</a>']
    return (f'<div class="member"><h4>{page.run_link(task)} · {_e(_check_label(r.check, r.name))}'
            f" · {_e(r.outcome.value)} ({_e(r.tier.value)}){_e(decided)}</h4>"
            f"<p>{_e(r.evidence.summary)}</p>{_evidence(page, task, r)}"
            f'<p class="links">See: {" · ".join(links)}</p></div>')


def _run_problem(page: Page, task: TaskResult) -> str:
    lines = [f"<h4>{page.run_link(task)} — {_e(task.status.value)}</h4>"]
    if task.reason:
        lines.append(f"<p>{_e(task.reason)}</p>")
    if task.attempts:
        lines.append("<p>Tried again: " + "; ".join(
            f"{_e(a.reason)} ({a.duration_s:.2f} s)" for a in task.attempts) + ".</p>")
    if task.evidence.get("agent_failure"):
        lines.append(f'<p class="links">See <a href="#{page.anchor(task)}-failure">what the agent did</a> and '
                     f'<a href="#{page.anchor(task)}-processes">its command line and output</a>.</p>')
    return '<div class="member">' + "".join(lines) + "</div>"


def _evidence(page: Page, task: TaskResult, r: CheckResult) -> str:
    if not r.evidence.items:
        return ""
    ctx = Context.of(task)
    groups: dict[str, list[str]] = {}
    for item in r.evidence.items:
        table = _fields_table(page, task, fields(item, ctx))
        raw = f'<details class="raw"><summary>raw JSON</summary><pre>{_e(item_text(item))}</pre></details>'
        groups.setdefault(item_label(item), []).append(f'<div class="item">{table}{raw}</div>')
    return "".join(f"<h5>{_e(label)} ({len(items)})</h5>{''.join(items)}" for label, items in groups.items())


def _fields_table(page: Page, task: TaskResult, fs: Sequence[Field]) -> str:
    return _kv((f.key, _field_value(page, task, f)) for f in fs)


def _field_value(page: Page, task: TaskResult, f: Field) -> str:
    if f.rows:
        keys = list(dict.fromkeys(sub.key for row in f.rows for sub in row))
        body = "".join("<tr>" + "".join(
            f"<td>{_field_value(page, task, by_key[k]) if k in by_key else ''}</td>"
            for k in keys) + "</tr>" for row in f.rows if (by_key := {sub.key: sub for sub in row}) is not None)
        return f"<table><thead><tr>{''.join(f'<th>{_e(k)}</th>' for k in keys)}</tr></thead><tbody>{body}</tbody>" \
               "</table>"
    if f.lines:
        return "<ol>" + "".join(f"<li>{_e(line)}</li>" for line in f.lines) + "</ol>"
    if f.ref:
        return page.ref_link(task, f.ref, f.text)
    if "\n" in f.text:
        return f"<pre>{_e(f.text)}</pre>"
    return _e(f.text)


# --- the check matrix and its legend ----------------------------------------------------


def _matrices(page: Page) -> list[str]:
    out = ['<h2 id="checks">Checks</h2>',
           "<p>One row per task, one column per check in the contract’s order. A cell counts the runs of its "
           "task: <code>3/3 pass</code> passed in all 3 runs that exercised it, <code>1/3 fail</code> failed in "
           "1 of 3, <code>unknown</code> undecided; <code>skipped</code>, <code>not run</code> and "
           "<code>not exercised</code> say why a check has no verdict. Hover a cell for the details, follow it "
           "to the run; the <a href=\"#legend\">legend</a> defines every check.</p>"]
    for b in page.boards:
        out.append(f"<h3>{_e(b.label)} · {_e(b.adapter)} — {_e(b.verdict)}</h3>")
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
            line = [f'<th scope="row">{_e(task)}</th>', f"<td>{_e(summary)}</td>"]
            for check in checks:
                cell = b.cell(task, check)
                if cell is None:
                    line.append('<td title="not a check of this task"></td>')
                    continue
                target = _cell_target(cell)
                text = _e(cell.text)
                inner = f'<a href="#{page.anchor(target)}">{text}</a>' if target is not None else text
                line.append(f'<td class="cell {_status_class(cell.status)}" title="{_e(_cell_title(cell))}">'
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
        return f'<th scope="col" class="check">{_e(check)}</th>'
    advisory = tier != "mandatory" or info.advisory
    word = f" ({tier if tier != 'mandatory' else 'advisory'})" if advisory else ""
    hover = f"{info.id} {info.name}{word}: {info.description}"
    return (f'<th scope="col" class="check{" advisory" if advisory else ""}" title="{_e(hover)}">'
            f'<a href="#check-{_e(info.anchor)}">{_e(info.id)}</a>'
            f'<span class="check-title">{_e(info.title)}{_e(word)}</span></th>')


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
    lines = [f"{cell.check} on {cell.task}: {cell.explanation}"]
    for t, r in cell.results:
        lines.append(f"#{t.repeat}: {r.outcome.value}: {r.evidence.summary}")
    for t in cell.others:
        lines.append(f"#{t.repeat}: {t.status.value}" + (f": {t.reason}" if t.reason else ""))
    return "\n".join(lines)


def _legend() -> list[str]:
    rows = []
    for info in CHECKS:
        rows.append([f'<strong id="check-{_e(info.anchor)}">{_e(info.id)}</strong>',
                     _e(info.title) + (" <em>(advisory)</em>" if info.advisory else ""),
                     f"<code>{_e(info.name)}</code>", _e(info.observes.value), _e(info.description),
                     f"<code>docs/checks.md#{_e(info.anchor)}</code>"])
    levels = "".join(f"<dt>{_badge(v.value, _level_class(v.value))}</dt><dd>{_e(VERDICT_MEANING[v])}.</dd>"
                     for v in Verdict)
    cells = "".join(f"<dt>{_badge(word, css)}</dt><dd>{_e(meaning)}</dd>" for word, css, meaning in (
        ("3/3 pass", "pass", "passed in each of the 3 runs that exercised it"),
        ("1/3 fail", "fail", "failed in 1 of the 3 runs that exercised it (it decides: not conformant)"),
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
            _table(["check", "title", "checker", "observes", "what it asks", "described in"], rows, css="wide",
                   widths=["4.5em", "15em", "19em", "6.5em", "", "12.5em"]),
            '<div class="with-defs"><div><h3>Cells</h3><dl>' + cells + "</dl></div>"
            '<aside class="defs"><h3>Verdict levels</h3><dl>' + levels + "</dl></aside></div>"]


# --- task runs ---------------------------------------------------------------------------


def _run_failed(task: TaskResult) -> bool:
    v = task_verdict(task)
    return v is not None and not v.ok


def _task_runs(page: Page) -> list[str]:
    out = ['<h2 id="runs">Task runs</h2>',
           "<p>What happened in each run, as a timeline: one lane per actor — the harness’s inputs, Stops, kills "
           "and restarts; the model’s requests with their chunks; the agent’s processes; each bash window’s "
           "processes — on one axis in ms from the task’s start. Runs that failed are open; the others are "
           "folded.</p>",
           '<div class="legend-row">' + "".join(f"<span><strong>{_e(k)}</strong>: {_e(v)}</span>"
                                                for k, v in timeline_legend().items()) + "</div>"]
    for b in page.boards:
        out.append(f"<h3>{_e(b.label)} · {_e(b.adapter)}</h3>")
        not_run = [t for t in b.tasks if t.status is RunStatus.NOT_RUN]
        for t in b.tasks:
            if t.status is not RunStatus.NOT_RUN:
                out.append(_run_section(page, t))
        if not_run:
            rows = [[f'<span id="{page.anchor(t)}">{_e(t.task)}</span>', str(t.repeat), _e(t.driver),
                     _e(t.reason or "")] for t in not_run]
            out.append(f"<h4>Not run ({len(not_run)})</h4>")
            out.append(_table(["task", "repeat", "driver", "why"], rows, [1], css="wide",
                              widths=["16em", "5em", "7em", ""]))
    return out


def _run_section(page: Page, t: TaskResult) -> str:
    anchor = page.anchor(t)
    v = task_verdict(t)
    status = v.value if v is not None and t.status is RunStatus.RAN else t.status.value
    css = _level_class(v.value) if t.status is RunStatus.RAN and v is not None else _status_class(t.status.value)
    extra = [f"{t.duration_s:.2f} s"]
    if t.attempts:
        extra.append(attempts_text(t))
    if t.mutant:
        extra.append(f"failpoint {t.mutant}")
    is_open = " open" if _run_failed(t) or t.status is RunStatus.ERRORED else ""
    parts = [f'<details class="run" id="{anchor}"{is_open}><summary>{_badge(status, css)} {_e(run_name(t))} · '
             f"{_e(' · '.join(extra))}</summary>"]
    if t.reason:
        parts.append(f"<p><strong>{_e(t.status.value if t.status is not RunStatus.RAN else 'the agent failed')}"
                     f"</strong>: {_e(t.reason)}</p>")
    if t.attempts:
        parts.append("<p>Earlier tries (not exercised, run again): " + "; ".join(
            f"{n}. {_e(a.reason)} ({a.duration_s:.2f} s)" for n, a in enumerate(t.attempts, 1)) + ".</p>")
    reproduce = t.evidence.get("reproduce") if isinstance(t.evidence, Mapping) else None
    if reproduce:
        parts.append(f"<p>Run it again: <code>{_e(reproduce)}</code></p>")
    if t.timeline:
        parts.append(timeline(t.timeline, f"{run_name(t)}: what happened, in ms from the task's start",
                              f"{anchor}-tl"))
        parts.append(_marks_table(t))
    elif t.status is RunStatus.RAN:
        parts.append("<p>No timeline was recorded for this run.</p>")
    if t.checks:
        parts.append(_run_checks(page, t))
    parts += _run_evidence(page, t)
    parts.append("</details>")
    return "".join(parts)


def _marks_table(t: TaskResult) -> str:
    rows = [[_e(ms_text(m.at_ms)), _e(ms_text(m.end_ms)) if m.end_ms is not None else "", _e(m.lane), _e(m.kind),
             _e(m.label), _e(m.ref or "")] for m in sorted(t.timeline, key=lambda m: m.at_ms)]
    return (f'<details class="marks"><summary>every mark of the timeline ({len(rows)}), in time order</summary>'
            + _table(["at", "until", "lane", "kind", "what", "ref"], rows, [0, 1], css="wide",
                     widths=["6em", "6em", "8em", "7em", "", "9em"]) + "</details>")


def _run_checks(page: Page, t: TaskResult) -> str:
    rows = []
    for c in sorted(t.checks, key=lambda c: (check_order(c.check), c.check)):
        decided = c.decided_by.value if c.decided_by else ""
        if c.needs_reader:
            decided = (decided + ", " if decided else "") + "needs a log reader"
        rows.append([_e(_check_label(c.check, c.name)), f'{_badge(c.outcome.value, c.outcome.value)}',
                     _e(c.tier.value), _e(decided), _e(c.evidence.summary)])
    return "<h4>Checks</h4>" + _table(["check", "outcome", "tier", "decided by", "summary"], rows, css="wide",
                                      widths=["20em", "7em", "7em", "11em", ""])


def _run_evidence(page: Page, t: TaskResult) -> list[str]:
    evidence: Mapping[str, Any] = t.evidence if isinstance(t.evidence, Mapping) else {}
    anchor = page.anchor(t)
    out = []
    failure = evidence.get("agent_failure")
    if isinstance(failure, Mapping):
        rows = [(k, _e(failure.get(k) or "")) for k in ("step", "awaited", "what")]
        out.append(f'<h4 id="{anchor}-failure">What the agent did instead</h4>' + _kv(rows))
        exit_ = failure.get("exit")
        if isinstance(exit_, Mapping):
            out.append(_processes(page, t, [exit_], f"{anchor}-failure-exit", "The process that ended the run"))
    processes = [p for p in evidence.get("processes") or () if isinstance(p, Mapping)]
    out.append(_processes(page, t, processes, f"{anchor}-processes", "The agent’s processes"))
    records = [r for r in evidence.get("records") or () if isinstance(r, Mapping)]
    out.append(_records(t, records, f"{anchor}-records"))
    contained = evidence.get("containment")
    if isinstance(contained, Mapping):
        out.append(_containment(page, t, contained, f"{anchor}-containment"))
    extra = [(k, _e(plain(evidence.get(k)))) for k in ("log_path", "log_error") if evidence.get(k)]
    if extra:
        out.append(_kv(extra))
    return out


def _containment(page: Page, t: TaskResult, contained: Mapping[str, Any], element_id: str) -> str:
    """Which containment held the run, and what was still alive after the agent and its tools ended."""
    outlived = [m for m in contained.get("outlived") or () if isinstance(m, Mapping)]
    head = (f'<h4 id="{element_id}">Containment: {_e(contained.get("kind") or "?")}</h4>'
            + (f"<p>{_e(contained['why'])}</p>" if contained.get("why") else ""))
    if not outlived:
        return head + "<p>Nothing outlived the run.</p>"
    ctx = Context.of(t)
    rows = [_fields_table(page, t, fields(m, ctx)) for m in outlived]
    return head + f"<p>Still alive after the agent and its tools were ended ({len(outlived)}):</p>" + "".join(rows)


def _processes(page: Page, t: TaskResult, processes: Sequence[Mapping[str, Any]], element_id: str,
               heading: str) -> str:
    if not processes:
        return f'<h4 id="{element_id}">{_e(heading)}</h4><p>None recorded.</p>'
    blocks = []
    for p in processes:
        pid = p.get("pid")
        code = (f"exit {p['returncode']}" if p.get("returncode") is not None
                else f"signal {p['signal']}" if p.get("signal") is not None else "still running")
        argv = " ".join(str(a) for a in p.get("argv") or ())
        who = page.ref_link(t, f"pid {pid}", f"pid {pid}") if pid is not None else "pid ?"
        lines = [f"<h5>{who} · {_e(p.get('role') or '')} · {_e(code)}</h5>",
                 f"<p>command line:</p><pre>{_e(argv or '(not recorded)')}</pre>"]
        for key, word in (("stdout_tail", "stdout (tail)"), ("stderr_tail", "stderr (tail)")):
            if p.get(key):
                lines.append(f"<p>{word}:</p><pre>{_e(p[key])}</pre>")
        blocks.append('<div class="member">' + "".join(lines) + "</div>")
    return f'<h4 id="{element_id}">{_e(heading)} ({len(processes)})</h4>' + "".join(blocks)


def _records(t: TaskResult, records: Sequence[Mapping[str, Any]], element_id: str) -> str:
    if not records:
        return f'<h4 id="{element_id}">The server’s records</h4><p>None recorded.</p>'
    keys = list(dict.fromkeys(k for r in records for k in r))
    rows = [[_e(plain(r.get(k))) for k in keys] for r in records]
    kinds = Counter(str(r.get("kind")) for r in records)
    outline = ", ".join(f"{n} {k}" for k, n in kinds.items())
    numeric = [i for i, k in enumerate(keys) if k in ("index", "request", "chunk", "status")]
    return (f'<details class="records" id="{element_id}"{" open" if _run_failed(t) else ""}>'
            f"<summary>The server’s records ({len(records)}: {_e(outline)})</summary>"
            + _table(keys, rows, numeric, css="wide", widths=[""] * len(keys)) + "</details>")


# --- failpoints and latencies ------------------------------------------------------------


def _failpoints(runs: Sequence[RunResult], boards: Sequence[Scoreboard]) -> list[str]:
    found = failpoints(runs, boards)
    rows = []
    for f in found:
        result = "caught" if f.caught else "missed"
        rows.append([_e(f.label), _e(f.failpoint), _e(", ".join(f.targets)), str(len(f.runs)),
                     f'<span class="{result}">{"caught" if f.caught else "SURVIVED"}</span>',
                     _e(", ".join(f.caught_by))])
    if not rows:
        return []
    caught = sum(f.caught for f in found)
    return [f'<h2 id="failpoints">Failpoints: {caught} of {len(rows)} caught</h2>',
            "<p>Each failpoint breaks the agent on purpose; it is caught when a mandatory check of one of its "
            "runs failed or stayed undecided, or the run could not complete.</p>",
            _table(["agent", "failpoint", "targets", "runs", "result", "caught by"], rows, [3], css="wide")]


def _latency_defs() -> str:
    items = "".join(f"<dt>{_e(info.id)} — {_e(info.title)}</dt><dd>{_e(info.span)}</dd>" for info in LATENCIES)
    return (f'<aside class="defs"><h3>What each latency measures</h3><dl>{items}</dl>'
            "<p>Percentiles are nearest-rank: every figure is a measured value.</p></aside>")


def _latencies(boards: Sequence[Scoreboard]) -> list[str]:
    out = ['<h2 id="latency">Latencies</h2>']
    adapters = list(dict.fromkeys(b.adapter for b in boards if b.samples))
    if not adapters:
        return out + ['<div class="with-defs"><div><p>No latency samples.</p></div>' + _latency_defs() + "</div>"]
    main = []
    for adapter in adapters:
        on_adapter = [b for b in boards if b.adapter == adapter and b.samples]
        rows = [
            [_e(b.label), _e(task), _e(f"{latency} {LATENCY_INFO[latency].title}" if latency in LATENCY_INFO
                                       else latency), str(s.n),
             *(_e(format_ns(v)) for v in (s.p50, s.p90, s.p99, s.max))]
            for b in on_adapter for (task, latency), s in b.summaries().items()
        ]
        main.append(f'<h3 id="latency-{_e(adapter)}">Adapter {_e(adapter)}</h3>')
        main.append(_table(["agent", "task", "latency", "n", "p50", "p90", "p99", "max"], rows, range(3, 8),
                           css="wide"))
        pooled = {b.label: b.pooled() for b in on_adapter}
        for latency in sorted({lat for p in pooled.values() for lat in p}, key=latency_order):
            series = [(label, p[latency]) for label, p in pooled.items() if latency in p]
            colors = {label: PALETTE[k % len(PALETTE)] for k, (label, _) in enumerate(series)}
            large = [(label, v) for label, v in series if len(v) >= MIN_PLOT_N]
            small = [(label, v) for label, v in series if len(v) < MIN_PLOT_N]
            plots = [histogram(values, f"{latency} · {label} · {adapter}", colors[label]) for label, values in large]
            if large:
                plots.append(percentile_plot(large, f"{latency} percentiles · {adapter}"))
            if small:
                plots.append(dot_plot(small, f"{latency} · every value · {adapter}"))
            main.append(f'<div class="plots" id="plots-{_e(adapter)}-{_e(latency)}">' + "\n".join(plots) + "</div>")
    return out + ['<div class="with-defs"><div>' + "\n".join(main) + "</div>" + _latency_defs() + "</div>"]


def _files(runs: Sequence[RunResult]) -> list[str]:
    keys = ("agent", "agent_version", "profile", "stopbench_version", "host", "python", "started", "ended",
            "adapters", "tasks", "repeat", "shard", "incomplete", "argv")
    present = [k for k in keys if any(r.run.get(k) is not None for r in runs)]
    rows = [[f"<code>{_e(k)}</code>", *(_e(plain(r.run.get(k))) for r in runs)] for k in present]
    return ['<h2 id="files">Results files</h2>',
            _table(["", *(f"file {i}" for i in range(1, len(runs) + 1))], rows, css="wide",
                   widths=["12em", *([""] * len(runs))])]
