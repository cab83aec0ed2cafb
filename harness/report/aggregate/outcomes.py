"""Outcomes grouped for a reader: a check over repeats, identical outcomes, runs by task.

A check over the repeats of one task is one *cell* of the check matrix, which says what its
fraction counts: ``3/3 pass`` (passed in all 3 runs that decided it), ``1/3 fail``,
``unknown``, ``skipped``, ``not run``.

*Findings* are what went wrong, grouped so that identical outcomes read as one line
(``C1, C2, C10, C11: unknown in 12 runs — no log reader …``) and ordered so that real
failures come first: failed mandatory checks, failures that are only the consequence of another
check's failure (linked to it, one defect counted once), the agent's own failures, what the
profile got wrong, harness errors,
undecided mandatory checks, advisory failures, checks undecided only for want of a log
reader, races not exercised, and tasks not run.

Checks are ordered everywhere by ``harness.contract.check_order`` (C1 … C14, then A1 …).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from harness.contract import check_info, check_order
from harness.model import CheckResult, Outcome, RunStatus, TaskResult, Tier

STATUS_ORDER = ("fail", "unknown", "pass", "skipped")


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
    def causes(self) -> list[str]:
        """The checks whose failures this cell's failures follow from, when every one does."""
        failed = [r for _, r in self.results if r.outcome is Outcome.FAIL]
        if not failed or any(r.consequence_of is None for r in failed):
            return []
        return ordered_checks({r.consequence_of for r in failed if r.consequence_of})

    @property
    def status(self) -> str:
        """fail, consequence (failed only as another check's consequence), unknown, pass,
        skipped — or what became of the runs when none ran."""
        if self.results:
            folded = fold([r.outcome for _, r in self.results])
            return "consequence" if folded == "fail" and self.causes else folded
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
        if status == "consequence":
            return f"{self.count(Outcome.FAIL)}/{n} → {', '.join(self.causes)}"
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
        if status == "consequence":
            parts.append(f"failed in {self.count(Outcome.FAIL)} of the {plural(n, 'run')} that exercised it, only "
                         f"as a consequence of {', '.join(self.causes)} (the same defect, counted there)")
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
(RANK_FAIL, RANK_CONSEQUENCE, RANK_AGENT, RANK_PROFILE, RANK_ERRORED, RANK_UNKNOWN, RANK_ADVISORY, RANK_READER,
 RANK_NOT_EXERCISED, RANK_NOT_RUN) = range(10)


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
            causes = ordered_checks({r.consequence_of for _, r in self.members if r is not None and r.consequence_of})
            follows = f", a consequence of {', '.join(causes)} (counted there)" if causes else ""
            return f"{what}{suffix}: {self.outcome} in {plural(n, 'run')}{follows}"
        tasks = ", ".join(dict.fromkeys(run_title(t.task, t.driver, "") for t in self.runs))
        word = "the agent failed" if self.outcome == RunStatus.RAN.value else self.outcome
        return f"{tasks}: {word} in {plural(n, 'run')}"

    @property
    def line(self) -> str:
        return f"{self.headline} — {self.summary}" if self.summary else self.headline


def _finding_rank(task: TaskResult, result: CheckResult | None) -> int | None:
    if result is None:
        return {RunStatus.ERRORED: RANK_ERRORED, RunStatus.PROFILE_PROBLEM: RANK_PROFILE,
                RunStatus.NOT_EXERCISED: RANK_NOT_EXERCISED,
                RunStatus.NOT_RUN: RANK_NOT_RUN, RunStatus.RAN: RANK_AGENT}[task.status]
    mandatory = result.tier is Tier.MANDATORY
    if result.outcome is Outcome.FAIL and result.consequence_of is not None:
        return RANK_CONSEQUENCE
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
# Task runs by name, and grouped by task


def attempts_text(task: TaskResult) -> str:
    """``2 retries: 1.20 s, 1.31 s`` — the earlier tries of a run, with their timing."""
    if not task.attempts:
        return ""
    times = ", ".join(f"{a.duration_s:.2f} s" for a in task.attempts)
    return f"{plural(len(task.attempts), 'retry').replace('retrys', 'retries')} ({times})"


def run_title(variant: str, driver: str, adapter: str) -> str:
    """``interrupt-cancel · driver subprocess · adapter inproc``: the one form a task run is
    named in everywhere (terminal, HTML, Markdown). The task's driver variant (``[subprocess]``)
    is said once, as the driver, so the driver and the adapter never read as one contradicting
    the other. Without an adapter (a table of one adapter's runs), the task and driver alone."""
    name, _, bracketed = variant.partition("[")
    driver = driver or bracketed.rstrip("]")
    return " · ".join([name, *([f"driver {driver}"] if driver else []), *([f"adapter {adapter}"] if adapter else [])])


def repeats_text(repeats: Sequence[str]) -> str:
    """``repeat 0``, ``repeats 0, 1, 2``: the repeats given (numbers, or links to them)."""
    return f"repeat{'s' if len(repeats) > 1 else ''} {', '.join(repeats)}"


def run_name(task: TaskResult) -> str:
    """``interrupt-cancel · driver subprocess · adapter http · repeat 2``."""
    return f"{run_title(task.task, task.driver, task.adapter)} · {repeats_text([str(task.repeat)])}"


def run_groups(runs: Sequence[TaskResult]) -> list[tuple[str, list[TaskResult]]]:
    """Runs grouped by task, driver and adapter, in order: ``("interrupt-cancel · driver
    subprocess · adapter http", [#0, #1])``."""
    groups: dict[tuple[str, str, str], list[TaskResult]] = {}
    for t in runs:
        groups.setdefault((t.task, t.adapter, t.driver), []).append(t)
    return [(run_title(task, driver, adapter), members) for (task, adapter, driver), members in groups.items()]


def runs_text(runs: Sequence[TaskResult]) -> str:
    """``interrupt-cancel · driver subprocess · adapter http · repeats 0, 1, 2; interrupt-timeout ·
    driver inproc · adapter inproc · repeat 1``."""
    return "; ".join(f"{title} · {repeats_text([str(t.repeat) for t in members])}"
                     for title, members in run_groups(runs))
