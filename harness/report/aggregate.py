"""What every renderer shows, computed once from results: scoreboards, failures, latencies.

A *scoreboard* is one agent on one adapter in one results file. Repeats of a task are
folded into one row per check whose status is the worst outcome seen (fail, then unknown,
then pass; skipped only if every repeat skipped), with every repeat's result kept for the
evidence. Tasks run with a failpoint (``mutant``) are expected to fail; they are never
failures of the agent. A failpoint is *caught* when any of its task runs (any task, any
adapter) failed a mandatory check, left one undecided, or could not complete — the runner's
mutation score counts the same way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

from harness.report.latency import Summary, percentile
from harness.model import CheckResult, Outcome, RunResult, TaskResult, Tier, combine_verdicts, task_verdict

STATUS_ORDER = ("fail", "unknown", "pass", "skipped")


def fold(outcomes: Sequence[Outcome]) -> str:
    """The status of a check over repeats: the worst outcome that occurred."""
    seen = {o.value for o in outcomes}
    return next((s for s in STATUS_ORDER if s in seen), "skipped")


@dataclass(frozen=True)
class CheckRow:
    task: str
    check: str
    name: str
    tier: str
    results: tuple[tuple[int, CheckResult], ...]  # (repeat, result)

    @property
    def status(self) -> str:
        return fold([r.outcome for _, r in self.results])

    @property
    def tally(self) -> str:
        """E.g. "2/3" passed of the repeats that were not skipped ("" if all were)."""
        decided = [r for _, r in self.results if r.outcome is not Outcome.SKIPPED]
        return f"{sum(r.outcome is Outcome.PASS for r in decided)}/{len(decided)}" if decided else ""


@dataclass(frozen=True)
class Failure:
    """One check that failed or could not be decided, in one repeat: what the reports list."""

    task: TaskResult
    result: CheckResult | None  # None: the task itself errored before it could be checked

    @property
    def title(self) -> str:
        what = f"{self.result.check} {self.result.name}".strip() if self.result else "task error"
        return f"{self.task.task} #{self.task.repeat}: {what}"


@dataclass(frozen=True)
class Scoreboard:
    file: int  # index of the results file it comes from
    label: str  # the agent as shown (made unique across several results files)
    agent: str
    version: str
    adapter: str
    tasks: tuple[TaskResult, ...]  # without mutants
    mutants: tuple[TaskResult, ...]
    samples: Mapping[tuple[str, str], tuple[int, ...]]  # (task, latency ID) -> values, in order

    @property
    def rows(self) -> list[CheckRow]:
        grouped: dict[tuple[str, str], list[tuple[int, CheckResult]]] = {}
        for t in self.tasks:
            for c in t.checks:
                grouped.setdefault((t.task, c.check), []).append((t.repeat, c))
        return [
            CheckRow(task, check, results[0][1].name, results[0][1].tier.value, tuple(results))
            for (task, check), results in grouped.items()
        ]

    @property
    def ran(self) -> tuple[TaskResult, ...]:
        """The task runs that count: not the ones that do not apply to the agent."""
        return tuple(t for t in self.tasks if task_verdict(t) is not None)

    @property
    def conformant(self) -> int:
        return sum(v.ok for t in self.ran if (v := task_verdict(t)) is not None)

    @property
    def verdict(self) -> str:
        verdicts = [v for t in self.tasks if (v := task_verdict(t)) is not None]
        return combine_verdicts(verdicts).value if verdicts else "nothing ran"

    @property
    def mandatory(self) -> tuple[int, int]:
        """(passed, decided) mandatory check results over all repeats; skipped ones excluded."""
        decided = [c for t in self.tasks for c in t.checks
                   if c.tier is Tier.MANDATORY and c.outcome is not Outcome.SKIPPED]
        return sum(c.outcome is Outcome.PASS for c in decided), len(decided)

    @property
    def outcomes(self) -> Counter:
        return Counter(c.outcome.value for t in self.tasks for c in t.checks)

    @property
    def failures(self) -> list[Failure]:
        found = []
        for t in self.tasks:
            if t.error is not None:
                found.append(Failure(t, None))
            found.extend(Failure(t, c) for c in t.checks if c.outcome in (Outcome.FAIL, Outcome.UNKNOWN))
        return found

    def summaries(self) -> dict[tuple[str, str], Summary]:
        return {key: Summary.of(values) for key, values in sorted(self.samples.items())}

    def pooled(self) -> dict[str, tuple[int, ...]]:
        """Latency ID -> every value on this adapter, all tasks together (for the plots)."""
        pooled: dict[str, list[int]] = {}
        for (_, latency), values in sorted(self.samples.items(), key=lambda kv: kv[0][1]):
            pooled.setdefault(latency, []).extend(values)
        return {k: tuple(v) for k, v in pooled.items()}

    def median(self, latency: str) -> int | None:
        """p50 of one latency over all tasks on this adapter: the scoreboard's headline figure."""
        values = self.pooled().get(latency)
        return percentile(values, 50) if values else None

    @property
    def rank_key(self) -> tuple:
        passed, decided = self.mandatory
        return (-_ratio(self.conformant, len(self.ran)), -_ratio(passed, decided), self.label, self.adapter)


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def scoreboards(runs: Sequence[RunResult]) -> list[Scoreboard]:
    """One scoreboard per results file × agent × adapter, in file order then first appearance."""
    keys: list[tuple[int, str, str]] = []
    for i, run in enumerate(runs):
        for agent, adapter in [(t.agent, t.adapter) for t in run.tasks] + [
            (s.agent, s.adapter) for s in run.latencies
        ]:
            if (i, agent, adapter) not in keys:
                keys.append((i, agent, adapter))
    repeated_agents = _agents_in_several(keys)
    boards = []
    for i, agent, adapter in keys:
        run = runs[i]
        tasks = [t for t in run.tasks if (t.agent, t.adapter) == (agent, adapter)]
        samples: dict[tuple[str, str], list[int]] = {}
        for s in run.latencies:
            if (s.agent, s.adapter) == (agent, adapter):
                samples.setdefault((s.task, s.latency), []).append(s.value_ns)
        boards.append(Scoreboard(
            file=i,
            label=f"{agent} (file {i + 1})" if agent in repeated_agents else agent,
            agent=agent,
            version=str(run.run.get("agent_version") or ""),
            adapter=adapter,
            tasks=tuple(t for t in tasks if t.mutant is None),
            mutants=tuple(t for t in tasks if t.mutant is not None),
            samples={k: tuple(v) for k, v in samples.items()},
        ))
    return boards


