"""Scoreboards: one agent on one adapter in one results file, and its latencies.

A scoreboard's task runs are counted by what became of them (ran, not run, not exercised,
errored); only the runs that ran carry verdicts of their checks. Tasks run with a failpoint
(``mutant``) are kept apart: they are expected to fail and are never failures of the agent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.contract import LATENCY_IDS, Verdict
from harness.model import VERDICT_ORDER, RunResult, RunStatus, TaskResult, combine_verdicts, task_verdict
from harness.model.drivers import DRIVERS
from harness.model.fit import fits_over
from harness.report.aggregate.invariants import Standings
from harness.report.aggregate.outcomes import Cell, Finding, findings, ordered_checks
from harness.report.latency import StopwatchError, Summary, percentile, recorded_floors, sample_driver

NOTHING_RAN = "nothing ran"

# Task runs by what became of them, in the order the reports count them.
RUN_STATUSES = (RunStatus.RAN, RunStatus.NOT_RUN, RunStatus.NOT_EXERCISED, RunStatus.ERRORED, RunStatus.PROFILE_PROBLEM)
STATUS_COLUMNS = tuple(s.value for s in RUN_STATUSES)
# A scoreboard's tally of task runs and invariants (harness.report.aggregate.invariants).
TALLY_COLUMNS = ("held", "defects")
def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


@dataclass(frozen=True)
class Scoreboard:
    index: int  # position among the report's scoreboards (unique, for anchors)
    file: int  # index of the results file it comes from
    label: str  # the agent as shown (made unique across several results files)
    agent: str
    version: str
    adapter: str
    tasks: tuple[TaskResult, ...]  # without mutants
    mutants: tuple[TaskResult, ...]
    samples: Mapping[tuple[str, str], tuple[int, ...]]  # (task, latency ID) -> values, in order
    incomplete: bool = False  # the run itself was cut short
    anchors: Mapping[int, str] = field(default_factory=dict)  # position in ``tasks`` -> the run's anchor id
    # (task, latency ID) -> the stopwatch's error its run recorded there (none: no floor was measured)
    errors: Mapping[tuple[str, str], StopwatchError] = field(default_factory=dict)

    def anchor(self, task: TaskResult) -> str:
        for i, t in enumerate(self.tasks):
            if t is task:
                return self.anchors[i]
        raise KeyError(task.task)

    @property
    def checks(self) -> list[str]:
        return ordered_checks({c.check for t in self.tasks for c in t.checks})

    @property
    def task_names(self) -> list[str]:
        return list(dict.fromkeys(t.task for t in self.tasks))

    def cell(self, task: str, check: str) -> Cell | None:
        """The check over the runs of one task; None when it is not a check of that task (a
        task whose runs all ended without checks, e.g. errored, shows its status in every column)."""
        runs = [t for t in self.tasks if t.task == task]
        if not any(c.check == check for t in runs for c in t.checks) and (not runs or any(t.checks for t in runs)):
            return None
        results = tuple((t, c) for t in runs if t.status is RunStatus.RAN for c in t.checks if c.check == check)
        return Cell(task, check, results, tuple(t for t in runs if t.status is not RunStatus.RAN))

    def tier(self, check: str) -> str:
        tiers = {c.tier.value for t in self.tasks for c in t.checks if c.check == check}
        return "mandatory" if "mandatory" in tiers or not tiers else sorted(tiers)[0]

    @property
    def profile_fits(self) -> str:
        """Whether the profile fit the agent over the board's runs (harness.model.fit): yes, no (what), unknown."""
        return fits_over(self.tasks)

    def count(self, status: RunStatus) -> int:
        return sum(t.status is status for t in self.tasks)

    @property
    def ran(self) -> tuple[TaskResult, ...]:
        """The task runs that ran (their checks are verdicts)."""
        return tuple(t for t in self.tasks if t.status is RunStatus.RAN)

    @property
    def retries(self) -> int:
        return sum(len(t.attempts) for t in self.tasks)

    @property
    def level(self) -> Verdict | None:
        """The contract's verdict for this agent on this adapter; None when nothing counted."""
        verdicts = [v for t in self.tasks if (v := task_verdict(t)) is not None]
        if not verdicts:
            return None
        return combine_verdicts(verdicts + ([Verdict.INCOMPLETE] if self.incomplete else []))

    @property
    def verdict(self) -> str:
        return self.level.value if self.level else NOTHING_RAN

    @property
    def standings(self) -> Standings:
        """Where this agent on this adapter stands on each invariant (held, broken, …)."""
        return Standings.of(self.tasks)

    @property
    def outcomes(self) -> Counter:
        return Counter(c.outcome.value for t in self.ran for c in t.checks)

    @property
    def findings(self) -> list[Finding]:
        return findings(self.tasks)

    def summaries(self) -> dict[tuple[str, str], Summary]:
        return {key: Summary.of(values) for key, values in sorted(self.samples.items(),
                                                                  key=lambda kv: (latency_order(kv[0][1]), kv[0][0]))}

    def pooled(self) -> dict[str, tuple[int, ...]]:
        """Latency ID -> every value on this adapter, all tasks together (for the plots)."""
        pooled: dict[str, list[int]] = {}
        for (_, latency), values in sorted(self.samples.items(), key=lambda kv: latency_order(kv[0][1])):
            pooled.setdefault(latency, []).extend(values)
        return {k: tuple(v) for k, v in pooled.items()}

    def median(self, latency: str) -> int | None:
        """p50 of one latency over all tasks on this adapter: the scoreboard's headline figure."""
        values = self.pooled().get(latency)
        return int(percentile(values, 50)) if values else None

    @property
    def rank_key(self) -> tuple:
        """More invariants held, then fewer defects (each counted once), then the better verdict
        level. Unknown counts for nothing either way: an agent that could run few tasks holds
        few invariants, it does not score a better ratio."""
        level = VERDICT_ORDER[::-1].index(self.level) if self.level else len(VERDICT_ORDER)
        return (*self.standings.rank_key, level, self.label, self.adapter)


