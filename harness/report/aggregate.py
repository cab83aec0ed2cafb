"""What every renderer shows, computed once from results: scoreboards, cells, findings, latencies.

A *scoreboard* is one agent on one adapter in one results file. Its task runs are counted
by what became of them (ran, not run, not exercised, errored); only the runs that ran carry
verdicts of their checks. A check over the repeats of one task is one *cell* of the check
matrix, which says what its fraction counts: ``3/3 pass`` (passed in all 3 runs that decided
it), ``1/3 fail``, ``unknown``, ``skipped``, ``not run``.

*Findings* are what went wrong, grouped so that identical outcomes read as one line
(``C1, C2, C10, C11: unknown in 12 runs — no log reader …``) and ordered so that real
failures come first: failed mandatory checks, the agent's own failures, harness errors,
undecided mandatory checks, advisory failures, checks undecided only for want of a log
reader, races not exercised, and tasks not run.

Tasks run with a failpoint (``mutant``) are expected to fail; they are never failures of the
agent. A failpoint is *caught* when any of its task runs (any task, any adapter) failed a
mandatory check, left one undecided, or could not complete — the runner's mutation score
counts the same way.

Checks are ordered everywhere by ``harness.contract.check_order`` (C1 … C14, then A1 …).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.contract import LATENCY_IDS, Verdict, check_info, check_order
from harness.model import (
    CheckResult,
    Outcome,
    RunResult,
    RunStatus,
    TaskResult,
    Tier,
    combine_verdicts,
    task_verdict,
)
from harness.report.latency import Summary, percentile

STATUS_ORDER = ("fail", "unknown", "pass", "skipped")

# The contract's verdict levels, in its words, for a reader who meets them on a report.
VERDICT_MEANING: dict[Verdict, str] = {
    Verdict.CONFORMANT: "every mandatory check of every task that applies to the agent passed",
    Verdict.CONFORMANT_BLACK_BOX: "every mandatory check decidable without a log reader passed, and the rest are "
                                  "unknown only because the profile has no reader",
    Verdict.NOT_CONFORMANT: "a mandatory check failed",
    Verdict.INCOMPLETE: "nothing failed, but a task that applies could not run or a check is unknown for "
                        "another reason",
}
NOTHING_RAN = "nothing ran"

# Task runs by what became of them, in the order the reports count them.
RUN_STATUSES = (RunStatus.RAN, RunStatus.NOT_RUN, RunStatus.NOT_EXERCISED, RunStatus.ERRORED)
# The latencies a scoreboard always shows (the others only when measured).
HEADLINE_LATENCIES = ("L1", "L2", "L3", "L4", "L7")


def fold(outcomes: Sequence[Outcome]) -> str:
    """The status of a check over repeats: the worst outcome that occurred."""
    seen = {o.value for o in outcomes}
    return next((s for s in STATUS_ORDER if s in seen), "skipped")


def check_title(check: str, fallback: str = "") -> str:
    """The contract's short heading for a check id, or the checker's name for one it does not know."""
    try:
        return check_info(check).title
    except KeyError:
        return fallback


def ordered_checks(checks: set[str] | Sequence[str]) -> list[str]:
    return sorted(set(checks), key=lambda c: (check_order(c), c))


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# ---------------------------------------------------------------------------
# One cell of the check matrix: a check over the repeats of one task


@dataclass(frozen=True)
class Cell:
    task: str
    check: str
    results: tuple[tuple[TaskResult, CheckResult], ...]  # from the runs that ran
    others: tuple[TaskResult, ...] = ()  # runs of the task that did not run, were not exercised or errored

    def count(self, outcome: Outcome) -> int:
        return sum(r.outcome is outcome for _, r in self.results)

    @property
    def decided(self) -> int:
        """The runs that exercised the check (every outcome but skipped)."""
        return sum(r.outcome is not Outcome.SKIPPED for _, r in self.results)

    @property
    def status(self) -> str:
        """fail, unknown, pass, skipped — or what became of the runs when none ran."""
        if self.results:
            return fold([r.outcome for _, r in self.results])
        if self.others:
            statuses = Counter(t.status.value for t in self.others)
            return statuses.most_common(1)[0][0]
        return "skipped"

    @property
    def text(self) -> str:
        """``3/3 pass``, ``1/3 fail``, ``unknown``, ``2/3 unknown``, ``skipped``, ``not run``."""
        status, n = self.status, self.decided
        if status in ("fail", "pass"):
            return f"{self.count(Outcome(status))}/{n} {status}"
        if status == "unknown":
            k = self.count(Outcome.UNKNOWN)
            return "unknown" if k == n else f"{k}/{n} unknown"
        return status

    @property
    def tier(self) -> str:
        return self.results[0][1].tier.value if self.results else ""

    @property
    def explanation(self) -> str:
        """What the cell's words count, for its title attribute."""
        status, n = self.status, self.decided
        parts = []
        if status in ("fail", "pass", "unknown"):
            k = self.count(Outcome(status))
            word = {"fail": "failed", "pass": "passed", "unknown": "undecided"}[status]
            parts.append(f"{word} in {k} of the {plural(n, 'run')} that exercised it")
        skipped = self.count(Outcome.SKIPPED)
        if skipped:
            parts.append(f"skipped in {plural(skipped, 'run')}")
        for status_name, k in Counter(t.status.value for t in self.others).items():
            parts.append(f"{status_name}: {plural(k, 'run')}")
        return "; ".join(parts)