def _agents_in_several(keys: Sequence[tuple[int, str, str]]) -> set[str]:
    files_of: dict[str, set[int]] = {}
    for i, agent, _ in keys:
        files_of.setdefault(agent, set()).add(i)
    return {agent for agent, files in files_of.items() if len(files) > 1}


def caught_by(mutant_task: TaskResult) -> list[str]:
    """What gave a failpoint away in one task run: the mandatory checks that failed or
    stayed undecided, or the harness error. Empty when the failpoint went unnoticed."""
    found = ["task error"] if mutant_task.error is not None else []
    return found + [c.check for c in mutant_task.checks
                    if c.tier is Tier.MANDATORY and c.outcome in (Outcome.FAIL, Outcome.UNKNOWN)]


@dataclass(frozen=True)
class FailpointRow:
    """One failpoint of one agent, over every task run made with it."""

    label: str
    failpoint: str
    runs: tuple[TaskResult, ...]
    targets: tuple[str, ...]  # checks the failpoint is meant to break, when the run says

    @property
    def caught_by(self) -> list[str]:
        found = {c for t in self.runs for c in caught_by(t)}
        return sorted(found, key=lambda c: (c != "task error", len(c), c))

    @property
    def caught(self) -> bool:
        return bool(self.caught_by)


def failpoints(runs: Sequence[RunResult], boards: Sequence[Scoreboard]) -> list[FailpointRow]:
    """Per agent (as labelled on the scoreboards) and failpoint, in order of appearance."""
    rows: dict[tuple[str, str], list[TaskResult]] = {}
    targets: dict[tuple[str, str], tuple[str, ...]] = {}
    for i, run in enumerate(runs):
        described = (run.run.get("mutation") or {}).get("mutants") or {}
        for b in boards:
            if b.file != i:
                continue
            for t in b.mutants:
                rows.setdefault((b.label, t.mutant), []).append(t)
                targets[(b.label, t.mutant)] = tuple((described.get(t.mutant) or {}).get("targets") or ())
    return [FailpointRow(label, name, tuple(tasks), targets[(label, name)]) for (label, name), tasks in rows.items()]


def latency_ids(boards: Sequence[Scoreboard]) -> list[str]:
    """The latency IDs measured on any scoreboard, in order (L1, L2, …)."""
    return sorted({latency for b in boards for _, latency in b.samples}, key=lambda x: (len(x), x))


def leaderboard(boards: Sequence[Scoreboard]) -> list[Scoreboard]:
    """Most conformant first: conformant task share, then mandatory checks passed, then name."""
    return sorted(boards, key=lambda b: b.rank_key)


def is_leaderboard(boards: Sequence[Scoreboard]) -> bool:
    return len({b.label for b in boards}) > 1


def verdict(runs: Sequence[RunResult]) -> str:
    if not any(t.mutant is None for r in runs for t in r.tasks):
        return "no task results"
    return combine_verdicts([r.verdict for r in runs]).value


def headline(runs: Sequence[RunResult], boards: Sequence[Scoreboard]) -> str:
    """E.g. "reference: NOT conformant", or "3 agents compared" for a leaderboard."""
    if is_leaderboard(boards):
        return f"{len({b.label for b in boards})} agents compared"
    agents = list(dict.fromkeys([b.label for b in boards] or [str(r.run.get("agent", "")) for r in runs]))
    return f"{' / '.join(agents)}: {verdict(runs)}"
