"""Inline SVG figures: a task run's timeline, and latency plots (a histogram and a percentile
plot for a sample of ``MIN_PLOT_N`` or more, a dot plot of every value for a smaller one).

Hand-written SVG rather than a plotting library: the HTML report must open anywhere with
no network and no scripts, and the figures are simple. A latency scale turns logarithmic when
the values span two decades or more (an abort usually takes microseconds, a slow one seconds),
which the axis label says. Bars, markers and timeline marks carry ``data-*`` attributes with
their numbers, so tests (and curious readers) can check a figure against the data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from harness.model import TimelineMark
from harness.report.latency import PERCENTILES, format_ns, format_on_axis, percentile

WIDTH, HEIGHT = 360, 200
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 26, 34
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
LOG_SPAN = 100  # hi / lo at which a scale turns logarithmic
MAX_STEPS = 400  # a percentile curve draws at most this many ranks (the plot is 284 px wide)
MIN_PLOT_N = 5  # below this many values, a distribution is shown as its dots, not as a histogram


@dataclass(frozen=True)
class Scale:
    lo: float
    hi: float
    log: bool

    @classmethod
    def of(cls, values: Sequence[float]) -> Scale:
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


def _open(title: str, height: int = HEIGHT) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}">',
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
    lo_text, hi_text = format_on_axis([min(values), max(values)])
    parts += _axes(f"latency{' (log scale)' if scale.log else ''}, n = {len(values)}", lo_text, hi_text, "0",
                   str(top))
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
    lo_text, hi_text = format_on_axis([lo, hi])
    parts += _axes(x_label, "0", "", lo_text, hi_text)
    parts.append("</svg>")
    return "\n".join(parts)


def dot_plot(series: Sequence[tuple[str, Sequence[int]]], title: str) -> str:
    """Every value of each (small) series as a dot on one shared latency axis, a row a series:
    a sample of fewer than ``MIN_PLOT_N`` values has no shape worth a histogram."""
    series = [(name, sorted(values)) for name, values in series if values]
    if not series:
        raise ValueError("dot plot of no values")
    scale = Scale.of([v for _, values in series for v in values])
    row_h = 20
    height = TOP + row_h * len(series) + BOTTOM
    plot_w = WIDTH - LEFT - RIGHT
    parts = _open(title, height)
    for k, (name, values) in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        y = TOP + row_h * k + row_h / 2
        parts.append(f'<text class="legend" x="{LEFT - 4}" y="{_f(y + 3)}" text-anchor="end" '
                     f'style="fill: {color}">{escape(_clip(name, 10))}</text>')
        parts.append(f'<line class="guide" x1="{LEFT}" y1="{_f(y)}" x2="{WIDTH - RIGHT}" y2="{_f(y)}" stroke="#eee"/>')
        for v in values:
            cx = LEFT + plot_w * scale.frac(v)
            parts.append(f'<circle class="dot" cx="{_f(cx)}" cy="{_f(y)}" r="4" fill="{color}" fill-opacity="0.7" '
                         f'data-series="{escape(name)}" data-value-ns="{v}">'
                         f"<title>{escape(name)}: {escape(format_ns(v))}</title></circle>")
    y0 = height - BOTTOM
    lo, hi = scale.at(0), scale.at(1)
    n = sum(len(v) for _, v in series)
    lo_text, hi_text = format_on_axis([lo, hi])
    parts += [
        f'<line class="axis" x1="{LEFT}" y1="{y0}" x2="{WIDTH - RIGHT}" y2="{y0}"/>',
        f'<text class="tick" x="{LEFT}" y="{y0 + 14}">{escape(lo_text)}</text>',
        f'<text class="tick" x="{WIDTH - RIGHT}" y="{y0 + 14}" text-anchor="end">{escape(hi_text)}</text>',
        f'<text class="label" x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{height - 4}" text-anchor="middle">'
        f"every value{' (log scale)' if scale.log else ''}, n = {n}: too few for a distribution</text>",
        "</svg>",
    ]
    return "\n".join(parts)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------
# A task run's timeline

TL_WIDTH = 1000
TL_LABEL = 120  # lane names
TL_RIGHT = 14
TL_TOP = 34  # the row where Stops, kills and restarts are named
TL_LANE = 24
TL_AXIS = 34
# Lane order: the harness's inputs, the model's requests, the agent's processes, then each window.
LANE_ORDER = ("harness", "model", "agent")
SPAN_FILL = {"request": "#9ecae1", "process": "#b7e1b0", "window": "#fdd0a2"}
ACROSS = {"stop": "#d62728", "kill": "#7b1010", "restart": "#1f5fbf"}  # drawn across every lane
ACROSS_WORD = {"stop": "Stop", "kill": "SIGKILL", "restart": "restart"}
SPAN_KINDS = ("request", "process", "window")


def lanes_of(marks: Sequence[TimelineMark]) -> list[str]:
    found = list(dict.fromkeys(m.lane for m in marks))
    known = [lane for lane in LANE_ORDER if lane in found]
    windows = [lane for lane in found if lane.startswith("window ")]
    return known + windows + [lane for lane in found if lane not in known and lane not in windows]


def ref_slug(ref: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", ref.lower()).strip("-") or "mark"


def _id_holders(marks: Sequence[TimelineMark], prefix: str) -> dict[int, str]:
    """Mark index -> element id: for each ref, its span (a request's stream, a process's
    life, a window) where there is one, else its first mark."""
    holders: dict[int, str] = {}
    seen: set[str] = set()
    used: set[str] = set()
    for i in sorted(range(len(marks)), key=lambda i: (marks[i].kind not in SPAN_KINDS, i)):
        ref = marks[i].ref
        if not ref or ref in seen:
            continue
        seen.add(ref)
        element_id = f"{prefix}-{ref_slug(ref)}"
        while element_id in used:
            element_id += "-x"
        used.add(element_id)
        holders[i] = element_id
    return holders


def timeline_ids(marks: Sequence[TimelineMark], prefix: str) -> dict[str, str]:
    """ref -> the id of the timeline element evidence with that ref links to."""
    return {marks[i].ref or "": element_id for i, element_id in _id_holders(marks, prefix).items()}


def ms_text(ms: float) -> str:
    if abs(ms) >= 10_000:
        return f"{ms / 1000:.1f} s"
    if abs(ms) >= 1000:
        return f"{ms / 1000:.2f} s"
    return f"{ms:.0f} ms" if abs(ms) >= 100 else f"{ms:.1f} ms"


def _tick_step(span: float) -> float:
    raw = span / 8
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next(k * power for k in (1, 2, 5, 10) if k * power >= raw)


def timeline(marks: Sequence[TimelineMark], title: str, prefix: str) -> str:
    """One lane per actor on one axis in ms from the task's start; spans for requests,
    processes and windows (open-ended when they never ended), Stops, kills and restarts
    across every lane, settlements, chunks and inputs as points. Each mark is a ``<g>`` with
    its numbers in ``data-*`` attributes and its label as a tooltip; the marks evidence
    points at have the ids of ``timeline_ids``."""
    if not marks:
        raise ValueError("timeline of no marks")
    lanes = lanes_of(marks)
    holders = _id_holders(marks, prefix)
    times = [m.at_ms for m in marks] + [m.end_ms for m in marks if m.end_ms is not None]
    t0, t1 = min(0.0, min(times)), max(times)
    t1 = t1 + max((t1 - t0) * 0.03, 1.0)
    x0, x1 = TL_LABEL, TL_WIDTH - TL_RIGHT
    top = TL_TOP if any(m.kind in ACROSS for m in marks) else 8  # room to name Stops, kills and restarts
    height = top + TL_LANE * len(lanes) + TL_AXIS
    bottom = top + TL_LANE * len(lanes)

    def x(t: float) -> float:
        return x0 + (x1 - x0) * (t - t0) / (t1 - t0)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="100%" viewBox="0 0 {TL_WIDTH} {height}" '
        f'role="img" aria-label="{escape(title)}" data-t0-ms="{t0:g}" data-t1-ms="{t1:g}" data-x0="{x0}" '
        f'data-x1="{x1}">',
        f"<title>{escape(title)}</title>",
    ]
    for i, lane in enumerate(lanes):
        y = top + TL_LANE * i
        parts.append(f'<rect class="lane" x="0" y="{y}" width="{TL_WIDTH}" height="{TL_LANE}" '
                     f'fill="{"#f7f7f7" if i % 2 == 0 else "#ffffff"}"/>')
        parts.append(f'<text class="lane-name" x="6" y="{y + 16}">{escape(_clip(lane, 20))}</text>')
    step = _tick_step(t1 - t0)
    unit, per_ms = ("s", 1000.0) if step >= 1000 else ("ms", 1.0)  # one unit for every tick of the axis
    for k in range(math.ceil(t0 / step), math.floor(t1 / step) + 1):
        tick = k * step
        parts.append(f'<line class="grid" x1="{_f(x(tick))}" y1="{top}" x2="{_f(x(tick))}" y2="{bottom}" '
                     f'stroke="#e3e3e3"/>')
        parts.append(f'<text class="tick" x="{_f(x(tick))}" y="{bottom + 14}" text-anchor="middle">'
                     f"{round(tick / per_ms, 6):g} {unit}</text>")
    parts.append(f'<line class="axis" x1="{x0}" y1="{bottom}" x2="{x1}" y2="{bottom}"/>')
    parts.append(f'<text class="label" x="{(x0 + x1) / 2:.0f}" y="{height - 4}" text-anchor="middle">'
                 f"{unit} from the task's start</text>")
    label_ends = [-1e9, -1e9]  # the annotation row holds two staggered lines of names
    drawing_order = sorted(range(len(marks)), key=lambda i: (marks[i].kind in ACROSS, marks[i].at_ms, i))
    for i in drawing_order:  # lines across the lanes drawn last, on top
        m = marks[i]
        lane_y = top + TL_LANE * lanes.index(m.lane)
        element_id = holders.get(i)
        attrs = (f' class="mark k-{ref_slug(m.kind)}" data-lane="{escape(m.lane)}" data-kind="{escape(m.kind)}" '
                 f'data-at-ms="{_ms(m.at_ms)}"' + (f' data-end-ms="{_ms(m.end_ms)}"' if m.end_ms is not None else "")
                 + (f' data-ref="{escape(m.ref)}"' if m.ref else "") + (f' id="{element_id}"' if element_id else ""))
        when = f"{ms_text(m.at_ms)}" + (f" → {ms_text(m.end_ms)}" if m.end_ms is not None else "")
        shapes = _mark_shapes(m, lane_y, x, x1, top, bottom)
        if m.kind in ACROSS:
            word = ACROSS_WORD[m.kind]
            level = 0 if label_ends[0] < x(m.at_ms) else 1 if label_ends[1] < x(m.at_ms) else 0
            label_ends[level] = x(m.at_ms) + 7 * len(word) + 6
            shapes.append(f'<text class="annotation" x="{_f(x(m.at_ms) + 2)}" y="{12 + 13 * level}" '
                          f'style="fill: {ACROSS[m.kind]}">{word}</text>')
        parts.append(f"<g{attrs}><title>{escape(m.label)} — {escape(when)}</title>{''.join(shapes)}</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def _ms(value: float) -> str:
    """A mark's time as the results hold it (ms, to the µs)."""
    return repr(round(float(value), 3))


