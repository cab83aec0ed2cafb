"""Failpoints: which of them the checks caught, per agent.

Tasks run with a failpoint (``mutant``) are expected to fail; they are never failures of the
agent. A failpoint is *caught* when any of its task runs (any task, any adapter) failed a
mandatory check, left one undecided, or could not complete — the runner's mutation score
counts the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.contract import check_order
from harness.model import Outcome, RunResult, TaskResult, Tier
from harness.report.aggregate.outcomes import ordered_checks
from harness.report.aggregate.scoreboard import Scoreboard


def caught_by(mutant_task: TaskResult) -> list[str]:
    """What gave a failpoint away in one task run: the mandatory checks that failed or
    stayed undecided, or the harness error. Empty when the failpoint went unnoticed."""
    found = ["task error"] if mutant_task.error is not None else []
    return found + [c.check for c in mutant_task.checks if c.tier is Tier.MANDATORY and (
        c.counts_as_failure or c.outcome is Outcome.UNKNOWN)]


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
