"""The CI gate: did this run get worse than the stored baseline?

Two kinds of evidence, two rules:

* Checks are deterministic verdicts: a mandatory check that passed in every baseline repeat
  and fails in any current repeat fails the gate, always. So does a check
  that vanished from a task that still ran, and a task the harness could no longer run.
  A failure that rests on the same fact as an earlier check's (``consequence_of``: one
  defect, one failure) is no regression of its own: its row is shown under its cause's,
  linked to it, and not counted.
* Latencies are noisy samples. A latency regresses only when both hold:
  the current sample is significantly larger (one-sided Mann-Whitney U, p < alpha), and
  the median grew by more than the tolerance (``median_cur - median_base >
  tolerance * max(|median_base|, FLOOR_NS)``, i.e. ``ratio > 1 + tolerance`` for any
  positive baseline median above a microsecond). When the test is not significant the
  gate says "no evidence of change" — also when the samples are too few for any
  arrangement of them to reach alpha, which it says too.

With both samples from one distribution, the chance that a latency row is flagged is at
most alpha (the test's size; the tolerance only lowers it), so with k latency rows the
gate's false-alarm rate is at most k × alpha.

Rows are matched on adapter × task × check (or latency ID), and also on the agent when a
file holds more than one agent. Failpoint (mutant) tasks are not gated. Advisory and
informational checks are shown, not scored: their pass -> fail is reported, and fails the
gate only when asked (``advisory=True``, ``--advisory``).

Latencies are only comparable on comparable machines. Every run records what its machine
cost and how loaded it was (``run.machine``); the gate shows both runs' load beside every
latency verdict, and when the machines differ (``machines_differ``) it judges no latency:
each row says "not comparable: machine differs", never "regression" nor "faster".

This module decides; ``harness.report.gate_text`` writes the decision for a person.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.contract import check_order
from harness.model import CheckResult, Outcome, RunResult, RunStatus, TaskResult
from harness.report.aggregate import fold, latency_order
from harness.report.load import finite_number
from harness.report.stats import RatioInterval, bootstrap_median_ratio, mann_whitney_greater, median_ratio

FLOOR_NS = 1_000  # below a microsecond, differences are compared against this instead of the median
TASK_ROW = "(task)"  # the pseudo-check that stands for "the task ran without a harness error"
# Two runs' machines differ when their CPU counts differ, when their busiest 1-minute load
# per CPU (at the run's start or end) is further apart than this, or when spawning a null
# agent cost one of them this many times what it cost the other.
LOAD_PER_CPU_APART = 0.5
NULL_SPAWN_APART = 2.0
NOT_COMPARABLE = "not comparable: machine differs"
TOO_FEW = "no evidence of change: too few samples to tell"
NOT_CHECKED = "not checked now: no evidence of change"
NOT_GATED = "not gated"
# The tiers a check is scored in; the others (advisory, informational) are gated on request.
GATED_TIERS = ("mandatory", "harness")


@dataclass(frozen=True)
class MachineLoad:
    """What a run recorded of its machine (for a merge, its busiest shard's)."""

    load_per_cpu: float | None
    cpus: int | None
    spawn_ms: float | None

    @classmethod
    def of(cls, run: RunResult) -> MachineLoad | None:
        shards = [m.get("machine") for m in run.run.get("merged_from") or () if isinstance(m, dict)]
        records = [m for m in (shards or [run.run.get("machine")]) if isinstance(m, dict)]
        if not records:
            return None
        loads = [load for m in records for load in _loads(m)]
        cpus = {c for m in records if isinstance(c := m.get("cpus"), int)}
        spawns = [m["null_spawn_exit_ms"] for m in records if finite_number(m.get("null_spawn_exit_ms"))]
        return cls(load_per_cpu=max(loads) if loads else None, cpus=max(cpus) if cpus else None,
                   spawn_ms=max(spawns) if spawns else None)

    @property
    def text(self) -> str:
        return "-" if self.load_per_cpu is None else f"{self.load_per_cpu:.2f}"


def _loads(machine: dict) -> list[float]:
    """The 1-minute load per CPU when the run began and when it ended, as far as recorded."""
    cpus = machine.get("cpus")
    if not isinstance(cpus, int) or cpus < 1:
        return []
    averages = [machine.get("loadavg"), machine.get("loadavg_end")]
    return [a[0] / cpus for a in averages if isinstance(a, list) and a and finite_number(a[0])]


def machines_differ(before: MachineLoad | None, after: MachineLoad | None) -> str | None:
    """How the two runs' machines differ, or None when they compare (or either is unknown)."""
    if before is None or after is None:
        return None
    if before.cpus is not None and after.cpus is not None and before.cpus != after.cpus:
        return f"{before.cpus} vs {after.cpus} CPUs"
    if before.load_per_cpu is not None and after.load_per_cpu is not None \
            and abs(before.load_per_cpu - after.load_per_cpu) > LOAD_PER_CPU_APART:
        return f"load per CPU {before.text} vs {after.text}"
    if before.spawn_ms and after.spawn_ms \
            and max(before.spawn_ms, after.spawn_ms) / min(before.spawn_ms, after.spawn_ms) >= NULL_SPAWN_APART:
        return f"a null agent's spawn to exit {before.spawn_ms:g} ms vs {after.spawn_ms:g} ms"
    return None


@dataclass(frozen=True)
class CheckRow:
    key: tuple[str, str, str, str]  # agent ("*" when one per file), adapter, task, check
    tier: str
    before: str | None  # folded status, or None when absent
    after: str | None
    verdict: str
    failing: bool
    consequence_of: str | None = None  # every current failure rests on this earlier check's fact


@dataclass(frozen=True)
class LatencyRow:
    key: tuple[str, str, str, str]  # agent, adapter, task, latency ID
    n_before: int
    n_after: int
    median_before: float | None
    median_after: float | None
    ratio: float | None
    interval: RatioInterval | None
    p_slower: float | None
    verdict: str
    failing: bool
    # With too few samples: the ``--repeat`` that would give both runs enough to decide.
    repeat_to_decide: int | None = None


@dataclass(frozen=True)
class GateResult:
    checks: tuple[CheckRow, ...]
    latencies: tuple[LatencyRow, ...]
    tolerance: float
    alpha: float
    machine_before: MachineLoad | None = None
    machine_after: MachineLoad | None = None
    machine_differs: str | None = None  # how, when the latencies are not comparable

    @property
    def failed(self) -> bool:
        return any(r.failing for r in self.checks) or any(r.failing for r in self.latencies)


def consequence_of(check: CheckResult) -> str | None:
    """The earlier check whose fact this failure rests on: the result's own field when it
    has one, else an evidence item that names it (results written before the field)."""
    own = getattr(check, "consequence_of", None)
    if own:
        return str(own)
    return next((str(item["consequence_of"]) for item in check.evidence.items if item.get("consequence_of")), None)


def consequences(run: RunResult, row_key: Callable[[TaskResult, CheckResult], tuple]) -> dict[tuple, str]:
    """Per row (``row_key``), the earlier check every failure of it rests on, when they all
    rest on one; failpoint tasks and task runs that did not run are left out."""
    earlier: dict[tuple, set[str | None]] = {}
    for t in run.tasks:
        if t.mutant is None and t.status is RunStatus.RAN:
            for c in t.checks:
                if c.outcome is Outcome.FAIL:
                    earlier.setdefault(row_key(t, c), set()).add(consequence_of(c))
    return {key: check for key, found in earlier.items() if len(found) == 1 and (check := next(iter(found)))}


def _check_statuses(run: RunResult, key_of) -> tuple[dict, dict, set]:
    outcomes: dict[tuple, list[Outcome]] = {}
    tiers: dict[tuple, str] = {}
    tasks_checked: set[tuple] = set()  # ran (its checks are verdicts) at least once
    for t in run.tasks:
        if t.mutant is not None:
            continue
        task_key = (key_of(t.agent), t.adapter, t.task)
        if t.status is RunStatus.RAN:
            tasks_checked.add(task_key)
        outcomes.setdefault((*task_key, TASK_ROW), []).append(Outcome.FAIL if t.error else Outcome.PASS)
        tiers[(*task_key, TASK_ROW)] = "harness"
        for c in t.checks:
            outcomes.setdefault((*task_key, c.check), []).append(c.outcome)
            tiers[(*task_key, c.check)] = c.tier.value
    return {k: fold(v) for k, v in outcomes.items()}, tiers, tasks_checked


def agent_key(baseline: RunResult, current: RunResult) -> Callable[[str], str]:
    """Ignore agent names when each file holds one agent (a renamed or re-versioned agent is
    still compared with its baseline); match on them otherwise."""
    both_single = all(len({t.agent for t in r.tasks} | {s.agent for s in r.latencies}) <= 1
                      for r in (baseline, current))
    return (lambda agent: "*") if both_single else (lambda agent: agent)


def compare(baseline: RunResult, current: RunResult, tolerance: float = 0.10, alpha: float = 0.01,
            advisory: bool = False) -> GateResult:
    """The gate's rows; ``advisory`` gates advisory and informational checks too."""
    agent_key_of = agent_key(baseline, current)
    before, tiers_b, _ = _check_statuses(baseline, agent_key_of)
    after, tiers_c, checked_now = _check_statuses(current, agent_key_of)
    follows = consequences(current, lambda t, c: (agent_key_of(t.agent), t.adapter, t.task, c.check))
    checks = [_check_row(key, tiers_c.get(key) or tiers_b[key], before.get(key), after.get(key),
                         key[:3] in checked_now, follows.get(key))
              for key in sorted(before.keys() | after.keys(), key=_row_order)]
    if not advisory:
        checks = [_not_gated(row) for row in checks]
    samples_b, samples_c = _samples(baseline, agent_key_of), _samples(current, agent_key_of)
    per_repeat_b, per_repeat_c = _per_repeat(baseline, agent_key_of), _per_repeat(current, agent_key_of)
    machine_b, machine_c = MachineLoad.of(baseline), MachineLoad.of(current)
    differs = machines_differ(machine_b, machine_c)
    latencies = [
        _with_repeat_to_decide(
            _latency_row(key, samples_b.get(key, []), samples_c.get(key, []), tolerance, alpha, differs is not None),
            per_repeat_b.get(key, 0.0), per_repeat_c.get(key, 0.0), alpha)
        for key in sorted(samples_b.keys() | samples_c.keys(), key=_latency_row_order)
    ]
    return GateResult(_under_causes(checks), tuple(latencies), tolerance, alpha, machine_b, machine_c, differs)


def _under_causes(rows: Sequence[CheckRow]) -> tuple[CheckRow, ...]:
    """The rows in order, each consequence moved right under its cause's row (same agent,
    adapter and task)."""
    placed = [r for r in rows if r.consequence_of is None]
    for row in (r for r in rows if r.consequence_of is not None):
        cause = (*row.key[:3], row.consequence_of)
        at = next((i for i, r in enumerate(placed) if r.key == cause), None)
        if at is None:
            placed.append(row)
            continue
        while at + 1 < len(placed) and placed[at + 1].consequence_of == cause[3] \
                and placed[at + 1].key[:3] == cause[:3]:
            at += 1
        placed.insert(at + 1, row)
    return tuple(placed)


def _row_order(key: tuple[str, str, str, str]) -> tuple:
    """Agent, adapter, task, then the task row and the checks in the contract's order."""
    agent, adapter, task, check = key
    return (agent, adapter, task, check != TASK_ROW, check_order(check), check)


def _latency_row_order(key: tuple[str, str, str, str]) -> tuple:
    agent, adapter, task, latency = key
    return (agent, adapter, task, latency_order(latency))


def _check_row(key, tier: str, before: str | None, after: str | None, task_checked: bool,
               cause: str | None = None) -> CheckRow:
    if before == "pass" and after == "fail":
        if cause is not None:
            return CheckRow(key, tier, before, after, f"pass -> fail, a consequence of {cause} (counted there)",
                            False, cause)
        return CheckRow(key, tier, before, after, "REGRESSION: pass -> fail", True)
    if before is not None and after is None:
        if task_checked:
            return CheckRow(key, tier, before, after, "REGRESSION: check no longer reported", True)
        return CheckRow(key, tier, before, after, NOT_CHECKED, False)
    if before is None:
        return CheckRow(key, tier, before, after, "new", False)
    if before == after:
        return CheckRow(key, tier, before, after, "unchanged", False)
    if after == "pass":
        return CheckRow(key, tier, before, after, "improved", False)
    return CheckRow(key, tier, before, after, f"changed: {before} -> {after}", False)


def _not_gated(row: CheckRow) -> CheckRow:
    """An advisory or informational check's regression, shown but not failing the gate."""
    if not row.failing or row.tier in GATED_TIERS:
        return row
    return dataclasses.replace(row, verdict=f"{row.tier}, {NOT_GATED}: {row.verdict.removeprefix('REGRESSION: ')}",
                               failing=False)


def _samples(run: RunResult, key_of) -> dict[tuple, list[int]]:
    out: dict[tuple, list[int]] = {}
    for s in run.latencies:
        out.setdefault((key_of(s.agent), s.adapter, s.task, s.latency), []).append(s.value_ns)
    return out


def _latency_row(key, base: Sequence[int], cur: Sequence[int], tolerance: float, alpha: float,
                 machine_differs: bool = False) -> LatencyRow:
    if not base or not cur:
        verdict = "new: no baseline samples" if not base else "no evidence of change: no current samples"
        return LatencyRow(key, len(base), len(cur), _median(base), _median(cur), None, None, None, verdict, False)
    med_b, med_c = statistics.median(base), statistics.median(cur)
    slower = mann_whitney_greater(base, cur).p_value
    faster = mann_whitney_greater(cur, base).p_value
    row = dict(key=key, n_before=len(base), n_after=len(cur), median_before=med_b, median_after=med_c,
               ratio=median_ratio(base, cur), p_slower=slower)
    if machine_differs:  # the figures are shown; what they mean cannot be told
        return LatencyRow(**row, interval=None, verdict=NOT_COMPARABLE, failing=False)
    if too_few(len(base), len(cur), alpha):
        return LatencyRow(**row, interval=None, verdict=TOO_FEW, failing=False)
    row["interval"] = bootstrap_median_ratio(base, cur, confidence=1 - 2 * alpha)
    if slower < alpha:
        if med_c - med_b > tolerance * max(abs(med_b), FLOOR_NS):
            return LatencyRow(**row, verdict="REGRESSION: slower beyond tolerance", failing=True)
        return LatencyRow(**row, verdict="slower, within tolerance", failing=False)
    if faster < alpha:
        return LatencyRow(**row, verdict="faster", failing=False)
    return LatencyRow(**row, verdict="no evidence of change", failing=False)


def too_few(n_before: int, n_after: int, alpha: float) -> bool:
    """The gate's sample-size rule: too few when even the most extreme arrangement of the two
    samples (every current value above every baseline one) could not reach ``alpha``."""
    return 1 / math.comb(n_before + n_after, n_after) >= alpha


def _per_repeat(run: RunResult, key_of) -> dict[tuple, float]:
    """How many samples of each latency row one repeat of its task gave in this run."""
    repeats: dict[tuple, list[int]] = {}
    for s in run.latencies:
        repeats.setdefault((key_of(s.agent), s.adapter, s.task, s.latency), []).append(s.repeat)
    return {key: len(seen) / len(set(seen)) for key, seen in repeats.items()}


def repeat_to_decide(per_repeat_before: float, per_repeat_after: float, alpha: float) -> int | None:
    """The smallest ``--repeat`` (the same in both runs) whose samples the sample-size rule
    lets the gate decide on; None when a side measured nothing to scale."""
    if per_repeat_before <= 0 or per_repeat_after <= 0:
        return None
    repeat = 1
    while too_few(max(1, math.floor(per_repeat_before * repeat)), max(1, math.floor(per_repeat_after * repeat)),
                  alpha):
        repeat += 1
    return repeat


def _with_repeat_to_decide(row: LatencyRow, per_before: float, per_after: float, alpha: float) -> LatencyRow:
    if row.verdict != TOO_FEW:
        return row
    return dataclasses.replace(row, repeat_to_decide=repeat_to_decide(per_before, per_after, alpha))


def _median(values: Sequence[int]) -> float | None:
    return statistics.median(values) if values else None
