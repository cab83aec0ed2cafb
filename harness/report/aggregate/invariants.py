"""Where each agent stands on each invariant: the leaderboard's matrix and its order.

An invariant *holds* for an agent when some task run passed its check and none failed it;
it is *broken* when a run failed it on a fact of its own (a failure that is only another
check's consequence breaks nothing more); *unknown* when runs exercised it but none decided
it; *not run* when no run exercised it. Unknown is never a failure, and a defect is counted
once: an invariant broken on three drivers and in five repeats is one broken invariant.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from harness.contract import CHECKS
from harness.model import Outcome, RunStatus, TaskResult

# The contract's mandatory invariants, in its order: what an agent is ranked on.
INVARIANTS: tuple[str, ...] = tuple(c.id for c in CHECKS if not c.advisory)


class Standing(enum.StrEnum):
    HOLDS = "holds"
    BROKEN = "broken"
    UNKNOWN = "unknown"
    NOT_RUN = "not run"


STANDING_MEANING: dict[Standing, str] = {
    Standing.HOLDS: "a task run passed the check and none failed it",
    Standing.BROKEN: "a task run failed the check on a fact of its own (counted once, however many runs show it)",
    Standing.UNKNOWN: "task runs exercised the check but none could decide it; never counted as a failure",
    Standing.NOT_RUN: "no task run exercised the check (not run, skipped, or the harness failed)",
}


def standing(tasks: Sequence[TaskResult], check: str) -> Standing:
    """Where the agent stands on one invariant over these task runs (mutants excluded)."""
    results = [c for t in tasks if t.status is RunStatus.RAN and t.mutant is None
               for c in t.checks if c.check == check]
    if any(c.counts_as_failure for c in results):
        return Standing.BROKEN
    if any(c.outcome is Outcome.PASS for c in results):
        return Standing.HOLDS
    if any(c.outcome is Outcome.UNKNOWN for c in results):
        return Standing.UNKNOWN
    return Standing.NOT_RUN


@dataclass(frozen=True)
class Standings:
    """One agent's standing on every invariant."""

    by_check: dict[str, Standing]

    @classmethod
    def of(cls, tasks: Sequence[TaskResult]) -> Standings:
        return cls({check: standing(tasks, check) for check in INVARIANTS})

    def count(self, which: Standing) -> int:
        return sum(s is which for s in self.by_check.values())

    @property
    def held(self) -> int:
        return self.count(Standing.HOLDS)

    @property
    def defects(self) -> int:
        """Invariants broken: each defect once, whatever the number of runs, drivers or checks showing it."""
        return self.count(Standing.BROKEN)

    @property
    def rank_key(self) -> tuple[int, int]:
        """More invariants held first, then fewer defects; unknowns and not-runs weigh nothing."""
        return (-self.held, self.defects)


__all__ = ["INVARIANTS", "STANDING_MEANING", "Standing", "Standings", "standing"]
