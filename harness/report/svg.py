"""Inline SVG plots of latency samples: a histogram and a percentile (quantile) plot.

Hand-written SVG rather than a plotting library: the HTML report must open anywhere with
no network and no scripts, and the figures are simple. A scale turns logarithmic when the
values span two decades or more (an abort usually takes microseconds, a slow one seconds),
which the axis label says. Bars and markers carry ``data-*`` attributes with their numbers,
so tests (and curious readers) can check a plot against the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Sequence

from harness.report.latency import PERCENTILES, format_ns, percentile

WIDTH, HEIGHT = 360, 200
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 26, 34
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
LOG_SPAN = 100  # hi / lo at which a scale turns logarithmic
MAX_STEPS = 400  # a percentile curve draws at most this many ranks (the plot is 284 px wide)


@dataclass(frozen=True)
class Scale:
    lo: float
    hi: float
    log: bool

    @classmethod
    def of(cls, values: Sequence[float]) -> "Scale":
        lo, hi = min(values), max(values)
        if lo > 0 and hi / lo >= LOG_SPAN:
            return cls(math.log10(lo), math.log10(hi), True)
        if lo == hi:
            pad = abs(lo) * 0.1 or 1.0
            lo, hi = lo - pad, hi + pad
        return cls(lo, hi, False)

    def frac(self, value: float) -> float:
        v = math.log10(value) if self.log else value
        return (v - self.lo) / (self.hi - self.lo) if self.hi > self.lo else 0.5

    def at(self, frac: float) -> float:
        v = self.lo + frac * (self.hi - self.lo)
        return 10**v if self.log else v


def _f(x: float) -> str:
    return f"{x:.1f}"


def _open(title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text class="plot-title" x="{LEFT}" y="16">{escape(title)}</text>',
    ]


def _axes(x_label: str, x_lo: str, x_hi: str, y_lo: str, y_hi: str) -> list[str]:
    x0, y0, x1, y1 = LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, TOP
    return [
        f'<line class="axis" x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}"/>',
        f'<line class="axis" x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}"/>',
        f'<text class="tick" x="{x0}" y="{y0 + 14}">{escape(x_lo)}</text>',
        *([f'<text class="tick" x="{x1}" y="{y0 + 14}" text-anchor="end">{escape(x_hi)}</text>'] if x_hi else []),
        f'<text class="label" x="{(x0 + x1) / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle">{escape(x_label)}</text>',
        f'<text class="tick" x="{x0 - 4}" y="{y0}" text-anchor="end">{escape(y_lo)}</text>',
        f'<text class="tick" x="{x0 - 4}" y="{y1 + 8}" text-anchor="end">{escape(y_hi)}</text>',
    ]


def histogram(values: Sequence[int], title: str, color: str = PALETTE[0]) -> str:
    """Counts of ``values`` (ns) in equal-width bins on a linear or log scale."""
    if not values:
        raise ValueError("histogram of no values")
    scale = Scale.of(values)
    bins = min(24, max(4, math.ceil(math.sqrt(len(values)))))
    counts = [0] * bins
    for v in values:
        counts[min(max(int(scale.frac(v) * bins), 0), bins - 1)] += 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    bar_w, top = plot_w / bins, max(counts)
    parts = _open(title)
    for i, count in enumerate(counts):
        if not count:
            continue
        h = plot_h * count / top
        lo, hi = scale.at(i / bins), scale.at((i + 1) / bins)
        parts.append(
            f'<rect class="bar" x="{_f(LEFT + i * bar_w)}" y="{_f(HEIGHT - BOTTOM - h)}" width="{_f(bar_w - 1)}" '
            f'height="{_f(h)}" fill="{color}" data-count="{count}" data-lo-ns="{lo:.0f}" data-hi-ns="{hi:.0f}">'
            f"<title>{count} × {escape(format_ns(round(lo)))} – {escape(format_ns(round(hi)))}</title></rect>"
        )
    parts += _axes(f"latency{' (log scale)' if scale.log else ''}, n = {len(values)}", format_ns(min(values)), format_ns(max(values)),
                   "0", str(top))
    parts.append("</svg>")
    return "\n".join(parts)


def _ranks(n: int) -> list[int]:
    """All ranks for a small sample; for a large one the minimum and evenly spaced ranks up
    to the maximum, so a run with 100,000 samples still makes a small file."""
    if n <= MAX_STEPS:
        return list(range(n))
    return sorted({0} | {math.ceil(k * n / MAX_STEPS) - 1 for k in range(1, MAX_STEPS + 1)})


def percentile_plot(series: Sequence[tuple[str, Sequence[int]]], title: str) -> str:
    """Each series' sorted values against their percentile, p50/p90/p99 marked; shared y scale."""
    series = [(name, sorted(values)) for name, values in series if values]
    if not series:
        raise ValueError("percentile plot of no values")
    scale = Scale.of([v for _, values in series for v in values])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(p: float) -> float:
        return LEFT + plot_w * p / 100

    def y(v: float) -> float:
        return HEIGHT - BOTTOM - plot_h * scale.frac(v)

    parts = _open(title)
    for k, (name, values) in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        n = len(values)
        points = []
        for i in _ranks(n):  # nearest rank: value i covers percentiles (i/n, (i+1)/n]
            points += [f"{_f(x(100 * i / n))},{_f(y(values[i]))}", f"{_f(x(100 * (i + 1) / n))},{_f(y(values[i]))}"]
        parts.append(f'<polyline class="series" fill="none" stroke="{color}" stroke-width="1.5" '
                     f'data-series="{escape(name)}" data-n="{n}" points="{" ".join(points)}"/>')
        for p in PERCENTILES:
            v = percentile(values, p)
            parts.append(f'<circle class="marker" cx="{_f(x(p))}" cy="{_f(y(v))}" r="3" fill="{color}" '
                         f'data-series="{escape(name)}" data-percentile="{p}" data-value-ns="{v}">'
                         f"<title>{escape(name)} p{p} = {escape(format_ns(v))} (n = {n})</title></circle>")
        parts.append(f'<text class="legend" x="{LEFT + 6}" y="{TOP + 12 + 12 * k}" style="fill: {color}">'
                     f"{escape(name)} (n = {n})</text>")
    lo, hi = scale.at(0), scale.at(1)
    x_label = "percentile" + (" (latency on a log scale)" if scale.log else "")
    for p in PERCENTILES:  # dashed guides, labelled under the axis, where the markers sit
        parts.append(f'<line class="guide" x1="{_f(x(p))}" y1="{HEIGHT - BOTTOM}" x2="{_f(x(p))}" y2="{TOP}" '
                     f'stroke="#bbb" stroke-dasharray="2,3"/>')
        parts.append(f'<text class="tick" x="{_f(x(p))}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">p{p}</text>')
    parts += _axes(x_label, "0", "", format_ns(round(lo)), format_ns(round(hi)))
    parts.append("</svg>")
    return "\n".join(parts)
