"""Latency maths: nearest-rank percentiles, summaries, grouping."""

import pytest

from harness.model import LatencySample
from harness.report.latency import Summary, format_ns, percentile, summarise, summarise_by_adapter


def test_nearest_rank_percentiles_are_measured_values():
    values = list(range(1, 101))  # 1 … 100
    assert percentile(values, 50) == 50
    assert percentile(values, 90) == 90
    assert percentile(values, 99) == 99
    assert percentile(values, 100) == 100


def test_small_samples_use_the_ceiling_rank():
    assert percentile([30, 10, 20], 50) == 20
    assert percentile([30, 10, 20], 90) == 30
    assert percentile([7], 99) == 7
    # with n = 20, p99 is the maximum: a small sample says nothing finer about its tail
    assert percentile(list(range(20)), 99) == 19
    assert percentile(list(range(20)), 90) == 17


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="empty"):
        percentile([], 50)
    with pytest.raises(ValueError, match="percentile must be"):
        percentile([1], 0)


def test_summary_of_unsorted_values():
    s = Summary.of([5, 1, 4, 2, 3])
    assert (s.n, s.p50, s.p90, s.p99, s.max) == (5, 3, 5, 5, 5)
    assert s.to_json() == {"n": 5, "p50": 3, "p90": 5, "p99": 5, "max": 5}


def _sample(lid, value, adapter="http", task="t"):
    return LatencySample(lid, value, "agent", adapter, task)


def test_grouping_per_agent_adapter_task_latency():
    samples = [_sample("L1", 10), _sample("L1", 30), _sample("L1", 20, task="u"), _sample("L3", 5, adapter="inproc")]
    per_task = summarise(samples)
    assert per_task[("agent", "http", "t", "L1")].n == 2
    assert per_task[("agent", "http", "u", "L1")].p50 == 20
    pooled = summarise_by_adapter(samples)
    assert pooled[("agent", "http", "L1")] == Summary(3, 20, 30, 30, 30)
    assert list(pooled) == [("agent", "http", "L1"), ("agent", "inproc", "L3")]


def test_format_picks_a_readable_unit():
    assert format_ns(300_000) == "300.0 µs"
    assert format_ns(1_600_000) == "1.60 ms"
    assert format_ns(1_290_000_000) == "1.290 s"
    assert format_ns(-2_000_000) == "-2.00 ms"
