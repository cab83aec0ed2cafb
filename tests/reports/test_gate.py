"""The CI gate on synthetic samples and check verdicts.

Stated false-positive rate: with baseline and current drawn from one distribution, a
latency row is flagged with probability at most alpha (the one-sided Mann-Whitney test's
size; requiring the median to exceed the tolerance only lowers it).
"""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from harness.cli.report import gate_main
from harness.model import CheckResult, Evidence, LatencySample, Outcome, RunResult, RunStatus, TaskResult, Tier
from harness.report import compare, format_gate
from harness.report.gate import NOT_CHECKED, TOO_FEW, repeat_to_decide, too_few
from harness.report.gate_text import decision
from harness.report.writer import results_text

SEEDS = range(100)


def latency_run(values, *, latency="L3", task="interrupt-cancel", adapter="http", agent="ref",
                outcome=Outcome.PASS) -> RunResult:
    samples = tuple(LatencySample(latency, int(v), agent, adapter, task, i) for i, v in enumerate(values))
    check = CheckResult("C3", outcome, Evidence("tree gone" if outcome is Outcome.PASS else "pid 9 alive"),
                        name="pending_tool_calls_close")
    tasks = (TaskResult(task, agent, adapter, 0, (check,)),)
    return RunResult({"agent": agent}, tasks, samples)


def noisy(rng: random.Random, n: int, median_ns: float, sigma: float = 0.3) -> list[int]:
    """Lognormal, like latencies on a shared machine: skewed with a long right tail."""
    return [int(median_ns * rng.lognormvariate(0, sigma)) for _ in range(n)]


def test_a_twofold_slowdown_at_n_20_is_flagged_for_every_seed():
    for seed in range(20):
        rng = random.Random(seed)
        result = compare(latency_run(noisy(rng, 20, 150e6)), latency_run(noisy(rng, 20, 300e6)))
        (row,) = result.latencies
        assert row.failing, (seed, row)
        assert row.verdict == "REGRESSION: slower beyond tolerance"
        assert row.ratio == pytest.approx(2, rel=0.35)
        assert result.failed


@pytest.mark.slow(reason="thousands of simulated gates")
def test_identical_distributions_are_flagged_no_more_often_than_alpha():
    alpha = 0.01
    flagged = 0
    for seed in SEEDS:
        rng = random.Random(seed)
        result = compare(latency_run(noisy(rng, 20, 150e6)), latency_run(noisy(rng, 20, 150e6)), alpha=alpha)
        flagged += result.failed
    assert flagged <= alpha * len(SEEDS)


@pytest.mark.slow(reason="thousands of simulated gates")
def test_the_tests_size_alone_stays_within_alpha_with_zero_tolerance():
    """Without the tolerance's help, at a looser alpha, over heavy ties too."""
    alpha = 0.05
    for make in (lambda r: noisy(r, 20, 1e6, 0.5), lambda r: [r.randrange(5) * 1000 for _ in range(20)]):
        flagged = 0
        for seed in SEEDS:
            rng = random.Random(seed)
            result = compare(latency_run(make(rng)), latency_run(make(rng)), tolerance=0.0, alpha=alpha)
            flagged += result.failed
        assert flagged <= alpha * len(SEEDS)


def test_a_significant_slowdown_inside_the_tolerance_passes():
    rng = random.Random(1)
    base = noisy(rng, 200, 100e6, 0.05)
    cur = [v * 1.05 for v in noisy(rng, 200, 100e6, 0.05)]
    (row,) = compare(latency_run(base), latency_run(cur), tolerance=0.10).latencies
    assert row.verdict == "slower, within tolerance"
    assert not row.failing
    (strict,) = compare(latency_run(base), latency_run(cur), tolerance=0.02).latencies
    assert strict.failing


def test_a_speedup_is_reported_and_passes():
    rng = random.Random(2)
    (row,) = compare(latency_run(noisy(rng, 20, 300e6)), latency_run(noisy(rng, 20, 100e6))).latencies
    assert row.verdict == "faster" and not row.failing


def test_too_few_samples_say_no_evidence_of_change_even_for_a_large_slowdown():
    (row,) = compare(latency_run([1e6, 1.1e6, 1.2e6]), latency_run([9e6, 9.5e6, 9.9e6])).latencies
    assert row.verdict == "no evidence of change: too few samples to tell"
    assert not row.failing


def test_pass_to_fail_always_fails_the_gate_even_when_latencies_improve():
    for seed in range(10):
        rng = random.Random(seed)
        baseline = latency_run(noisy(rng, 20, 300e6))
        current = latency_run(noisy(rng, 20, 100e6), outcome=Outcome.FAIL)
        result = compare(baseline, current)
        assert result.failed
        (regressed,) = [r for r in result.checks if r.failing]
        assert regressed.key[2:] == ("interrupt-cancel", "C3")
        assert regressed.verdict == "REGRESSION: pass -> fail"


