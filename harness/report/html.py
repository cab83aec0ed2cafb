"""The self-contained HTML report: one file, inline CSS and SVG, no script, no network.

Sections: the runs compared; the scoreboard (a ranked leaderboard when several agents are
in the report); a task × check matrix per agent and adapter (hover a cell for each repeat's
evidence summary); every failing or undecided check with its full evidence, grouped by kind
(the requests the fake server received, log lines, processes…); failpoints caught or survived; and per
adapter, the latency percentiles with a histogram per agent and a percentile plot comparing
agents. Every piece of text from the results is escaped.
"""

from __future__ import annotations

import re
from html import escape
from typing import Iterable, Sequence

from harness.report.latency import format_ns
from harness.model import RunResult
from harness.report.aggregate import (
    Failure,
    Scoreboard,
    failpoints,
    headline,
    is_leaderboard,
    latency_ids,
    leaderboard,
    scoreboards,
    verdict,
)
from harness.report.svg import PALETTE, histogram, percentile_plot
from harness.report.text import item_label, item_text, plain, xml_safe

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { margin-bottom: .2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; }
th, td { border: 1px solid #ccc; padding: .25em .55em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict { font-size: 1.2em; font-weight: bold; }
.pass { background: #e3f4e1; } .fail { background: #f9d6d5; } .unknown { background: #fdf0c8; }
.skipped { background: #eee; color: #777; } .missed { background: #f9d6d5; } .caught { background: #e3f4e1; }
details { border: 1px solid #ddd; border-radius: 4px; margin: .5em 0; padding: .3em .7em; }
summary { cursor: pointer; font-weight: 600; }
pre { background: #f6f6f6; padding: .5em; overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; }
svg { background: #fff; border: 1px solid #ddd; }
svg .axis { stroke: #444; } svg text { font: 10px sans-serif; fill: #333; }
svg .plot-title { font-weight: bold; font-size: 11px; } svg .legend { font-size: 10px; }
"""


def render_html(runs: Sequence[RunResult]) -> str:
    boards = scoreboards(runs)
    ranked = is_leaderboard(boards)
    title = "stopbench leaderboard" if ranked else "stopbench report"
    css_class = "" if ranked else {"conformant": "pass", "NOT conformant": "fail"}.get(verdict(runs), "")
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="verdict {css_class}">{escape(headline(runs, boards))}</p>',
        *_runs(runs),
        *_scoreboard(boards),
        *_matrices(boards),
        *_failures(boards),
        *_failpoints(runs, boards),
        *_latencies(boards),
    ]
    return xml_safe(
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = ()) -> str:
    numeric = set(numeric)
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "\n".join(
        "<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table>\n<tr>{head}</tr>\n{body}\n</table>"


def _runs(runs: Sequence[RunResult]) -> list[str]:
    keys = ("agent", "agent_version", "profile", "stopbench_version", "host", "python", "started", "ended",
            "adapters", "repeat", "shard")
    rows = [[str(i)] + [escape(plain(r.run.get(k))) for k in keys] for i, r in enumerate(runs, 1)]
    return ['<h2 id="runs">Runs</h2>', _table(["file", *keys], rows)]


def _scoreboard(boards: Sequence[Scoreboard]) -> list[str]:
    ranked = is_leaderboard(boards)
    latencies = latency_ids(boards)
    rows = []
    for rank, b in enumerate(leaderboard(boards) if ranked else boards, 1):
        passed, decided = b.mandatory
        o = b.outcomes
        cls = "pass" if b.verdict == "conformant" else "fail"
        row = [escape(b.label), escape(b.version), escape(b.adapter), f'<span class="{cls}">{b.verdict}</span>',
               f"{b.conformant}/{len(b.ran)}", f"{passed}/{decided}",
               str(o["pass"]), str(o["fail"]), str(o["unknown"]), str(o["skipped"]),
               *(escape(format_ns(m)) if (m := b.median(latency)) is not None else "-" for latency in latencies)]
        rows.append([str(rank), *row] if ranked else row)
    header = ["agent", "version", "adapter", "verdict", "conformant tasks", "mandatory passed", "pass", "fail",
              "unknown", "skipped", *(f"{latency} p50" for latency in latencies)]
    offset = 1 if ranked else 0
    return [f'<h2 id="scoreboard">{"Leaderboard" if ranked else "Scoreboard"}</h2>',
            _table(["#", *header] if ranked else header, rows, range(offset + 4, len(header) + offset))]


def _check_order(check: str) -> tuple[str, int, str]:
    m = re.fullmatch(r"([A-Za-z]+)(\d+)(.*)", check)
    return (m.group(1), int(m.group(2)), m.group(3)) if m else (check, 0, "")


def _matrices(boards: Sequence[Scoreboard]) -> list[str]:
    out = ['<h2 id="checks">Checks</h2>']
    for b in boards:
        rows = b.rows
        checks = sorted({r.check for r in rows}, key=_check_order)
        tiers = {r.check: r.tier for r in rows}
        tasks = list(dict.fromkeys(r.task for r in rows))
        cells = {(r.task, r.check): r for r in rows}
        lines = []
        for task in tasks:
            line = [escape(task)]
            for check in checks:
                row = cells.get((task, check))
                if row is None:
                    line.append("")
                    continue
                hover = "\n".join(f"#{rep}: {res.outcome.value}: {res.evidence.summary}" for rep, res in row.results)
                text = f"{row.status} {row.tally}".strip()
                line.append(f'<span class="{row.status}" title="{escape(hover)}">{text}</span>')
            lines.append(line)
        out.append(f"<h3>{escape(b.label)} · {escape(b.adapter)}</h3>")
        header = [c if tiers[c] == "mandatory" else f"{c} ({tiers[c]})" for c in checks]
        out.append(_table(["task", *header], lines) if lines else "<p>No checks ran.</p>")
    return out


def _failures(boards: Sequence[Scoreboard]) -> list[str]:
    found = [(b, f) for b in boards for f in b.failures]
    out = ['<h2 id="failures">Failures and undecided checks</h2>']
    if not found:
        return out + ["<p>None.</p>"]
    opened: set[tuple] = set()
    for b, f in found:  # the first repeat of each failing check is open, later ones folded
        key = (b.label, b.adapter, f.task.task, f.result.check if f.result else None)
        out.append(_failure(b, f, key not in opened))
        opened.add(key)
    return out


def _failure(board: Scoreboard, failure: Failure, is_open: bool) -> str:
    head = f"{board.label} · {board.adapter} · {failure.title}"
    details = '<details open class="failure">' if is_open else '<details class="failure">'
    if failure.result is None:
        return (f'{details}<summary class="fail">{escape(head)} — harness error</summary>'
                f"<pre>{escape(failure.task.error or '')}</pre></details>")
    r = failure.result
    groups: dict[str, list[str]] = {}
    for item in r.evidence.items:
        groups.setdefault(item_label(item), []).append(f"<pre>{escape(item_text(item))}</pre>")
    evidence = "".join(f"<h4>{escape(label)} ({len(items)})</h4>{''.join(items)}" for label, items in groups.items())
    return (f'{details}<summary class="{r.outcome.value}">{escape(head)} — '
            f"{escape(r.outcome.value)} ({escape(r.tier.value)})</summary>"
            f"<p>{escape(r.evidence.summary)}</p>{evidence}</details>")


def _failpoints(runs: Sequence[RunResult], boards: Sequence[Scoreboard]) -> list[str]:
    found = failpoints(runs, boards)
    rows = []
    for f in found:
        result = "caught" if f.caught else "missed"
        rows.append([escape(f.label), escape(f.failpoint), escape(", ".join(f.targets)), str(len(f.runs)),
                     f'<span class="{result}">{"caught" if f.caught else "SURVIVED"}</span>',
                     escape(", ".join(f.caught_by))])
    if not rows:
        return []
    caught = sum(f.caught for f in found)
    return [f'<h2 id="failpoints">Failpoints: {caught} of {len(rows)} caught</h2>',
            _table(["agent", "failpoint", "targets", "runs", "result", "caught by"], rows, [3])]


def _latencies(boards: Sequence[Scoreboard]) -> list[str]:
    out = ['<h2 id="latency">Latencies</h2>']
    adapters = list(dict.fromkeys(b.adapter for b in boards if b.samples))
    if not adapters:
        return out + ["<p>No latency samples.</p>"]
    for adapter in adapters:
        on_adapter = [b for b in boards if b.adapter == adapter and b.samples]
        rows = [
            [escape(b.label), escape(task), escape(latency), str(s.n),
             *(escape(format_ns(v)) for v in (s.p50, s.p90, s.p99, s.max))]
            for b in on_adapter for (task, latency), s in b.summaries().items()
        ]
        out.append(f'<h3 id="latency-{escape(adapter)}">Adapter {escape(adapter)}</h3>')
        out.append(_table(["agent", "task", "latency", "n", "p50", "p90", "p99", "max"], rows, range(3, 8)))
        pooled = {b.label: b.pooled() for b in on_adapter}
        for latency in sorted({lat for p in pooled.values() for lat in p}):
            series = [(label, p[latency]) for label, p in pooled.items() if latency in p]
            plots = [histogram(values, f"{latency} · {label} · {adapter}", PALETTE[k % len(PALETTE)])
                     for k, (label, values) in enumerate(series)]
            plots.append(percentile_plot(series, f"{latency} percentiles · {adapter}"))
            out.append(f'<div class="plots" id="plots-{escape(adapter)}-{escape(latency)}">'
                       + "\n".join(plots) + "</div>")
    return out
