"""The interruption contract's closed sets and tables, each written once.

Everything that names a settlement reason, an exit code, a stop source, a driver, a check
or a latency imports it from here, so two copies can never drift apart (they had: one exit
table lacked ``max_tokens``, and check ids were sorted two different ways). This module is
plain data; it imports nothing of the harness.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

# --- how a turn ends -------------------------------------------------------------------

TURN_END_REASONS = ("completed", "aborted", "interrupted", "error", "blocked", "max_tokens")
# Who asked for an ``aborted`` settlement.
ABORT_SOURCES = ("user", "parent", "disposed")
# Who can ask a running turn to stop: an abort's sources, plus the agent's own (or CI's) timeout.
STOP_SOURCES = (*ABORT_SOURCES, "timeout")
# The sources a task may name in a ``stop`` step (the harness plays the user or the parent).
TASK_STOP_SOURCES = ("user", "parent")

# The settlement reasons a Stop or a timeout ends a turn with, and those of a turn that failed:
# the three outcomes an exit code must tell apart (C8), with ``completed``.
STOPPED_REASONS = frozenset({"aborted", "interrupted"})
ERROR_REASONS = frozenset({"error", "blocked", "max_tokens"})

# C8: the headless exit code for each settlement reason.
EXIT_CODE_FOR_REASON: dict[str, int] = {
    "completed": 0,
    "error": 2,
    "blocked": 2,
    "max_tokens": 2,
    "aborted": 3,
    "interrupted": 3,
}

# What a task step expects of a headless run, and the settlement reason that stands for it.
REASON_FOR_EXPECTATION: dict[str, str] = {
    "completed": "completed",
    "stopped": "aborted",
    "timeout": "interrupted",
    "refused": "error",  # a log damaged mid-file must be refused, exit 2
    "error": "error",
    "blocked": "blocked",
}
# The same, in words, for evidence.
EXPECTATION_WORDS: dict[str, str] = {
    "completed": "its turn was expected to complete",
    "stopped": "it was stopped",
    "timeout": "it timed out",
    "refused": "its log was damaged mid-file",
    "error": "its turn was expected to fail",
    "blocked": "its turn was expected to be blocked",
}


def expected_exit_code(expectation: str) -> int:
    """The contract's exit code for what a step expected of a run (C8)."""
    return EXIT_CODE_FOR_REASON[REASON_FOR_EXPECTATION[expectation]]


# Repair markers: what a reloaded agent says in a synthesized tool result (C14).
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
TOOL_NOT_STARTED = "TOOL_NOT_STARTED"

# --- how the harness reaches an agent --------------------------------------------------

DRIVERS = ("inproc", "subprocess", "terminal", "acp")

# --- checks ----------------------------------------------------------------------------


class Observes(enum.StrEnum):
    """How a check sees the agent: from outside, through its log, or both halves."""

    BLACK_BOX = "B"
    LOG = "L"
    BOTH = "B+L"


@dataclass(frozen=True)
class CheckInfo:
    id: str
    name: str  # the checker's function name: the invariant, in words
    title: str  # a short heading
    description: str  # one line a report can show beside the id
    observes: Observes
    advisory: bool = False

    @property
    def anchor(self) -> str:
        """The heading's anchor in docs/checks.md."""
        return self.id.lower()