def test_fail_to_pass_and_unchanged_checks_pass(run, make_run):
    fixed = make_run(broken=False)
    result = compare(run, fixed)
    assert not any(r.failing for r in result.checks)
    assert {"improved", "unchanged"} <= {r.verdict for r in result.checks}


def test_a_check_that_vanished_from_a_task_that_still_ran_fails(run):
    current = dataclasses.replace(run, tasks=tuple(
        dataclasses.replace(t, checks=tuple(c for c in t.checks if c.check != "C8")) for t in run.tasks))
    failing = [r for r in compare(run, current).checks if r.failing]
    assert failing and all(r.key[3] == "C8" and r.verdict == "REGRESSION: check no longer reported"
                           for r in failing)


def test_a_task_that_newly_errors_fails_and_a_task_not_run_is_only_reported(run, make_run):
    healthy = make_run(broken=False)
    errored = dataclasses.replace(healthy, tasks=tuple(
        dataclasses.replace(t, status=RunStatus.ERRORED, reason="agent binary missing", checks=())
        if t.task == "interrupt-timeout" else t
        for t in healthy.tasks))
    failing = [r for r in compare(healthy, errored).checks if r.failing]
    assert {(r.key[2], r.key[3]) for r in failing} == {("interrupt-timeout", "(task)")}
    assert not any(r.failing for r in compare(healthy, errored).checks if r.key[3] != "(task)")
    fewer = dataclasses.replace(healthy, tasks=tuple(t for t in healthy.tasks if t.task != "interrupt-timeout"))
    rows = compare(healthy, fewer).checks
    assert not any(r.failing for r in rows)
    assert any(r.verdict == "not checked now: no evidence of change" for r in rows)


def test_rows_are_in_the_contracts_order(run):
    """C1 … C13, then the advisory A1: never A1 first, never C13 before C3."""
    rows = [r.key[3] for r in compare(run, run).checks if r.key[1:3] == ("http", "interrupt-cancel")]
    assert rows == ["(task)", "C1", "C3", "C5", "C8", "C9", "C13", "A1"]


def test_failpoint_tasks_are_not_gated():
    """A mutant run is expected to fail its checks: its pass -> fail is no regression."""
    def with_mutant(outcome: Outcome) -> RunResult:
        plain = latency_run([1e6] * 3)
        check = CheckResult("C3", outcome, Evidence("mutant"), name="pending_tool_calls_close")
        mutant = TaskResult("interrupt-cancel", "ref", "http", 0, (check,), mutant="skip-tree-kill")
        return dataclasses.replace(plain, tasks=plain.tasks + (mutant,))

    result = compare(with_mutant(Outcome.PASS), with_mutant(Outcome.FAIL))
    assert not result.failed
    assert {r.verdict for r in result.checks} == {"unchanged"}


def test_agents_are_matched_by_name_only_when_a_file_holds_several(run, rival):
    renamed = dataclasses.replace(run, tasks=tuple(dataclasses.replace(t, agent="reference-2") for t in run.tasks),
                                  latencies=tuple(dataclasses.replace(s, agent="reference-2") for s in run.latencies))
    assert {r.verdict for r in compare(run, renamed).checks} == {"unchanged"}
    both = RunResult(run.run, run.tasks + rival.tasks, run.latencies + rival.latencies)
    keys = {r.key[0] for r in compare(both, both).checks}
    assert keys == {"reference", "other-agent"}


def test_table_names_every_row_and_ends_with_the_decision():
    rng = random.Random(0)
    result = compare(latency_run(noisy(rng, 20, 150e6)), latency_run(noisy(rng, 20, 300e6)))
    text = format_gate(result)
    assert "interrupt-cancel" in text and "L3" in text and "REGRESSION: slower beyond tolerance" in text
    assert text.rstrip().splitlines()[-1].startswith("gate: FAIL (0 check regression(s), 1 latency regression(s))")
    quiet = format_gate(compare(latency_run([1e6] * 3), latency_run([2e6] * 3)))
    assert "no evidence of change" in quiet and quiet.rstrip().splitlines()[-1].startswith("gate: pass")


def write(path, run: RunResult):
    path.write_text(results_text(run))
    return str(path)


