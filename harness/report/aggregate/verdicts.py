"""Verdicts across scoreboards: the report's, each agent's over its adapters, and the leaderboard's order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.contract import Verdict
from harness.model import VERDICT_ORDER, RunResult, TaskResult, combine_verdicts, task_verdict
from harness.report.aggregate.invariants import Standings
from harness.report.aggregate.outcomes import Finding, findings
from harness.report.aggregate.scoreboard import NOTHING_RAN, Scoreboard

# The contract's verdict levels, in its words, for a reader who meets them on a report.
VERDICT_MEANING: dict[Verdict, str] = {
    Verdict.CONFORMANT: "every mandatory check of every task that applies to the agent passed",
    Verdict.CONFORMANT_BLACK_BOX: "every mandatory check decidable without a log reader passed, and the rest are "
                                  "unknown only because the profile has no reader",
    Verdict.CONFORMANT_NON_STRICT: "as either level above, but some check passed only non-strictly (a convention "
                                   "that differs from the contract's letter while keeping its meaning)",
    Verdict.NOT_CONFORMANT: "a mandatory check failed",
    Verdict.INCOMPLETE: "nothing failed, but a task that applies could not run or a check is unknown for "
                        "another reason",
}


def leaderboard(boards: Sequence[Scoreboard]) -> list[Scoreboard]:
    """Most invariants held first, then fewest defects, then the best verdict level, then name."""
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

    @property
    def standings(self) -> Standings:
        """Where the agent stands on each invariant over all its adapters and drivers."""
        return Standings.of(self.tasks)


def agents(boards: Sequence[Scoreboard]) -> list[Agent]:
    """The scoreboards of each agent (as labelled), in order of appearance."""
    by_label: dict[str, list[Scoreboard]] = {}
    for b in boards:
        by_label.setdefault(b.label, []).append(b)
    return [Agent(label, tuple(bs)) for label, bs in by_label.items()]


def ranked_agents(boards: Sequence[Scoreboard]) -> list[Agent]:
    """The agents in the leaderboard's order: most invariants held, fewest defects, best level."""
    def key(agent: Agent) -> tuple:
        level = VERDICT_ORDER[::-1].index(agent.level) if agent.level else len(VERDICT_ORDER)
        return (*agent.standings.rank_key, level, agent.label)
    return sorted(agents(boards), key=key)
