"""Latency distributions: percentiles of ``LatencySample`` values, grouped for tables.

Percentiles use the nearest-rank method on the sorted values (no interpolation), so every
figure printed is a value that was actually measured — with n = 20, p99 is the maximum, which
is honest about how little a small sample can say about its tail.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.model import LatencySample

PERCENTILES = (50, 90, 99)


Number = TypeVar("Number", int, float)


def percentile(values: Sequence[Number], p: float) -> Number:
    """Nearest-rank percentile: the smallest value with at least p % of values at or below it."""
    if not values:
        raise ValueError("percentile of an empty sample")
    if not 0 < p <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {p}")
    ordered = sorted(values)
    rank = math.ceil(p / 100 * len(ordered))
    return ordered[max(rank, 1) - 1]


@dataclass(frozen=True)
class Summary:
    """p50 / p90 / p99 / max with n, in nanoseconds."""

    n: int
    p50: int
    p90: int
    p99: int
    max: int

    @classmethod
    def of(cls, values: Sequence[int]) -> Summary:
        return cls(
            n=len(values),
            p50=percentile(values, 50),
            p90=percentile(values, 90),
            p99=percentile(values, 99),
            max=max(values),
        )

    def to_json(self) -> dict[str, int]:
        return {"n": self.n, "p50": self.p50, "p90": self.p90, "p99": self.p99, "max": self.max}


GroupKey = tuple[str, str, str, str]  # agent, adapter, task, latency ID


def summarise(samples: Iterable[LatencySample]) -> dict[GroupKey, Summary]:
    """One ``Summary`` per agent × adapter × task × latency ID, in sorted key order."""
    groups: dict[GroupKey, list[int]] = {}
    for s in samples:
        groups.setdefault((s.agent, s.adapter, s.task, s.latency), []).append(s.value_ns)
    return {key: Summary.of(values) for key, values in sorted(groups.items())}


def summarise_by_adapter(samples: Iterable[LatencySample]) -> dict[tuple[str, str, str], Summary]:
    """One ``Summary`` per agent × adapter × latency ID, all tasks pooled (the headline table)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for s in samples:
        groups.setdefault((s.agent, s.adapter, s.latency), []).append(s.value_ns)
    return {key: Summary.of(values) for key, values in sorted(groups.items())}


def format_ns(value_ns: int) -> str:
    """A duration in the unit that keeps three significant figures readable."""
    sign = "-" if value_ns < 0 else ""
    v = abs(value_ns)
    if v < 1_000_000:
        return f"{sign}{v / 1_000:.1f} µs"
    if v < 1_000_000_000:
        return f"{sign}{v / 1_000_000:.2f} ms"
    return f"{sign}{v / 1_000_000_000:.3f} s"


def format_on_axis(values_ns: Sequence[float]) -> list[str]:
    """The values in one unit, the one ``format_ns`` gives the largest of them, to three
    significant figures: the ends of one axis never read "400.0 µs" and "2.00 ms"."""
    largest = max((abs(v) for v in values_ns), default=0)
    unit, size = next(((u, n) for u, n, below in _UNITS if largest < below), _UNITS[-1][:2])
    return [f"{_three_figures(v / size)} {unit}" for v in values_ns]


# unit, its size in ns, and the magnitude from which the next unit is used (as in format_ns)
_UNITS = (("µs", 1_000, 1_000_000), ("ms", 1_000_000, 1_000_000_000), ("s", 1_000_000_000, math.inf))


def _three_figures(value: float) -> str:
    if value == 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"



# The quick floor's entry that is the stopwatch's own error for each latency: L4's own includes the
# calibration agent's start-up, which is the agent's overshoot, not the stopwatch's (docs/calibrate.md).
FLOOR_ENTRY = {"L1": "L1", "L2": "L2", "L3": "L3", "L4": "L4_without_start_up"}
ERROR_HEADER = "stopwatch error"
ERROR_NOTE = ("stopwatch error: the error of stopbench's own stopwatch for that latency on the run's machine, its "
              "floor measured by the run (as stopbench calibrate --quick: p50 at D = 0, a few samples), with the "
              "machine's 1-minute load then; a difference smaller than it is not resolved (docs/calibrate.md)")


@dataclass(frozen=True)
class StopwatchError:
    """How finely a latency could be measured where it was: the floor of stopbench's own
    stopwatch that its run recorded (``run.machine.floor``), and the load it was taken at."""

    error_ns: int
    load: float | None

    def text(self) -> str:
        at = f"load {self.load:.1f}" if self.load is not None else "load unknown"
        return f"± {format_ns(self.error_ns)} (floor at {at})"


@dataclass(frozen=True)
class Floors:
    """The stopwatch floors a run recorded: latency ID -> driver -> p50 in ns, and the 1-minute
    load they were measured at (for a merge of shards: each the largest of its shards', and the
    busiest shard's load)."""

    by_latency: Mapping[str, Mapping[str, int]]
    load: float | None

    def error(self, latency: str, drivers: Iterable[str]) -> StopwatchError | None:
        """The error beside a figure of ``latency`` timed on ``drivers``: the largest of their
        floors. A driver the quick floor did not run takes the latency's largest floor on any
        driver (the stopwatch is the same code; a driver changes how a Stop is delivered, not
        how it is timed)."""
        known = self.by_latency.get(latency)
        if not known:
            return None
        worst = max(known.values())
        return StopwatchError(max((known.get(d, worst) for d in set(drivers)), default=worst), self.load)


def recorded_floors(run: Mapping[str, Any]) -> Floors:
    """The floors a run's header holds (``machine.floor``, or each shard's in ``merged_from``);
    none when the run measured none or its measuring failed."""
    machines = [m.get("machine") for m in run.get("merged_from") or () if isinstance(m, dict)]
    by_latency: dict[str, dict[str, int]] = {}
    loads: list[float] = []
    for machine in machines or [run.get("machine")]:
        floor = machine.get("floor") if isinstance(machine, dict) else None
        if not isinstance(floor, dict):
            continue
        if isinstance(floor.get("loadavg"), list) and floor["loadavg"]:
            loads.append(float(floor["loadavg"][0]))
        for latency, entry in FLOOR_ENTRY.items():
            rows = floor.get(entry)
            for driver, row in rows.items() if isinstance(rows, dict) else ():
                if isinstance(row, dict) and isinstance(row.get("p50_ms"), int | float):
                    ns = round(row["p50_ms"] * 1e6)
                    known = by_latency.setdefault(latency, {})
                    known[driver] = max(known.get(driver, ns), ns)
    return Floors(by_latency, max(loads) if loads else None)


def sample_driver(sample: LatencySample) -> str:
    """The driver a sample was timed on (``detail.driver``; empty when the results do not say)."""
    return str(sample.detail.get("driver", ""))