def test_gate_main_exit_codes(tmp_path, capsys):
    rng = random.Random(0)
    base = write(tmp_path / "base.json", latency_run(noisy(rng, 20, 150e6)))
    same = write(tmp_path / "same.json", latency_run(noisy(rng, 20, 150e6)))
    slow = write(tmp_path / "slow.json", latency_run(noisy(rng, 20, 300e6)))
    broken = write(tmp_path / "broken.json", latency_run(noisy(rng, 20, 150e6), outcome=Outcome.FAIL))
    assert gate_main(["--baseline", base, "--current", same]) == 0
    assert "no evidence of change" in capsys.readouterr().out
    assert gate_main(["--baseline", base, "--current", slow]) == 1
    assert gate_main(["--baseline", base, "--current", broken]) == 1
    assert gate_main(["--baseline", base, "--current", slow, "--tolerance", "5"]) == 0
    capsys.readouterr()
    summary = tmp_path / "gate.md"
    assert gate_main(["--baseline", base, "--current", slow, "--md", str(summary)]) == 1
    text = summary.read_text()
    assert text.startswith("## gate: FAIL (0 check regression(s), 1 latency regression(s))")
    assert "| * | http | interrupt-cancel | L3 | 20/20 |" in text and "REGRESSION: slower beyond tolerance" in text
    assert text.splitlines()[-1].startswith("| ")
    capsys.readouterr()


