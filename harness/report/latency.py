"""Latency distributions: percentiles of ``LatencySample`` values, grouped for tables.

Percentiles use the nearest-rank method on the sorted values (no interpolation), so every
figure printed is a value that was actually measured — with n = 20, p99 is the maximum, which
is honest about how little a small sample can say about its tail.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

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

