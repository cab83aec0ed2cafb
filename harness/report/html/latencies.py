"""Latencies per adapter: a table of percentiles per agent and task, those measured defined beside it,
and plots only where a sample has five values or more (every value as a dot otherwise)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.contract import LATENCIES
from harness.report.aggregate import Scoreboard, latency_order, scoreboard_latencies
from harness.report.html.markup import data_table, esc
from harness.report.latency import ERROR_HEADER, ERROR_NOTE, format_ns
from harness.report.svg import MIN_PLOT_N, PALETTE, dot_plot, histogram, percentile_plot

LATENCY_INFO = {info.id: info for info in LATENCIES}


def _latency_defs(measured: Sequence[str]) -> str:
    """What each latency the page shows measures (those not measured are not listed)."""
    items = "".join(f"<dt>{esc(info.id)} — {esc(info.title)}</dt><dd>{esc(info.span)}</dd>"
                    for info in LATENCIES if info.id in measured)
    return (f'<aside class="defs"><h3>What each latency measures</h3><dl>{items}</dl>'
            "<p>Percentiles are nearest-rank: every figure is a measured value.</p></aside>")


def latencies_section(boards: Sequence[Scoreboard]) -> list[str]:
    out = ['<h2 id="latency">Latencies</h2>']
    adapters = list(dict.fromkeys(b.adapter for b in boards if b.samples))
    if not adapters:
        return out + ["<p>No latency samples.</p>"]
    main = []
    shown_error = any(b.errors for b in boards)  # the stopwatch's error beside each figure, where it was measured
    for adapter in adapters:
        on_adapter = [b for b in boards if b.adapter == adapter and b.samples]
        rows = [
            [esc(b.label), esc(task), esc(f"{latency} {LATENCY_INFO[latency].title}" if latency in LATENCY_INFO
                                          else latency), str(s.n),
             *(esc(format_ns(v)) for v in (s.p50, s.p90, s.p99, s.max)),
             *([esc(error.text()) if (error := b.errors.get((task, latency))) else "-"] if shown_error else [])]
            for b in on_adapter for (task, latency), s in b.summaries().items()
        ]
        main.append(f'<h3 id="latency-{esc(adapter)}">Adapter {esc(adapter)}</h3>')
        main.append(data_table(["agent", "task", "latency", "n", "p50", "p90", "p99", "max",
                                *([ERROR_HEADER] if shown_error else [])], rows, range(3, 8), css="wide"))
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
            main.append(f'<div class="plots" id="plots-{esc(adapter)}-{esc(latency)}">' + "\n".join(plots) + "</div>")
    if shown_error:
        main.insert(0, f"<p>{esc(ERROR_NOTE)}</p>")
    return out + ['<div class="with-defs"><div>' + "\n".join(main) + "</div>"
                  + _latency_defs(scoreboard_latencies(boards)) + "</div>"]
