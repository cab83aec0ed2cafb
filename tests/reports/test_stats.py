"""The gate's statistics against exact combinatorics and against each other."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from harness.report.stats import (
    _enumerated_tail,
    _exact_tail,
    _normal_tail,
    bootstrap_median_ratio,
    mann_whitney_greater,
    median_ratio,
    midranks,
)


def test_midranks_average_ties_and_report_group_sizes():
    ranks, ties = midranks([10, 20, 20, 5, 20])
    assert ranks == [2.0, 4.0, 4.0, 1.0, 4.0]
    assert ties == [3]


def test_complete_separation_has_the_smallest_possible_p_value():
    result = mann_whitney_greater([1, 2, 3], [4, 5, 6])
    assert result.method == "exact"
    assert result.u == 9
    assert result.p_value == pytest.approx(1 / math.comb(6, 3))
    assert mann_whitney_greater([4, 5, 6], [1, 2, 3]).p_value == pytest.approx(1.0)


@pytest.mark.parametrize("n1,n2", [(1, 1), (3, 4), (5, 5), (2, 9), (7, 3)])
def test_exact_tail_matches_brute_force_enumeration(n1, n2):
    ranks = list(range(1, n1 + n2 + 1))
    for u in range(n1 * n2 + 1):
        assert _exact_tail(n1, n2, u) == pytest.approx(_enumerated_tail(ranks, n2, u), abs=1e-12)


def test_exact_test_has_size_at_most_alpha_over_all_arrangements():
    """Under the null every split of the ranks is equally likely: count the rejections."""
    n1 = n2 = 6
    values = list(range(n1 + n2))
    rejected = total = 0
    for chosen in itertools.combinations(values, n2):
        current = list(chosen)
        baseline = [v for v in values if v not in chosen]
        total += 1
        rejected += mann_whitney_greater(baseline, current).p_value < 0.05
    assert rejected / total <= 0.05


def test_normal_approximation_agrees_with_exact_p_value_at_moderate_n():
    rng = random.Random(3)
    base = [rng.gauss(0, 1) for _ in range(25)]
    cur = [rng.gauss(0.6, 1) for _ in range(25)]
    exact = mann_whitney_greater(base, cur)
    assert exact.method == "exact"
    assert _normal_tail(25, 25, exact.u, []) == pytest.approx(exact.p_value, rel=0.15)


def test_ties_use_enumeration_when_small_and_normal_approximation_when_large():
    small = mann_whitney_greater([1, 1, 2, 3], [2, 3, 3, 4])
    assert small.method == "enumeration"
    rng = random.Random(4)
    large = mann_whitney_greater([rng.randrange(5) for _ in range(40)], [rng.randrange(5) for _ in range(40)])
    assert large.method == "normal"
    assert 0 < large.p_value < 1


def test_all_identical_values_give_no_evidence():
    assert mann_whitney_greater([7] * 30, [7] * 30).p_value == pytest.approx(1.0)
    assert mann_whitney_greater([7] * 3, [7] * 3).p_value == pytest.approx(1.0)


def test_empty_sample_is_refused():
    with pytest.raises(ValueError, match="at least one value"):
        mann_whitney_greater([], [1])


def test_median_ratio_and_bootstrap_interval_bracket_a_doubling_and_repeat_exactly():
    rng = random.Random(5)
    base = [rng.lognormvariate(0, 0.2) for _ in range(30)]
    cur = [2 * rng.lognormvariate(0, 0.2) for _ in range(30)]
    assert median_ratio(base, cur) == pytest.approx(2, rel=0.2)
    interval = bootstrap_median_ratio(base, cur, confidence=0.95)
    assert interval.low < median_ratio(base, cur) < interval.high
    assert 1.5 < interval.low and interval.high < 2.7
    assert bootstrap_median_ratio(base, cur, confidence=0.95) == interval  # fixed seed


def test_ratio_is_undefined_for_a_non_positive_baseline_median():
    assert median_ratio([-5, 0, 0], [3, 4, 5]) is None
    assert bootstrap_median_ratio([-5, -1, 0], [3, 4, 5]) is None


def test_one_agent_on_several_wires_is_told_apart_by_adapter_and_a_repeat_by_its_file():
    from report_builders import build_run

    from harness.report.aggregate.scoreboard import scoreboards

    chat = build_run([("interrupt-cancel", "chat", 0)], agent="pi", repeat=1)
    gemini = build_run([("interrupt-cancel", "gemini", 0)], agent="pi", repeat=1)
    assert [(b.label, b.adapter) for b in scoreboards([chat, gemini])] == [("pi", "chat"), ("pi", "gemini")]
    again = build_run([("interrupt-cancel", "chat", 0)], agent="pi", repeat=1)
    assert [b.label for b in scoreboards([chat, gemini, again])] == ["pi (file 1)", "pi", "pi (file 3)"]


def test_releases_of_one_agent_are_one_agent_with_a_row_per_version():
    import dataclasses

    from report_builders import build_run

    from harness.report.aggregate.scoreboard import scoreboards

    def release(version: str):
        run = build_run([("interrupt-cancel", "chat", 0)], agent="claude-code", repeat=1)
        return dataclasses.replace(run, run={**run.run, "agent_version": version})

    boards = scoreboards([release("2.1.197"), release("2.1.332")])
    assert [(b.label, b.agent, b.version) for b in boards] == [("claude-code@2.1.197", "claude-code", "2.1.197"),
                                                               ("claude-code@2.1.332", "claude-code", "2.1.332")]
    same = scoreboards([release("2.1.197"), release("2.1.197")])  # a version run twice: the file tells them apart
    assert [b.label for b in same] == ["claude-code (file 1)", "claude-code (file 2)"]