# ---------------------------------------------------------------------------
# Findings: what went wrong, grouped


# Ranks, most important first.
RANK_FAIL, RANK_AGENT, RANK_ERRORED, RANK_UNKNOWN, RANK_ADVISORY, RANK_READER, RANK_NOT_EXERCISED, RANK_NOT_RUN = (
    range(8))
RANK_WORDS = {
    RANK_FAIL: "failed", RANK_AGENT: "the agent failed", RANK_ERRORED: "harness error",
    RANK_UNKNOWN: "undecided", RANK_ADVISORY: "advisory", RANK_READER: "needs a log reader",
    RANK_NOT_EXERCISED: "not exercised", RANK_NOT_RUN: "not run",
}


@dataclass(frozen=True)
class Finding:
    """Identical outcomes of one scoreboard: the same outcome with the same summary (or the
    same status with the same reason), over one or more checks and task runs."""

    rank: int
    outcome: str  # fail, unknown — or a run status: not run, not exercised, errored, ran (the agent failed)
    summary: str
    members: tuple[tuple[TaskResult, CheckResult | None], ...]

    @property
    def checks(self) -> list[str]:
        return ordered_checks({r.check for _, r in self.members if r is not None})

    @property
    def runs(self) -> list[TaskResult]:
        seen: dict[int, TaskResult] = {}
        for t, _ in self.members:
            seen.setdefault(id(t), t)
        return list(seen.values())

    @property
    def is_check(self) -> bool:
        return any(r is not None for _, r in self.members)

    @property
    def headline(self) -> str:
        """``C1, C2, C10, C11: unknown in 12 runs``; ``interrupt-cancel: not run in 3 runs``."""
        n = len(self.runs)
        if self.is_check:
            checks = self.checks
            what = f"{checks[0]} {check_title(checks[0], self.members[0][1].name if self.members[0][1] else '')}"
            what = what.strip() if len(checks) == 1 else ", ".join(checks)
            tier = next((r.tier for _, r in self.members if r is not None), Tier.MANDATORY)
            suffix = "" if tier is Tier.MANDATORY else f" ({tier.value})"
            return f"{what}{suffix}: {self.outcome} in {plural(n, 'run')}"
        tasks = ", ".join(dict.fromkeys(t.task for t in self.runs))
        word = "the agent failed" if self.outcome == RunStatus.RAN.value else self.outcome
        return f"{tasks}: {word} in {plural(n, 'run')}"

    @property
    def line(self) -> str:
        return f"{self.headline} — {self.summary}" if self.summary else self.headline


def _finding_rank(task: TaskResult, result: CheckResult | None) -> int | None:
    if result is None:
        return {RunStatus.ERRORED: RANK_ERRORED, RunStatus.NOT_EXERCISED: RANK_NOT_EXERCISED,
                RunStatus.NOT_RUN: RANK_NOT_RUN, RunStatus.RAN: RANK_AGENT}[task.status]
    mandatory = result.tier is Tier.MANDATORY
    if result.outcome is Outcome.FAIL:
        return RANK_FAIL if mandatory else RANK_ADVISORY
    if result.outcome is Outcome.UNKNOWN:
        if not mandatory:
            return RANK_ADVISORY
        return RANK_READER if result.needs_reader else RANK_UNKNOWN
    return None


