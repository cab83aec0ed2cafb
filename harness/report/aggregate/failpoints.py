"""Failpoints: which of them the checks caught, per agent.

Tasks run with a failpoint (``mutant``) are expected to fail; they are never failures of the
agent. A failpoint is *caught* when any of its task runs (any task, any adapter) gave it away
(``harness.model.mutation.caught_by``, the definition the mutation score uses too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.contract import check_order
from harness.model import RunResult, TaskResult
from harness.model.mutation import TASK_ERROR, caught_by
from harness.report.aggregate.outcomes import ordered_checks
from harness.report.aggregate.scoreboard import Scoreboard


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
        return sorted(found, key=lambda c: (c != TASK_ERROR, check_order(c), c))

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