def _mark_shapes(m: TimelineMark, lane_y: float, x, right: float, top: float, bottom: float) -> list[str]:
    at = x(m.at_ms)
    mid = lane_y + TL_LANE / 2
    if m.kind in ACROSS:
        color = ACROSS[m.kind]
        dash = ' stroke-dasharray="4,2"' if m.kind == "stop" else ""
        return [f'<line x1="{_f(at)}" y1="{top - 4}" x2="{_f(at)}" y2="{bottom}" stroke="{color}" '
                f'stroke-width="1.5"{dash}/>',
                f'<path d="M{_f(at - 5)},{_f(mid - 6)} L{_f(at + 5)},{_f(mid - 6)} L{_f(at)},{_f(mid + 3)} Z" '
                f'fill="{color}"/>']
    if m.end_ms is not None or m.kind in SPAN_KINDS:
        end = x(m.end_ms) if m.end_ms is not None else right
        width = max(end - at, 2.0)
        fill = SPAN_FILL.get(m.kind, "#d9d9d9")
        open_end = m.end_ms is None
        shapes = [f'<rect x="{_f(at)}" y="{_f(lane_y + 5)}" width="{_f(width)}" height="{TL_LANE - 10}" '
                  f'fill="{fill}" stroke="{"#b22" if open_end else "#777"}"'
                  + (' stroke-dasharray="3,2"' if open_end else "") + "/>"]
        if not open_end and m.kind == "process":  # the exit
            shapes.append(f'<line x1="{_f(end)}" y1="{_f(lane_y + 2)}" x2="{_f(end)}" y2="{_f(lane_y + TL_LANE - 2)}" '
                          f'stroke="#222" stroke-width="2"/>')
        text = m.label if not open_end else f"{m.label} — never ended"
        fits = int(width / 5.6)
        if fits >= 6:
            shapes.append(f'<text class="span-label" x="{_f(at + 3)}" y="{_f(mid + 3.5)}">'
                          f"{escape(_clip(text, fits))}</text>")
        return shapes
    if m.kind == "chunk":
        return [f'<line x1="{_f(at)}" y1="{_f(lane_y + 1)}" x2="{_f(at)}" y2="{_f(lane_y + 7)}" stroke="#08519c" '
                f'stroke-width="1.2"/>']  # above the request's span, clear of its label
    if m.kind == "settled":
        return [f'<path d="M{_f(at)},{_f(mid - 6)} L{_f(at + 6)},{_f(mid)} L{_f(at)},{_f(mid + 6)} '
                f'L{_f(at - 6)},{_f(mid)} Z" fill="#238b45" stroke="#fff"/>']
    if m.kind in ("disconnect", "error"):
        color = "#e6550d" if m.kind == "disconnect" else "#d62728"
        return [f'<path d="M{_f(at - 4)},{_f(mid - 4)} L{_f(at + 4)},{_f(mid + 4)} M{_f(at + 4)},{_f(mid - 4)} '
                f'L{_f(at - 4)},{_f(mid + 4)}" stroke="{color}" stroke-width="2"/>']
    if m.kind == "probe":  # harmless: a ring, on its own lane, nothing like an error's cross
        return [f'<circle cx="{_f(at)}" cy="{_f(mid)}" r="3.5" fill="none" stroke="#999" stroke-width="1.5"/>']
    if m.kind == "exit":
        return [f'<rect x="{_f(at - 1.5)}" y="{_f(lane_y + 3)}" width="3" height="{TL_LANE - 6}" fill="#222"/>']
    fill = "#444" if m.kind == "input" else "#999"
    return [f'<circle cx="{_f(at)}" cy="{_f(mid)}" r="4" fill="{fill}"/>']


def timeline_legend() -> Mapping[str, str]:
    """The mark kinds and what they look like, for the legend beside a timeline."""
    return {
        "request": "a model request, from the request to its stream's end (blue span)",
        "chunk": "a streamed chunk (blue tick above its request)",
        "process": "an agent process, from spawn to exit (green span; the black bar is its exit)",
        "window": "a bash window's process tree, open → last process gone (orange span)",
        "open": "dashed red outline: never ended while the harness watched",
        "stop": "Stop delivered (red dashed line across every lane)",
        "kill": "SIGKILL of the agent (dark red line)",
        "restart": "the agent started again (blue line)",
        "settled": "a turn settled, as the agent showed it (green diamond)",
        "input": "a user message the harness sent (grey dot)",
        "disconnect": "the agent closed a stream (orange cross); a refused request is a red cross",
        "probe": "a request to a path the fake server does not serve (404), harmless (grey ring, lane probes)",
    }