CHECKS: tuple[CheckInfo, ...] = (
    CheckInfo("C1", "turn_ends_exactly_once", "every turn ends exactly once",
              "Each turn settles once, with a reason from the closed set.", Observes.LOG),
    CheckInfo("C2", "reload_repairs_in_memory_only", "repair after a crash happens in memory",
              "Reloading synthesizes the missing turn end in memory; loading never writes.", Observes.LOG),
    CheckInfo("C3", "pending_tool_calls_close", "pending tool calls close",
              "A stopped tool's whole process tree is gone and its call gets an aborted result.", Observes.BOTH),
    CheckInfo("C4", "next_request_is_balanced", "the next request after a kill is balanced",
              "No tool call is dropped and every call has a result.", Observes.BOTH),
    CheckInfo("C5", "partial_work_is_kept", "partial work is kept",
              "Text streamed before Stop is kept, marked interrupted, and sent back to the model.", Observes.BOTH),
    CheckInfo("C6", "inbox_items_never_vanish", "inbox items never vanish",
              "Queued input is delivered later or withdrawn on purpose.", Observes.BOTH),
    CheckInfo("C7", "resume_continues_the_session", "a resumed session continues",
              "A follow-up after a kill continues the same session with its history.", Observes.BOTH),
    CheckInfo("C8", "exit_codes_tell_the_truth", "exit codes tell the truth",
              "Headless runs exit 0 completed, 2 error/blocked, 3 aborted/interrupted; --timeout exits 3 soon after T.",
              Observes.BLACK_BOX),
    CheckInfo("C9", "stop_means_stop", "Stop means stop",
              "After Stop no new model request is sent and no new tool starts.", Observes.BLACK_BOX),
    CheckInfo("C10", "log_format_holds", "the log keeps its format",
              "The store's format rules hold; a torn tail is tolerated, damage refused, nothing rewritten.",
              Observes.LOG),
    CheckInfo("C11", "checkpoints_are_durable", "checkpoints are durable",
              "A SIGKILL at a checkpoint loses none of what the checkpoint covers.", Observes.BOTH),
    CheckInfo("C12", "own_cancel_is_not_an_error", "your own cancel is not an error",
              "A stream the agent cancelled itself settles aborted, never error.", Observes.BOTH),
    CheckInfo("C13", "no_secret_leaks", "no secret leaks",
              "The API key appears in no file the agent writes and in no output.", Observes.BLACK_BOX),
    CheckInfo("C14", "repair_says_what_is_known", "the repair says what is known",
              "A started call is answered 'outcome unknown', a never-started one 'not started'.", Observes.BOTH),
    CheckInfo("A1", "resume_note_is_sent", "the model is told the session resumed",
              "The first request after a restart says the session resumed.", Observes.BOTH, advisory=True),
    CheckInfo("A2", "tools_die_with_the_agent", "tools die with the agent",
              "After a SIGKILL of the agent its tools do not outlive it (or the restart).", Observes.BLACK_BOX,
              advisory=True),
    CheckInfo("A3", "exit_codes_tell_outcomes_apart", "exit codes tell outcomes apart",
              "Under the agent's own convention, a stopped run never exits like a completed one.",
              Observes.BLACK_BOX, advisory=True),
)
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
_CHECK_BY_ID = {c.id: c for c in CHECKS}
_ORDER = {c.id: n for n, c in enumerate(CHECKS)}


def check_info(check_id: str) -> CheckInfo:
    try:
        return _CHECK_BY_ID[check_id]
    except KeyError:
        raise KeyError(f"unknown check {check_id!r} (known: {', '.join(CHECK_IDS)})") from None


def check_order(check_id: str) -> int:
    """The contract's order (C1…C14, then A1…): the one sort key for checks everywhere.
    An id the contract does not know sorts last."""
    return _ORDER.get(check_id, len(_ORDER))


# --- latencies -------------------------------------------------------------------------


@dataclass(frozen=True)
class LatencyInfo:
    id: str
    title: str
    span: str  # from → to


LATENCIES: tuple[LatencyInfo, ...] = (
    LatencyInfo("L1", "in-process abort", "stop() called → turn settlement appended"),
    LatencyInfo("L2", "HTTP mid-SSE abort", "Stop delivered → the fake server sees the connection closed"),
    LatencyInfo("L3", "bash process-tree kill", "Stop delivered → last process of the tool's tree gone"),
    LatencyInfo("L4", "timeout overshoot", "process exit − (start + T) for a run with timeout T"),
    LatencyInfo("L5", "cold replay", "load of the 132,010-event session → ready for the next turn"),
    LatencyInfo("L6", "full-text index rebuild", "index rebuilt over that same session"),
    LatencyInfo("L7", "resume, seen from outside", "restart of a killed agent → its first model request"),
)
LATENCY_IDS: tuple[str, ...] = tuple(latency.id for latency in LATENCIES)


# --- verdicts --------------------------------------------------------------------------


class Verdict(enum.StrEnum):
    """What a run (or an agent's whole score) amounts to, exactly as the contract defines it."""

    CONFORMANT = "conformant"
    CONFORMANT_BLACK_BOX = "conformant (black-box)"
    # As either level above, but some check passed only non-strictly: a convention that
    # differs from the contract's letter while keeping its meaning (C8: exit 130 after Stop).
    CONFORMANT_NON_STRICT = "conformant (non-strict)"
    NOT_CONFORMANT = "not conformant"
    INCOMPLETE = "incomplete"

    @property
    def ok(self) -> bool:
        """The conformant levels: ``stopbench run`` exits 0 for them."""
        return self in (Verdict.CONFORMANT, Verdict.CONFORMANT_BLACK_BOX, Verdict.CONFORMANT_NON_STRICT)
