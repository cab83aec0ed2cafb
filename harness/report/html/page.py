"""The page's skeleton: its head and style, the verdict and links at the top, the results files
at the bottom, and every section in reading order between them."""

from __future__ import annotations

from collections.abc import Sequence

from harness.model import RunResult
from harness.report.aggregate import (
    NOTHING_RAN,
    VERDICT_MEANING,
    Scoreboard,
    headline,
    is_leaderboard,
    report_level,
    scoreboards,
    verdict,
)
from harness.report.html.boards import (
    failpoints_section,
    invariants_section,
    legend_section,
    matrix_section,
    scoreboard_section,
)
from harness.report.html.findings import findings_section
from harness.report.html.latencies import latencies_section
from harness.report.html.markup import Page, data_table, esc, level_class
from harness.report.html.runs import runs_section
from harness.report.text import plain, xml_safe

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
table.standings { font-size: 12.5px; } table.standings .badge { font-size: 11px; }
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
.consequence { background: #fbeceb; color: #555; } .lvl-conformant-non-strict { background: #e8f2d8; }
.holds { background: #e3f4e1; } .broken { background: #f9d6d5; }
.skipped, .not-run { background: #eee; color: #666; } .not-exercised { background: #e8e4f6; }
.errored, .profile-problem { background: #f3c9b8; } .missed { background: #f9d6d5; } .caught { background: #e3f4e1; }
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


def render_html(runs: Sequence[RunResult]) -> str:
    boards = scoreboards(runs)
    page = Page(boards)
    ranked = is_leaderboard(boards)
    title = "stopbench leaderboard" if ranked else "stopbench report"
    body = [
        *_header(runs, boards, title),
        *invariants_section(boards),
        *scoreboard_section(boards),
        *matrix_section(page),
        *findings_section(page),
        *legend_section(),
        *runs_section(page),
        *failpoints_section(runs, boards),
        *latencies_section(boards),
        *_files(runs),
    ]
    return xml_safe(
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _header(runs: Sequence[RunResult], boards: Sequence[Scoreboard], title: str) -> list[str]:
    level = report_level(runs)
    text = verdict(runs)
    css = "lvl-board" if is_leaderboard(boards) else level_class(level.value if level else NOTHING_RAN)
    out = [f"<header>\n<h1>{esc(title)}</h1>", f'<p class="verdict {css}">{esc(headline(runs, boards))}</p>']
    if is_leaderboard(boards):
        out.append('<p class="meaning">Each agent’s verdict is on its row of the leaderboard.</p>')
    elif level is not None:
        out.append(f'<p class="meaning"><strong>{esc(level.value.capitalize())}</strong>: '
                   f"{esc(VERDICT_MEANING[level])}.</p>")
    elif text:
        out.append(f'<p class="meaning">{esc(text.capitalize())}: no task run counted towards a verdict.</p>')
    links = [*([("invariants", "Invariants")] if is_leaderboard(boards) else []),
             ("scoreboard", "Leaderboard" if is_leaderboard(boards) else "Scoreboard"),
             ("checks", "Checks"), ("findings", "What went wrong"), ("legend", "What the checks mean"),
             ("runs", "Task runs"), ("latency", "Latencies"), ("files", "Results files")]
    out.append("<nav>" + "".join(f'<a href="#{i}">{esc(t)}</a>' for i, t in links) + "</nav>\n</header>")
    return out


def _files(runs: Sequence[RunResult]) -> list[str]:
    keys = ("agent", "agent_version", "agent_version_reported", "profile", "stopbench_version", "host", "python",
            "started", "ended", "adapters", "tasks", "repeat", "shard", "incomplete", "argv")
    present = [k for k in keys if any(r.run.get(k) is not None for r in runs)]
    rows = [[f"<code>{esc(k)}</code>", *(esc(plain(r.run.get(k))) for r in runs)] for k in present]
    return ['<h2 id="files">Results files</h2>',
            data_table(["", *(f"file {i}" for i in range(1, len(runs) + 1))], rows, css="wide",
                       widths=["12em", *([""] * len(runs))])]
