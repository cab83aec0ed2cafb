"""The gate's result for a person: the table in the CI log and the pull-request comment.

``harness.report.gate`` compares two runs into rows and a decision; this module only writes
them out — the changed checks and every latency comparison as columns (plain text) or a
Markdown table, both runs' machines, and the one-line decision that ends either.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.report.gate import NOT_CHECKED, NOT_GATED, GateResult, LatencyRow, MachineLoad
from harness.report.latency import format_ns
from harness.report.stats import RatioInterval
from harness.report.text import md_cell


def _tables(result: GateResult) -> list[tuple[str, list[str], list[list[str]]]]:
    """(caption, header, rows) of the check changes and of every latency comparison."""
    causes = {(*r.key[:3], r.consequence_of) for r in result.checks if r.consequence_of is not None}
    shown = [r for r in result.checks  # a consequence's cause is shown too, so it has a visible parent
             if r.verdict not in ("unchanged", NOT_CHECKED) or r.key in causes]
    unchecked = sum(r.verdict == NOT_CHECKED and r.key not in causes for r in result.checks)
    unchanged = len(result.checks) - len(shown) - unchecked
    checks = (f"checks: {len(result.checks)} compared, {unchanged} unchanged"
              + (f", {unchecked} {NOT_CHECKED} (their task did not run in the current run)" if unchecked else ""),
              ["agent", "adapter", "task", "check", "tier", "baseline", "current", "verdict"],
              [[*r.key[:3], f"  ↳ {r.key[3]}" if r.consequence_of else r.key[3], r.tier, r.before or "-",
                r.after or "-", r.verdict] for r in shown])
    loads = f"{_load(result.machine_before)}/{_load(result.machine_after)}"
    latencies = (f"latencies: {len(result.latencies)} compared",
                 ["agent", "adapter", "task", "latency", "n base/cur", "median base", "median cur", "ratio",
                  f"{1 - 2 * result.alpha:.0%} CI", "p(slower)", "load/CPU base/cur", "verdict"],
                 [[*r.key, f"{r.n_before}/{r.n_after}", _ns(r.median_before), _ns(r.median_after),
                   _ratio(r.ratio), _interval(r.interval), "-" if r.p_slower is None else f"{r.p_slower:.2g}",
                   loads, _latency_verdict(r)] for r in result.latencies])
    return [checks, latencies]


def _latency_verdict(row: LatencyRow) -> str:
    """The row's verdict; with too few samples, the repeat that would let the gate decide."""
    if row.repeat_to_decide is None:
        return row.verdict
    return f"{row.verdict} (--repeat {row.repeat_to_decide} in both runs would decide)"


def machines_line(result: GateResult) -> str:
    """Both runs' machines, and whether their latencies compare."""
    def one(m: MachineLoad | None) -> str:
        if m is None:
            return "not recorded"
        return (f"load/CPU {m.text}" + (f", {m.cpus} CPUs" if m.cpus else "")
                + (f", null agent {m.spawn_ms:g} ms" if m.spawn_ms else ""))

    verdict = (f"machine differs ({result.machine_differs}): latencies not comparable"
               if result.machine_differs else "latencies compared")
    return f"machines: baseline {one(result.machine_before)}; current {one(result.machine_after)} — {verdict}"


def _load(m: MachineLoad | None) -> str:
    return "-" if m is None else m.text


def decision(result: GateResult) -> str:
    ungated = sum(NOT_GATED in r.verdict for r in result.checks)
    follows = sum(r.consequence_of is not None for r in result.checks)
    also = (f"; {follows} consequence(s) of another check's failure, not counted" if follows else "") + (
        f"; {ungated} advisory check(s) got worse, not gated: --advisory gates them" if ungated else "")
    held = f"no {'gated ' if ungated else ''}check went from pass to fail{also}"
    if result.failed:
        return (f"gate: FAIL ({sum(r.failing for r in result.checks)} check regression(s), "
                f"{sum(r.failing for r in result.latencies)} latency regression(s){also})")
    if result.machine_differs:
        return (f"gate: pass ({held}; {len(result.latencies)} latencies not "
                f"comparable: machine differs, {result.machine_differs})")
    quiet = sum(r.verdict.startswith("no evidence") for r in result.latencies)
    return (f"gate: pass ({held}; no evidence of change in {quiet} of "
            f"{len(result.latencies)} latencies, no regression in the rest)")


def format_gate(result: GateResult) -> str:
    """The comparison table a person reads in the CI log, ending with the decision."""
    lines = [f"stopbench gate: tolerance {result.tolerance:.0%}, alpha {result.alpha:g}", machines_line(result)]
    for caption, header, rows in _tables(result):
        lines += ["", caption, *(columns(header, rows) if rows else [])]
    return "\n".join([*lines, "", decision(result)]) + "\n"


def format_gate_markdown(result: GateResult) -> str:
    """The same comparison for a pull-request comment or a CI step summary."""
    lines = [f"## {decision(result)}", "", f"Tolerance {result.tolerance:.0%}, alpha {result.alpha:g}.", "",
             md_cell(machines_line(result)) + "."]
    for caption, header, rows in _tables(result):
        lines += ["", f"**{caption}**"]
        if rows:
            lines += ["", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header),
                      *("| " + " | ".join(md_cell(str(c)) for c in row) + " |" for row in rows)]
    return "\n".join(lines) + "\n"


def _ns(value: float | None) -> str:
    return "-" if value is None else format_ns(round(value))


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _interval(interval: RatioInterval | None) -> str:
    return "-" if interval is None else f"{interval.low:.2f}-{interval.high:.2f}"


def columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header).rstrip(), fmt.format(*("-" * w for w in widths)).rstrip(),
            *(fmt.format(*map(str, row)).rstrip() for row in rows)]