def findings(tasks: Sequence[TaskResult]) -> list[Finding]:
    """What went wrong in these task runs, grouped and most important first."""
    groups: dict[tuple[int, str, str], list[tuple[TaskResult, CheckResult | None]]] = {}
    first_check: dict[tuple[int, str, str], int] = {}
    for t in tasks:
        if t.status is not RunStatus.RAN or t.reason:
            key = (_finding_rank(t, None) or 0, t.status.value, t.reason or "")
            groups.setdefault(key, []).append((t, None))
            first_check.setdefault(key, -1)
        if t.status is not RunStatus.RAN:
            continue
        for c in t.checks:
            rank = _finding_rank(t, c)
            if rank is None:
                continue
            key = (rank, c.outcome.value, c.evidence.summary)
            groups.setdefault(key, []).append((t, c))
            first_check[key] = min(first_check.get(key, check_order(c.check)), check_order(c.check))
    order = list(groups)
    keys = sorted(groups, key=lambda k: (k[0], first_check[k], order.index(k)))
    return [Finding(rank, outcome, summary, tuple(groups[(rank, outcome, summary)]))
            for rank, outcome, summary in keys]


# ---------------------------------------------------------------------------
# Scoreboards


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
    def conformant(self) -> int:
        """Task runs that ran and reached a conformant level."""
        return sum(bool((v := task_verdict(t)) and v.ok) for t in self.ran)

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
    def mandatory(self) -> tuple[int, int]:
        """(passed, decided) mandatory check results of the runs that ran; skipped ones excluded."""
        decided = [c for t in self.ran for c in t.checks
                   if c.tier is Tier.MANDATORY and c.outcome is not Outcome.SKIPPED]
        return sum(c.outcome is Outcome.PASS for c in decided), len(decided)

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
        passed, decided = self.mandatory
        level = {Verdict.CONFORMANT: 0, Verdict.CONFORMANT_BLACK_BOX: 1, Verdict.INCOMPLETE: 2,
                 Verdict.NOT_CONFORMANT: 3}.get(self.level, 4) if self.level else 4
        return (level, -_ratio(self.conformant, len(self.ran)), -_ratio(passed, decided), self.label, self.adapter)


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def latency_order(latency: str) -> tuple[int, str]:
    return (LATENCY_IDS.index(latency) if latency in LATENCY_IDS else len(LATENCY_IDS), latency)


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
    used: set[str] = set()
    for index, (i, agent, adapter) in enumerate(keys):
        run = runs[i]
        tasks = [t for t in run.tasks if (t.agent, t.adapter) == (agent, adapter)]
        samples: dict[tuple[str, str], list[int]] = {}
        for s in run.latencies:
            if (s.agent, s.adapter) == (agent, adapter):
                samples.setdefault((s.task, s.latency), []).append(s.value_ns)
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
            label=f"{agent} (file {i + 1})" if agent in repeated_agents else agent,
            agent=agent,
            version=str(run.run.get("agent_version") or ""),
            adapter=adapter,
            tasks=plain,
            mutants=tuple(t for t in tasks if t.mutant is not None),
            samples={k: tuple(v) for k, v in samples.items()},
            incomplete=bool(run.run.get("incomplete")),
            anchors=anchors,
        ))
    return boards


def _agents_in_several(keys: Sequence[tuple[int, str, str]]) -> set[str]:
    files_of: dict[str, set[int]] = {}
    for i, agent, _ in keys:
        files_of.setdefault(agent, set()).add(i)
    return {agent for agent, files in files_of.items() if len(files) > 1}


# ---------------------------------------------------------------------------
# Failpoints


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
        return sorted(found, key=lambda c: (c != "task error", check_order(c), c))

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
                name = t.mutant or ""
                rows.setdefault((b.label, name), []).append(t)
                targets[(b.label, name)] = tuple(ordered_checks(
                    (described.get(name) or {}).get("targets") or ()))
    return [FailpointRow(label, name, tuple(tasks), targets[(label, name)]) for (label, name), tasks in rows.items()]


# ---------------------------------------------------------------------------
# Whole reports


def latency_ids(boards: Sequence[Scoreboard]) -> list[str]:
    """The latency IDs measured on any scoreboard, in the contract's order (L1, L2, …)."""
    return sorted({latency for b in boards for _, latency in b.samples}, key=latency_order)


