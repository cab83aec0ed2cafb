"""What a calibration measured, and the tables a person reads it in.

A calibration's figures are its samples (``CalSample``: one latency stopbench measured for the
calibration agent, with the agent's D) and the error rows folded from them (``measured − D``
per latency and driver, with the parts the agent's stamps show). ``harness.calibrate.stopwatch``
measures them; this module holds them and prints them: the error table of ``stopbench
calibrate`` and the quick floor's table of ``stopbench calibrate --quick``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.report.latency import format_ns, percentile

MEASURED = ("L1", "L2", "L3", "L4")
AIM_NS = {"L1": 50_000, "L2": 200_000, "L3": 500_000, "L4": 500_000}  # |error| p50 on a quiet machine
L4_LESS_START_UP = "L4 − start-up"  # the L4 error without the agent's own start (its timer cannot start earlier)


@dataclass(frozen=True)
class CalSample:
    """One latency stopbench measured for the calibration agent, with the agent's D."""

    latency: str
    driver: str
    task: str
    delay_ns: int
    measured_ns: int
    parts: Mapping[str, int] = field(default_factory=dict)  # what the error is made of, in order

    @property
    def error_ns(self) -> int:
        return self.measured_ns - self.delay_ns

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "parts": dict(self.parts), "error_ns": self.error_ns}


@dataclass(frozen=True)
class Row:
    latency: str
    driver: str
    n: int
    p50: int
    p99: int
    max: int
    below_d: int  # runs measured below their D: impossible for a sound stopwatch
    floor_p50: int | None  # p50 of the D = 0 runs
    parts: Mapping[str, int]  # p50 of each part

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "parts": dict(self.parts)}


@dataclass(frozen=True)
class Calibration:
    samples: tuple[CalSample, ...]
    delays_ms: tuple[float, ...]
    repeat: int
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    cpus: int
    duration_s: float
    wakeup_p50_ns: int = 0
    wakeup_p99_ns: int = 0

    def rows(self) -> list[Row]:
        return error_rows(self.samples)

    def to_json(self) -> dict[str, Any]:
        return {"delays_ms": list(self.delays_ms), "repeat": self.repeat, "cpus": self.cpus,
                "loadavg_before": list(self.load_before), "loadavg_after": list(self.load_after),
                "duration_s": round(self.duration_s, 3), "wakeup_p50_ns": self.wakeup_p50_ns,
                "wakeup_p99_ns": self.wakeup_p99_ns, "rows": [r.to_json() for r in self.rows()],
                "samples": [s.to_json() for s in self.samples]}


def error_rows(samples: Sequence[CalSample]) -> list[Row]:
    """One row per latency × driver (and L4 once more without the agent's start-up)."""
    groups: dict[tuple[str, str], list[CalSample]] = {}
    for s in samples:
        groups.setdefault((s.latency, s.driver), []).append(s)
        if s.latency == "L4" and "start-up" in s.parts:
            groups.setdefault((L4_LESS_START_UP, s.driver), []).append(
                dataclasses.replace(s, measured_ns=s.measured_ns - s.parts["start-up"],
                                    parts={k: v for k, v in s.parts.items() if k != "start-up"}))
    order = {lid: n for n, lid in enumerate((*MEASURED[:-1], "L4", L4_LESS_START_UP))}
    rows = []
    for (lid, driver), group in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1])):
        errors = [s.error_ns for s in group]
        floors = [s.error_ns for s in group if s.delay_ns == 0]
        names = list(dict.fromkeys(k for s in group for k in s.parts))
        parts = {k: int(percentile([s.parts[k] for s in group if k in s.parts], 50)) for k in names}
        rows.append(Row(lid, driver, len(errors), int(percentile(errors, 50)), int(percentile(errors, 99)),
                        max(errors), sum(1 for s in group if s.measured_ns < s.delay_ns),
                        int(percentile(floors, 50)) if floors else None, parts))
    return rows


def error_table(samples: Sequence[CalSample]) -> str:
    """measured − D per latency and driver: n, p50, p99, max, runs below D, the D = 0 floor,
    the aim, and the p50 of each part the agent's stamps show."""
    if not samples:
        return "no calibration samples\n"
    header = ("latency", "driver", "n", "p50", "p99", "max", "below D", "floor p50", "aim p50", "made of (p50 each)")
    table = [header]
    for r in error_rows(samples):
        aim = AIM_NS.get("L4" if r.latency == L4_LESS_START_UP else r.latency)
        table.append((r.latency, r.driver, str(r.n), format_ns(r.p50), format_ns(r.p99), format_ns(r.max),
                      str(r.below_d), format_ns(r.floor_p50) if r.floor_p50 is not None else "-",
                      f"≤ {format_ns(aim)}" if aim and r.latency != "L4" else "-",
                      ", ".join(f"{k} {format_ns(v)}" for k, v in r.parts.items()) or "-"))
    return _aligned(table, numbers=range(2, 9)) + "\n"


def _aligned(table: Sequence[Sequence[str]], numbers: range) -> str:
    """Rows of cells as aligned columns: the ``numbers`` columns to the right, the rest left."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(cell.rjust(w) if i in numbers else cell.ljust(w)
                               for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
                     for row in table)


def report(cal: Calibration) -> str:
    delays = ", ".join(f"{d:g}" for d in cal.delays_ms)
    load = f"load {fmt_load(cal.load_before)} before, {fmt_load(cal.load_after)} after ({cal.cpus} CPUs)"
    wakeup = (f"wake-up of an idle process by another (pipe, one way): p50 {format_ns(cal.wakeup_p50_ns)}, "
              f"p99 {format_ns(cal.wakeup_p99_ns)}")
    return (f"stopbench calibrate: measured − D, the error of stopbench's own stopwatch\n"
            f"D = {delays} ms, {cal.repeat} run(s) each; {len(cal.samples)} samples in {cal.duration_s:.1f} s; "
            f"{load}\n{wakeup}\n\n{error_table(cal.samples)}")


def fmt_load(load: Sequence[float]) -> str:
    return " ".join(f"{v:.2f}" for v in load)


def quick_table(floor: Mapping[str, Any]) -> str:
    """The quick floor (``quick_floor_async``'s dict) as ``stopbench calibrate --quick`` prints
    it: one row per latency and driver, in ms from the dict, shown the way the error table is."""
    header = ("latency", "driver", "n", "p50", "max", "made of (p50 each)")
    table = [header]
    for latency, by_driver in floor.items():
        if not (latency in MEASURED or latency == "L4_without_start_up") or not isinstance(by_driver, dict):
            continue
        for driver, row in by_driver.items():
            parts = ", ".join(f"{k} {format_ns(v * 1e6)}" for k, v in row.get("parts_ms", {}).items())
            table.append((latency, driver, str(row["n"]), format_ns(row["p50_ms"] * 1e6),
                          format_ns(row["max_ms"] * 1e6), parts or "-"))
    heading = (f"stopbench calibrate --quick: the floor of stopbench's own stopwatch (D = 0) in "
               f"{floor['took_s']:.1f} s; load {fmt_load(floor['loadavg'])}; wake-up of an idle process p50 "
               f"{format_ns(floor['wakeup_p50_ms'] * 1e6)}")
    return f"{heading}\n\n{_aligned(table, numbers=range(2, 5))}\n\n{floor['note']}\n"