def latency_order(latency: str) -> tuple[int, str]:
    return (LATENCY_IDS.index(latency) if latency in LATENCY_IDS else len(LATENCY_IDS), latency)


def scoreboards(runs: Sequence[RunResult]) -> list[Scoreboard]:
    """One scoreboard per results file × agent × adapter × surface (the agent's own command line
    or API, or a protocol such as ACP: the same agent reached two ways is two rows), in file
    order then first appearance."""
    keys: list[tuple[int, str, str, str]] = []
    for i, run in enumerate(runs):
        for agent, adapter, surface in [(t.agent, t.adapter, _surface(t.driver)) for t in run.tasks] + [
            (s.agent, s.adapter, _surface(sample_driver(s))) for s in run.latencies
        ]:
            if (i, agent, adapter, surface) not in keys:
                keys.append((i, agent, adapter, surface))
    repeated = _in_several_files(keys)
    versions = [str(run.run.get("agent_version") or "") for run in runs]
    boards = []
    used: set[str] = set()
    for index, (i, agent, adapter, surface) in enumerate(keys):
        run = runs[i]
        tasks = [t for t in run.tasks if (t.agent, t.adapter, _surface(t.driver)) == (agent, adapter, surface)]
        samples: dict[tuple[str, str], list[int]] = {}
        drivers: dict[tuple[str, str], set[str]] = {}
        for s in run.latencies:
            if (s.agent, s.adapter, _surface(sample_driver(s))) == (agent, adapter, surface):
                samples.setdefault((s.task, s.latency), []).append(s.value_ns)
                drivers.setdefault((s.task, s.latency), set()).add(sample_driver(s))
        floors = recorded_floors(run.run)
        errors = {key: error for key, found in drivers.items() if (error := floors.error(key[1], found))}
        plain = tuple(t for t in tasks if t.mutant is None)
        anchors = {}
        for n, t in enumerate(plain):
            anchor = f"run-{index + 1}-{_slug(t.task)}-{t.repeat}"
            while anchor in used:
                anchor += "-x"
            used.add(anchor)
            anchors[n] = anchor
        boards.append(Scoreboard(
            index=index,
            file=i,
            label=_label(agent, i, repeated.get((agent, adapter, surface), set()), versions)
            + (f" · {surface}" if surface else ""),
            agent=agent,
            version=str(run.run.get("agent_version") or ""),
            adapter=adapter,
            tasks=plain,
            mutants=tuple(t for t in tasks if t.mutant is not None),
            samples={k: tuple(v) for k, v in samples.items()},
            incomplete=bool(run.run.get("incomplete")),
            anchors=anchors,
            errors=errors,
        ))
    return boards


def _surface(driver: str) -> str:
    """The surface a driver reaches the agent through, when it is its own row ("" otherwise)."""
    spec = DRIVERS.get(driver)
    return spec.surface or "" if spec is not None else ""


def _in_several_files(keys: Sequence[tuple[int, str, str, str]]) -> dict[tuple[str, str, str], set[int]]:
    """The (agent, adapter, surface) rows more than one results file holds, with those files:
    only their rows need telling apart (one agent on several wires is told apart by the
    adapter, reached two ways by the surface)."""
    files_of: dict[tuple[str, str, str], set[int]] = {}
    for i, agent, adapter, surface in keys:
        files_of.setdefault((agent, adapter, surface), set()).add(i)
    return {row: files for row, files in files_of.items() if len(files) > 1}


def _label(agent: str, file: int, files: set[int], versions: Sequence[str]) -> str:
    """The agent as its row shows it: by name; ``name@version`` when other files hold other
    versions of it (a release beside another); ``name (file N)`` when only the file tells
    its rows apart."""
    if not files:
        return agent
    if versions[file] and len({versions[f] for f in files}) == len(files):
        return f"{agent}@{versions[file]}"
    return f"{agent} (file {file + 1})"



def latency_ids(boards: Sequence[Scoreboard]) -> list[str]:
    """The latency IDs measured on any scoreboard, in the contract's order (L1, L2, …)."""
    return sorted({latency for b in boards for _, latency in b.samples}, key=latency_order)


def scoreboard_latencies(boards: Sequence[Scoreboard]) -> list[str]:
    """The latency columns of a scoreboard: those measured on any of them, and no empty one."""
    return latency_ids(boards)