def scoreboard_latencies(boards: Sequence[Scoreboard]) -> list[str]:
    """The latency columns of a scoreboard: L1–L4 and L7 always, the others when measured."""
    return sorted(set(HEADLINE_LATENCIES) | set(latency_ids(boards)), key=latency_order)


def leaderboard(boards: Sequence[Scoreboard]) -> list[Scoreboard]:
    """Best verdict level first, then conformant task share, mandatory checks passed, name."""
    return sorted(boards, key=lambda b: b.rank_key)


def is_leaderboard(boards: Sequence[Scoreboard]) -> bool:
    return len({b.label for b in boards}) > 1


def report_level(runs: Sequence[RunResult]) -> Verdict | None:
    """The verdict over every results file; None when no task counted."""
    if not any(t.mutant is None and task_verdict(t) is not None for r in runs for t in r.tasks):
        return None
    return combine_verdicts([r.verdict for r in runs])


def verdict(runs: Sequence[RunResult]) -> str:
    if not any(t.mutant is None for r in runs for t in r.tasks):
        return "no task results"
    level = report_level(runs)
    return level.value if level else NOTHING_RAN


def headline(runs: Sequence[RunResult], boards: Sequence[Scoreboard]) -> str:
    """E.g. "reference: not conformant", or "3 agents compared" for a leaderboard."""
    if is_leaderboard(boards):
        return f"{len({b.label for b in boards})} agents compared"
    agents = list(dict.fromkeys([b.label for b in boards] or [str(r.run.get("agent", "")) for r in runs]))
    return f"{' / '.join(agents)}: {verdict(runs)}"


def attempts_text(task: TaskResult) -> str:
    """``2 retries: 1.20 s, 1.31 s`` — the earlier tries of a run, with their timing."""
    if not task.attempts:
        return ""
    times = ", ".join(f"{a.duration_s:.2f} s" for a in task.attempts)
    return f"{plural(len(task.attempts), 'retry').replace('retrys', 'retries')} ({times})"


def run_name(task: TaskResult) -> str:
    """``interrupt-cancel #2 on http (subprocess)``: the driver when it is not the adapter's name."""
    return f"{task.task} #{task.repeat} on {task.adapter}{_driver_note(task.task, task.adapter, task.driver)}"


def _driver_note(task: str, adapter: str, driver: str) -> str:
    """`` (subprocess)`` — unless the adapter or the task variant's name already says it."""
    return f" ({driver})" if driver and driver != adapter and f"[{driver}]" not in task else ""


def run_groups(runs: Sequence[TaskResult]) -> list[tuple[str, list[TaskResult]]]:
    """Runs grouped by task, adapter and driver, in order: ``("interrupt-cancel … on http", [#0, #1])``."""
    groups: dict[tuple[str, str, str], list[TaskResult]] = {}
    for t in runs:
        groups.setdefault((t.task, t.adapter, t.driver), []).append(t)
    out = []
    for (task, adapter, driver), members in groups.items():
        out.append((f"{task} {{repeats}} on {adapter}{_driver_note(task, adapter, driver)}", members))
    return out


def runs_text(runs: Sequence[TaskResult]) -> str:
    """``interrupt-cancel #0, #1, #2 on http (subprocess); interrupt-timeout #1 on inproc``."""
    return "; ".join(pattern.format(repeats=", ".join(f"#{t.repeat}" for t in members))
                     for pattern, members in run_groups(runs))


@dataclass(frozen=True)
class Agent:
    """One agent of one results file over all its adapters: what a findings list is about."""

    label: str
    boards: tuple[Scoreboard, ...]

    @property
    def tasks(self) -> tuple[TaskResult, ...]:
        return tuple(t for b in self.boards for t in b.tasks)

    @property
    def level(self) -> Verdict | None:
        levels = [b.level for b in self.boards if b.level is not None]
        return combine_verdicts(levels) if levels else None

    @property
    def verdict(self) -> str:
        return self.level.value if self.level else NOTHING_RAN

    @property
    def findings(self) -> list[Finding]:
        return findings(self.tasks)


def agents(boards: Sequence[Scoreboard]) -> list[Agent]:
    """The scoreboards of each agent (as labelled), in order of appearance."""
    by_label: dict[str, list[Scoreboard]] = {}
    for b in boards:
        by_label.setdefault(b.label, []).append(b)
    return [Agent(label, tuple(bs)) for label, bs in by_label.items()]
