"""What every renderer shows, computed once from results: scoreboards, cells, findings, latencies.

The pieces: ``outcomes`` (a check over repeats, findings grouped, task runs by name),
``scoreboard`` (one agent on one adapter in one results file, with its latencies),
``failpoints`` (which failpoints the checks caught), ``invariants`` (where each agent stands on
each invariant: the leaderboard's matrix) and ``verdicts`` (the report's verdict, each agent's,
the leaderboard's order).
"""

from harness.model.mutation import caught_by
from harness.report.aggregate.failpoints import FailpointRow, failpoints
from harness.report.aggregate.invariants import INVARIANTS, STANDING_MEANING, Standing, Standings
from harness.report.aggregate.outcomes import (
    RANK_READER,
    RANK_UNKNOWN,
    Finding,
    attempts_text,
    check_title,
    fold,
    plural,
    repeats_text,
    run_groups,
    run_name,
    run_title,
    runs_text,
)
from harness.report.aggregate.scoreboard import (
    NOTHING_RAN,
    RUN_STATUSES,
    STATUS_COLUMNS,
    TALLY_COLUMNS,
    Scoreboard,
    latency_order,
    scoreboard_latencies,
    scoreboards,
)
from harness.report.aggregate.verdicts import (
    VERDICT_MEANING,
    Agent,
    agents,
    headline,
    is_leaderboard,
    leaderboard,
    ranked_agents,
    report_level,
    verdict,
)

__all__ = [
    "INVARIANTS",
    "NOTHING_RAN",
    "RANK_READER",
    "RANK_UNKNOWN",
    "RUN_STATUSES",
    "STANDING_MEANING",
    "STATUS_COLUMNS",
    "TALLY_COLUMNS",
    "VERDICT_MEANING",
    "Agent",
    "FailpointRow",
    "Finding",
    "Scoreboard",
    "Standing",
    "Standings",
    "agents",
    "attempts_text",
    "caught_by",
    "check_title",
    "failpoints",
    "fold",
    "headline",
    "is_leaderboard",
    "latency_order",
    "leaderboard",
    "plural",
    "ranked_agents",
    "repeats_text",
    "report_level",
    "run_groups",
    "run_name",
    "run_title",
    "runs_text",
    "scoreboard_latencies",
    "scoreboards",
    "verdict",
]