@pytest.mark.parametrize("content,problem", [
    (None, "no such file"),
    ("{not json", "not JSON"),
    (json.dumps({"format": "stopbench-results", "version": 99}), "version 99 is not supported"),
])
def test_gate_main_refuses_unusable_input_naming_the_file(tmp_path, capsys, content, problem):
    base = write(tmp_path / "base.json", latency_run([1, 2, 3]))
    bad = tmp_path / "current.json"
    if content is not None:
        bad.write_text(content)
    assert gate_main(["--baseline", base, "--current", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and problem in err


def test_gate_main_refuses_bad_options_and_empty_files(tmp_path, capsys):
    base = write(tmp_path / "base.json", latency_run([1, 2, 3]))
    assert gate_main(["--baseline", base, "--current", base, "--alpha", "0"]) == 2
    assert "--alpha" in capsys.readouterr().err
    empty = write(tmp_path / "empty.json", RunResult({"agent": "x"}, (), ()))
    assert gate_main(["--baseline", empty, "--current", empty]) == 2
    assert "no task results or latency samples to compare" in capsys.readouterr().err


def test_a_negative_baseline_median_is_compared_by_difference():
    """L4 may be negative (early exit): no ratio then, growth is measured against |median|."""
    rng = random.Random(8)
    early = [-5_000_000 + int(rng.gauss(0, 500_000)) for _ in range(20)]
    late = [50_000_000 + int(rng.gauss(0, 500_000)) for _ in range(20)]
    (row,) = compare(latency_run(early, latency="L4"), latency_run(late, latency="L4")).latencies
    assert row.ratio is None and row.interval is None
    assert row.failing and row.verdict == "REGRESSION: slower beyond tolerance"
    steady = [-5_000_000 + int(rng.gauss(0, 50_000)) for _ in range(20)]
    nudged = [-4_800_000 + int(rng.gauss(0, 50_000)) for _ in range(20)]  # 0.2 ms later: under 10 % of 5 ms
    (small,) = compare(latency_run(steady, latency="L4"), latency_run(nudged, latency="L4")).latencies
    assert small.verdict == "slower, within tolerance" and not small.failing


def test_too_few_samples_name_the_repeat_that_would_decide():
    """One sample per repeat, 3 repeats a side: the gate's own rule asks for 5 a side at alpha 0.01."""
    (row,) = compare(latency_run([1e6, 1.1e6, 1.2e6]), latency_run([9e6, 9.5e6, 9.9e6])).latencies
    assert row.verdict == TOO_FEW and row.repeat_to_decide == 5
    assert "too few samples to tell (--repeat 5 in both runs would decide)" in format_gate(
        compare(latency_run([1e6, 1.1e6, 1.2e6]), latency_run([9e6, 9.5e6, 9.9e6])))
    twice = [LatencySample("L1", 1000 + k, "ref", "http", "interrupt-cancel", 0) for k in range(2)]
    one_repeat = RunResult({"agent": "ref"}, (), tuple(twice))
    (row,) = compare(one_repeat, one_repeat).latencies
    assert row.repeat_to_decide == 3  # 2 samples a repeat: 6 against 6 can decide, 4 against 4 cannot
    for per_repeat in (1, 2, 4):
        for alpha in (0.01, 0.05, 0.001):
            at = repeat_to_decide(per_repeat, per_repeat, alpha)
            assert at is not None and not too_few(per_repeat * at, per_repeat * at, alpha)
            assert at == 1 or too_few(per_repeat * (at - 1), per_repeat * (at - 1), alpha)


def test_checks_not_checked_now_are_folded_into_one_line_with_a_count(make_run):
    healthy = make_run(broken=False)
    fewer = dataclasses.replace(healthy, tasks=tuple(t for t in healthy.tasks if t.task != "interrupt-timeout"))
    result = compare(healthy, fewer)
    unchecked = sum(r.verdict == NOT_CHECKED for r in result.checks)
    assert unchecked > 1
    lines = format_gate(result).splitlines()
    assert [line for line in lines if NOT_CHECKED in line] == [
        f"checks: {len(result.checks)} compared, {len(result.checks) - unchecked} unchanged, {unchecked} "
        f"{NOT_CHECKED} (their task did not run in the current run)"]


def test_an_advisory_check_that_got_worse_is_shown_and_gated_only_when_asked(tmp_path, capsys):
    def advisory(outcome: Outcome) -> RunResult:
        plain = latency_run([1e6] * 3)
        a1 = CheckResult("A1", outcome, Evidence("resume note"), Tier.ADVISORY, name="resume_note_is_sent")
        return dataclasses.replace(plain, tasks=(dataclasses.replace(plain.tasks[0],
                                                                     checks=plain.tasks[0].checks + (a1,)),))

    result = compare(advisory(Outcome.PASS), advisory(Outcome.FAIL))
    assert not result.failed
    (row,) = [r for r in result.checks if r.key[3] == "A1"]
    assert row.verdict == "advisory, not gated: pass -> fail"
    assert "1 advisory check(s) got worse, not gated: --advisory gates them" in decision(result)
    assert compare(advisory(Outcome.PASS), advisory(Outcome.FAIL), advisory=True).failed
    base, worse = write(tmp_path / "base.json", advisory(Outcome.PASS)), write(tmp_path / "w.json",
                                                                              advisory(Outcome.FAIL))
    assert gate_main(["--baseline", base, "--current", worse]) == 0
    assert gate_main(["--baseline", base, "--current", worse, "--advisory"]) == 1
    capsys.readouterr()


def _one_task(outcomes: dict[str, Outcome], because: dict[str, str] | None = None) -> RunResult:
    """One interrupt-cancel run with these check outcomes; ``because`` names, per check, the
    earlier check whose fact its failure rests on."""
    because = because or {}
    checks = tuple(CheckResult(c, o, Evidence(f"{c} {o.value}"), consequence_of=because.get(c))
                   for c, o in outcomes.items())
    return RunResult({"agent": "ref"}, (TaskResult("interrupt-cancel", "ref", "http", 0, checks),), ())


def test_a_consequence_that_goes_pass_to_fail_is_shown_under_its_cause_and_not_counted():
    P, F = Outcome.PASS, Outcome.FAIL
    baseline = _one_task({"C3": P, "C4": P, "C5": P, "C8": P})
    current = _one_task({"C3": F, "C4": P, "C5": F, "C8": F}, because={"C8": "C3"})
    result = compare(baseline, current)
    failing = [r.key[3] for r in result.checks if r.failing]
    assert failing == ["C3", "C5"]
    c8 = next(r for r in result.checks if r.key[3] == "C8")
    assert (c8.consequence_of, c8.failing) == ("C3", False)
    assert c8.verdict == "pass -> fail, a consequence of C3 (counted there)"
    changed = [r.key[3] for r in result.checks if r.verdict != "unchanged"]
    assert changed == ["C3", "C8", "C5"]  # the consequence right under its cause
    text = format_gate(result)
    lines = [line for line in text.splitlines() if "interrupt-cancel" in line and "fail" in line]
    assert [line.split()[3:5] for line in lines] == [["C3", "mandatory"], ["↳", "C8"], ["C5", "mandatory"]]
    assert text.rstrip().splitlines()[-1] == ("gate: FAIL (2 check regression(s), 0 latency regression(s); "
                                              "1 consequence(s) of another check's failure, not counted)")


def test_a_check_failing_on_its_own_in_any_repeat_is_a_regression_even_if_another_repeat_is_a_consequence():
    P, F = Outcome.PASS, Outcome.FAIL
    baseline = _one_task({"C3": P, "C8": P})
    second = _one_task({"C3": P, "C8": F}).tasks[0]
    current = _one_task({"C3": F, "C8": F}, because={"C8": "C3"})
    current = dataclasses.replace(current, tasks=current.tasks + (dataclasses.replace(second, repeat=1),))
    c8 = next(r for r in compare(baseline, current).checks if r.key[3] == "C8")
    assert (c8.verdict, c8.failing, c8.consequence_of) == ("REGRESSION: pass -> fail", True, None)


def test_a_consequence_whose_cause_failed_before_too_is_shown_under_it_and_passes_the_gate():
    P, F = Outcome.PASS, Outcome.FAIL
    baseline = _one_task({"C3": F, "C8": P})
    current = _one_task({"C3": F, "C8": F}, because={"C8": "C3"})
    result = compare(baseline, current)
    assert not result.failed
    table = [line.split()[3:] for line in format_gate(result).splitlines() if "interrupt-cancel" in line]
    assert [row[:2] for row in table] == [["C3", "mandatory"], ["↳", "C8"]]
    assert table[0][-1] == "unchanged"
