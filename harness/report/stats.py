"""Two-sample statistics for the CI gate, in the standard library alone.

The gate must tell a real latency regression from the noise of a shared CI machine, so
it asks two questions of a baseline sample and a current sample:

* Is the current sample stochastically larger? A one-sided Mann-Whitney U test: it
  assumes no distribution shape (latencies are skewed and heavy-tailed), only that the
  samples are independent. Its p-value is exact when it can be computed cheaply — the
  Gaussian-binomial generating function when there are no ties, full enumeration of the
  rank assignments when there are ties and few samples — and otherwise the normal
  approximation with tie and continuity corrections, which is accurate for n >= 8.
* How much larger? The ratio of medians, with a percentile bootstrap confidence interval
  drawn from a fixed seed, so two runs of the gate on the same files print the same thing.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Exact p-values are used up to these sizes; beyond them the normal approximation is
# both accurate and much cheaper.
EXACT_MAX_CELLS = 10_000  # n1 * n2, no ties: coefficients of a polynomial of this degree
EXACT_MAX_ARRANGEMENTS = 20_000  # C(n1 + n2, n2), with ties: rank subsets enumerated


@dataclass(frozen=True)
class MannWhitney:
    """Result of a one-sided test that ``current`` tends to be larger than ``baseline``."""

    u: float  # U statistic of the current sample (pairs where current > baseline, ties 1/2)
    p_value: float  # P(U >= u) when both samples come from one distribution
    method: str  # "exact", "enumeration" or "normal"


def midranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """1-based ranks with ties given their average rank, and the sizes of the tie groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        rank = (start + end) / 2 + 1
        for k in range(start, end + 1):
            ranks[order[k]] = rank
        if end > start:
            ties.append(end - start + 1)
        start = end + 1
    return ranks, ties


def mann_whitney_greater(baseline: Sequence[float], current: Sequence[float]) -> MannWhitney:
    """One-sided Mann-Whitney U test of "current is stochastically greater than baseline"."""
    n1, n2 = len(baseline), len(current)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs at least one value in each sample")
    ranks, ties = midranks([*baseline, *current])
    u = sum(ranks[n1:]) - n2 * (n2 + 1) / 2
    if not ties and n1 * n2 <= EXACT_MAX_CELLS:
        return MannWhitney(u, _exact_tail(n1, n2, u), "exact")
    if ties and math.comb(n1 + n2, n2) <= EXACT_MAX_ARRANGEMENTS:
        return MannWhitney(u, _enumerated_tail(ranks, n2, u), "enumeration")
    return MannWhitney(u, _normal_tail(n1, n2, u, ties), "normal")


def _exact_tail(n1: int, n2: int, u: float) -> float:
    """P(U >= u) without ties: U's null counts are the coefficients of the Gaussian
    binomial [n1 + n2 choose n2]_q = prod_{i=1..n2} (1 - q^(n1+i)) / (1 - q^i)."""
    degree = n1 * n2
    counts = [1] + [0] * degree
    for i in range(1, n2 + 1):
        for k in range(degree, n1 + i - 1, -1):  # multiply by (1 - q^(n1+i))
            counts[k] -= counts[k - n1 - i]
        for k in range(i, degree + 1):  # divide by (1 - q^i); exact in integers
            counts[k] += counts[k - i]
    threshold = math.ceil(u - 1e-9)
    return sum(counts[max(threshold, 0):]) / math.comb(n1 + n2, n2)


def _enumerated_tail(ranks: Sequence[float], n2: int, u: float) -> float:
    """P(U >= u) with ties, by trying every way of drawing the current sample's ranks."""
    offset = n2 * (n2 + 1) / 2
    hits = total = 0
    for subset in itertools.combinations(ranks, n2):
        total += 1
        if sum(subset) - offset >= u - 1e-9:
            hits += 1
    return hits / total


def _normal_tail(n1: int, n2: int, u: float, ties: Sequence[int]) -> float:
    n = n1 + n2
    mean = n1 * n2 / 2
    tie_term = sum(t**3 - t for t in ties) / (n * (n - 1)) if n > 1 else 0.0
    variance = n1 * n2 / 12 * ((n + 1) - tie_term)
    if variance <= 0:  # every value identical: no evidence either way
        return 1.0
    z = (u - mean - 0.5) / math.sqrt(variance)
    return 0.5 * math.erfc(z / math.sqrt(2))


@dataclass(frozen=True)
class RatioInterval:
    low: float
    high: float
    confidence: float


def median_ratio(baseline: Sequence[float], current: Sequence[float]) -> float | None:
    """median(current) / median(baseline); None when the baseline median is not positive."""
    base = statistics.median(baseline)
    return statistics.median(current) / base if base > 0 else None


def bootstrap_median_ratio(
    baseline: Sequence[float],
    current: Sequence[float],
    confidence: float = 0.98,
    resamples: int = 1000,
    seed: int = 0,
) -> RatioInterval | None:
    """Percentile bootstrap interval of median(current) / median(baseline).

    None when a resampled baseline median is not positive (the ratio means nothing then).
    """
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        base = statistics.median(rng.choices(baseline, k=len(baseline)))
        if base <= 0:
            return None
        ratios.append(statistics.median(rng.choices(current, k=len(current))) / base)
    ratios.sort()
    tail = (1 - confidence) / 2
    low = ratios[int(math.floor(tail * (resamples - 1)))]
    high = ratios[int(math.ceil((1 - tail) * (resamples - 1)))]
    return RatioInterval(low, high, confidence)
