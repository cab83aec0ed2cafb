"""The event and result model of stopbench: plain values, no I/O.

Three modules hold its parts — ``session`` (canonical events, snapshots, the reader's
questions), ``observation`` (what a task run saw) and ``results`` (what a run produced) — and
this one names them all, so the rest of the harness imports ``harness.model`` alone.

Every other part of the harness depends on this module and it depends on nothing of
theirs but the contract's tables (``harness.contract``). Readers turn an agent's own
session store into ``SessionLog`` values; drivers and the runner record what they see
into one history, from which an ``Observation`` is assembled; checkers turn observations
into ``CheckResult`` values; runs collect them, with ``LatencySample`` values, into
``RunResult``, which is what the results JSON holds and every renderer reads.

Grammar of a session
--------------------
A session is a header and a sequence of canonical events, whatever the agent's store
looks like on disk::

    session   := header event*
    turn      := turn_started session_resumed? step* stop_requested? turn_ended
    step      := model_request assistant_message? (tool_call tool_started? tool_result?)* step_settled?
    inbox     := inbox_queued (inbox_delivered | inbox_canceled)?     -- interleaved anywhere

What each event holds (beyond ``turn`` and whatever else the store kept, in ``data``); each type
is a frozen class of ``harness.model.events``, these its typed fields:

    turn_started       input: str, inbox: [item ids]
    session_resumed    note: str
    model_request      step: int, messages: [canonical message]  (what was made durable before the stream)
    assistant_message  step, text: str, tool_calls: [{id, name, arguments}], interrupted: bool
    tool_call          step, call_id, name, arguments   -- the call was durably recorded as *starting*
    tool_started       call_id, pid, pgid
    tool_result        call_id, output: str, aborted: bool
    step_settled       step
    stop_requested     source: user | parent | disposed | timeout
    turn_ended         reason (contract.TURN_END_REASONS), source (for aborted), error
    inbox_queued       item_id, text;  inbox_delivered item_id, turn;  inbox_canceled item_id
    torn_tail_dropped  offset, dropped (base64)

A canonical message is ``{role, text, tool_calls: [{id, name, arguments}], tool_call_id}``,
the same shape the fake server gives every request it receives, whatever the wire.

``stop_requested`` is the request and ``turn_ended`` the effect: two events, never one
edited into the other (Trio's ``cancel_called`` / ``cancelled_caught``). A store that does
not record something yields no event for it — a reader never invents a ``turn_ended`` —
and says so in its ``capabilities``, so a check whose input is missing answers
``unknown`` naming the capability instead of failing the agent for its format.

A check outcome is one of ``pass``, ``fail``, ``unknown`` (the evidence cannot decide it,
or the checker itself failed) and ``skipped`` (the task did not exercise it, e.g. the turn
had already ended when Stop arrived). Each carries ``evidence``: the log lines, requests,
PIDs or exit codes that decided it, enough for a person to re-check the verdict, and, for a
check with a black-box and a log half, which half decided it (``decided_by``).
"""

from harness.model.events import EVENT_TYPES, SessionEvent, event_of
from harness.model.observation import (
    AgentFailure,
    AgentKill,
    CanaryHit,
    Conventions,
    Observation,
    ProcessExit,
    Restart,
    Settlement,
    StopDelivery,
    TurnUpdate,
    UserInput,
    WindowObservation,
)
from harness.model.results import (
    READABLE_RESULTS_VERSIONS,
    RESULTS_FORMAT,
    RESULTS_VERSION,
    VERDICT_ORDER,
    Attempt,
    CheckResult,
    DecidedBy,
    Evidence,
    LatencySample,
    Outcome,
    RunResult,
    RunStatus,
    TaskResult,
    Tier,
    TimelineMark,
    combine_verdicts,
    failed,
    passed,
    skipped,
    task_verdict,
    unknown,
    verdict_of,
)
from harness.model.session import (
    Capability,
    Change,
    FormatProblem,
    LogCapture,
    LogFormat,
    SessionHeader,
    SessionLog,
    Snapshot,
)

__all__ = [
    "AgentFailure",
    "AgentKill",
    "Attempt",
    "CanaryHit",
    "Capability",
    "Change",
    "CheckResult",
    "Conventions",
    "DecidedBy",
    "EVENT_TYPES",
    "Evidence",
    "FormatProblem",
    "LatencySample",
    "LogCapture",
    "LogFormat",
    "Observation",
    "Outcome",
    "ProcessExit",
    "READABLE_RESULTS_VERSIONS",
    "RESULTS_FORMAT",
    "RESULTS_VERSION",
    "Restart",
    "RunResult",
    "RunStatus",
    "SessionEvent",
    "SessionHeader",
    "SessionLog",
    "Settlement",
    "Snapshot",
    "StopDelivery",
    "TurnUpdate",
    "TaskResult",
    "Tier",
    "TimelineMark",
    "UserInput",
    "WindowObservation",
    "VERDICT_ORDER",
    "combine_verdicts",
    "failed",
    "passed",
    "skipped",
    "task_verdict",
    "unknown",
    "verdict_of",
    "event_of",
]
