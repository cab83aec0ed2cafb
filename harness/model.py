"""The event and result model of stopbench: plain values, no I/O.

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

What each event's ``data`` holds (beyond ``turn`` and whatever else the store kept):

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

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.contract import LATENCY_IDS, Verdict

RESULTS_FORMAT = "stopbench-results"
RESULTS_VERSION = 2
READABLE_RESULTS_VERSIONS = (1, 2)  # a version-1 file reads as a run whose every task ran

EVENT_TYPES = frozenset(
    {
        "turn_started",
        "session_resumed",
        "model_request",
        "assistant_message",
        "tool_call",
        "tool_started",
        "tool_result",
        "step_settled",
        "stop_requested",
        "turn_ended",
        "inbox_queued",
        "inbox_delivered",
        "inbox_canceled",
        "torn_tail_dropped",
    }
)


class Outcome(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"
    SKIPPED = "skipped"


class Tier(enum.StrEnum):
    """How much a check counts: mandatory checks decide conformance."""

    MANDATORY = "mandatory"
    ADVISORY = "advisory"
    INFORMATIONAL = "informational"


# ---------------------------------------------------------------------------
# Session logs and the readers that make them


class Capability(enum.StrEnum):
    """What an agent's session store records. A log check needs some of these; where the
    store lacks one, the check answers ``unknown`` naming it."""

    TURN_ENDS = "turn-ends"  # explicit turn_ended events with a reason
    STOP_REQUESTS = "stop-requests"  # stop_requested events, apart from the settlement
    INTERRUPTED_TEXT = "interrupted-text"  # partial assistant text committed with an interrupted flag
    TOOL_STARTS = "tool-starts"  # a call's start recorded apart from the model asking for it
    TOOL_ABORTS = "tool-aborts"  # a stopped tool's result says aborted
    REQUESTS = "requests"  # model_request events with the messages made durable before the stream
    STEP_SETTLEMENTS = "step-settlements"  # step_settled events
    INBOX = "inbox"  # inbox_queued / delivered / canceled events
    APPEND_ONLY = "append-only"  # records are appended, never rewritten
    FORMAT_RULES = "format-rules"  # the reader can check the store's own format rules (C10)
    MONO_TIMES = "mono-times"  # events carry CLOCK_MONOTONIC ns, comparable with the harness's moments


@dataclass(frozen=True)
class SessionHeader:
    session_id: str | None
    created: str | None = None
    cwd: str | None = None
    model: str | None = None
    adapter: str | None = None
    parent: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionEvent:
    """One event of a session, in the canonical vocabulary of ``EVENT_TYPES``.

    ``line`` is where the store keeps it (the 1-based line of a JSONL file, the header
    being line 1; a row number for a database), so evidence can point at it; ``where``
    says the same in words for stores that are not line-based; ``data`` keeps every field.
    """

    seq: int
    type: str
    line: int
    mono_ns: int | None = None
    turn: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    where: str | None = None

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)


@dataclass(frozen=True)
class SessionLog:
    """What a reader made of one snapshot of a session store."""

    path: str
    header: SessionHeader
    events: tuple[SessionEvent, ...]
    torn_tail: bytes | None = None  # an unterminated or unparsable last record, kept as it was

    def of_type(self, *types: str) -> list[SessionEvent]:
        return [e for e in self.events if e.type in types]

    def turn_events(self, turn: int) -> list[SessionEvent]:
        return [e for e in self.events if e.turn == turn]


@dataclass(frozen=True)
class Snapshot:
    """An agent's session store at one moment, as its reader took it.

    Opaque outside the reader that made it: a checker hands snapshots back to the reader
    (``LogFormat.changed`` / ``lost``) and never looks at ``data`` itself.
    """

    reader: str
    path: str
    data: bytes
    mono_ns: int


@dataclass(frozen=True)
class LogCapture:
    """The store at one moment: its snapshot, and what the reader made of it (or why not)."""

    moment: str  # "after kill 1", "before restart 2", "after restart 2 loaded", "final"
    snapshot: Snapshot | None  # None: there was no store to capture then
    log: SessionLog | None = None
    error: str | None = None  # the reader refused the snapshot, naming file and line


@dataclass(frozen=True)
class Change:
    """Where one snapshot of a store stops agreeing with another."""

    where: str  # "line 4, byte 120", "message 3"
    detail: str
    line: int | None = None


@dataclass(frozen=True)
class FormatProblem:
    """A breach of a store's own format rules, found by its reader (C10)."""

    note: str
    event: SessionEvent | None = None
    line: int | None = None


class LogFormat(Protocol):
    """What a checker may ask of the reader of an agent's store: pure questions about
    snapshots and parsed logs, no I/O. ``harness.readers`` adds snapshot and damage."""

    name: str
    capabilities: frozenset[Capability]

    def changed(self, before: Snapshot, after: Snapshot) -> Change | None:
        """The first difference of any kind (loading must not write), or None."""
        ...

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None:
        """The first durable record of ``before`` that ``after`` does not keep as it was, or None."""
        ...

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """The store's format rules broken in one parsed snapshot."""
        ...

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]:
        """What a restart on ``before`` broke of the format's rules for continuing a store
        (e.g. appending onto a torn tail instead of cutting it)."""
        ...


# ---------------------------------------------------------------------------
# Check results


@dataclass(frozen=True)
class Evidence:
    """Why a check decided as it did: a sentence, plus the items that show it."""

    summary: str
    items: tuple[Mapping[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary, "items": [dict(i) for i in self.items]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evidence:
        return cls(summary=data["summary"], items=tuple(data.get("items", ())))


class DecidedBy(enum.StrEnum):
    """Which half of a check decided it."""

    BLACK_BOX = "black-box"
    LOG = "log"
    BOTH = "both"


@dataclass(frozen=True)
class CheckResult:
    check: str  # contract ID, e.g. "C3"
    outcome: Outcome
    evidence: Evidence
    tier: Tier = Tier.MANDATORY
    name: str = ""  # the checker's function name, e.g. "pending_tool_calls_close"
    decided_by: DecidedBy | None = None
    # Why the check could not be decided, when that is only for want of a log reader: a
    # black-box agent is then "conformant (black-box)", not "incomplete".
    needs_reader: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "name": self.name,
            "outcome": self.outcome.value,
            "tier": self.tier.value,
            "decided_by": self.decided_by.value if self.decided_by else None,
            "needs_reader": self.needs_reader,
            "evidence": self.evidence.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CheckResult:
        decided = data.get("decided_by")
        return cls(
            check=data["check"],
            name=data.get("name", ""),
            outcome=Outcome(data["outcome"]),
            tier=Tier(data["tier"]),
            decided_by=DecidedBy(decided) if decided else None,
            needs_reader=bool(data.get("needs_reader", False)),
            evidence=Evidence.from_json(data["evidence"]),
        )


def passed(check: str, summary: str, *items: Mapping[str, Any]) -> CheckResult:
    return CheckResult(check, Outcome.PASS, Evidence(summary, tuple(items)))


def failed(check: str, summary: str, *items: Mapping[str, Any]) -> CheckResult:
    return CheckResult(check, Outcome.FAIL, Evidence(summary, tuple(items)))


def unknown(check: str, summary: str, *items: Mapping[str, Any]) -> CheckResult:
    return CheckResult(check, Outcome.UNKNOWN, Evidence(summary, tuple(items)))


def skipped(check: str, summary: str, *items: Mapping[str, Any]) -> CheckResult:
    return CheckResult(check, Outcome.SKIPPED, Evidence(summary, tuple(items)))


@dataclass(frozen=True)
class LatencySample:
    """One measured latency. ``value_ns`` may be negative only for L4 (early exit)."""

    latency: str  # one of contract.LATENCY_IDS
    value_ns: int
    agent: str
    adapter: str
    task: str
    repeat: int = 0
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"detail": dict(self.detail)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LatencySample:
        if data["latency"] not in LATENCY_IDS:
            raise ValueError(f"unknown latency {data['latency']!r} (known: {', '.join(LATENCY_IDS)})")
        return cls(**{k: data[k] for k in ("latency", "value_ns", "agent", "adapter", "task")},
                   repeat=data.get("repeat", 0), detail=data.get("detail", {}))


class RunStatus(enum.StrEnum):
    """What became of one work item."""

    RAN = "ran"  # the task played; its checks are verdicts
    NOT_RUN = "not run"  # the task does not apply to this agent (no driver, reader cannot damage, …)
    NOT_EXERCISED = "not exercised"  # a race: the moment the task meant to interrupt never came
    ERRORED = "errored"  # the harness itself failed; nothing about the agent is known


@dataclass(frozen=True)
class Attempt:
    """An earlier try of a work item that did not exercise what it meant to, and why."""

    reason: str
    duration_s: float


@dataclass(frozen=True)
class TimelineMark:
    """One moment (or span) of a task run on one lane, in ms from the task's start."""

    lane: str  # "harness", "model", "agent", "window w1", …
    kind: str  # "input", "request", "chunk", "stream-end", "stop", "kill", "restart", "settled", "exit", …
    at_ms: float
    label: str
    end_ms: float | None = None  # a span: a request's stream, a process's life
    ref: str | None = None  # what evidence may point at: "request 3", "pid 4242", "window w1"

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TimelineMark:
        return cls(lane=data["lane"], kind=data["kind"], at_ms=data["at_ms"], label=data["label"],
                   end_ms=data.get("end_ms"), ref=data.get("ref"))


@dataclass(frozen=True)
class TaskResult:
    """One task run once (one repeat) for one agent on one adapter."""

    task: str
    agent: str
    adapter: str
    repeat: int
    checks: tuple[CheckResult, ...]
    started: str = ""
    duration_s: float = 0.0
    status: RunStatus = RunStatus.RAN
    reason: str | None = None  # why it was not run, not exercised or errored; what the agent did wrong
    driver: str = ""
    mutant: str | None = None  # failpoint enabled in the agent, if any
    attempts: tuple[Attempt, ...] = ()  # earlier tries that were not exercised (retried)
    timeline: tuple[TimelineMark, ...] = ()
    evidence: Mapping[str, Any] = field(default_factory=dict)  # processes, records outline, run folder

    @property
    def error(self) -> str | None:
        """The harness's own failure, if that is what ended the run."""
        return self.reason if self.status is RunStatus.ERRORED else None

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "agent": self.agent,
            "adapter": self.adapter,
            "driver": self.driver,
            "repeat": self.repeat,
            "mutant": self.mutant,
            "started": self.started,
            "duration_s": self.duration_s,
            "status": self.status.value,
            "reason": self.reason,
            "attempts": [dataclasses.asdict(a) for a in self.attempts],
            "checks": [c.to_json() for c in self.checks],
            "timeline": [m.to_json() for m in self.timeline],
            "evidence": dict(self.evidence),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskResult:
        if "status" in data:
            status, reason = RunStatus(data["status"]), data.get("reason")
        else:  # version 1: an error meant the harness failed; a run with every check skipped "not run"
            status, reason = (RunStatus.ERRORED, data["error"]) if data.get("error") else (RunStatus.RAN, None)
        return cls(
            task=data["task"],
            agent=data["agent"],
            adapter=data["adapter"],
            driver=data.get("driver", ""),
            repeat=data["repeat"],
            mutant=data.get("mutant"),
            started=data.get("started", ""),
            duration_s=data.get("duration_s", 0.0),
            status=status,
            reason=reason,
            attempts=tuple(Attempt(**a) for a in data.get("attempts", ())),
            checks=tuple(CheckResult.from_json(c) for c in data["checks"]),
            timeline=tuple(TimelineMark.from_json(m) for m in data.get("timeline", ())),
            evidence=data.get("evidence", {}),
        )


def task_verdict(result: TaskResult) -> Verdict | None:
    """The contract's verdict for one task run; None when it did not run (not counted)."""
    if result.status is RunStatus.NOT_RUN:
        return None
    if result.status is not RunStatus.RAN:
        return Verdict.INCOMPLETE
    return verdict_of(result.checks, agent_failure=result.reason)


def verdict_of(checks: tuple[CheckResult, ...] | list[CheckResult], *, agent_failure: str | None = None) -> Verdict:
    """The verdict levels exactly as the contract defines them, over mandatory checks."""
    mandatory = [c for c in checks if c.tier is Tier.MANDATORY]
    if any(c.outcome is Outcome.FAIL for c in mandatory):
        return Verdict.NOT_CONFORMANT
    undecided = [c for c in mandatory if c.outcome is Outcome.UNKNOWN]
    if agent_failure is not None or any(not c.needs_reader for c in undecided):
        return Verdict.INCOMPLETE
    return Verdict.CONFORMANT_BLACK_BOX if undecided else Verdict.CONFORMANT


def combine_verdicts(verdicts: list[Verdict]) -> Verdict:
    """An agent's score over many task runs: the worst level of any run."""
    order = (Verdict.NOT_CONFORMANT, Verdict.INCOMPLETE, Verdict.CONFORMANT_BLACK_BOX, Verdict.CONFORMANT)
    return next((v for v in order if v in verdicts), Verdict.INCOMPLETE)


@dataclass(frozen=True)
class RunResult:
    """Everything one ``stopbench run`` produced: what the results JSON holds."""

    run: Mapping[str, Any]  # agent, version, profile and hash, host, python, start, end, shard, incomplete
    tasks: tuple[TaskResult, ...]
    latencies: tuple[LatencySample, ...]

    @property
    def verdict(self) -> Verdict:
        """Not conformant on any failure; incomplete if a run errored, was not exercised after
        its retries, or if the run itself was cut short."""
        verdicts = [v for t in self.tasks if t.mutant is None and (v := task_verdict(t)) is not None]
        if self.run.get("incomplete"):
            verdicts.append(Verdict.INCOMPLETE)
        return combine_verdicts(verdicts)

    @property
    def conformant(self) -> bool:
        return self.verdict.ok

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RESULTS_FORMAT,
            "version": RESULTS_VERSION,
            "run": dict(self.run),
            "verdict": self.verdict.value,
            "tasks": [t.to_json() for t in self.tasks],
            "latencies": [s.to_json() for s in self.latencies],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunResult:
        if data.get("format") != RESULTS_FORMAT:
            raise ValueError(f"not a stopbench results file (format={data.get('format')!r})")
        if data.get("version") not in READABLE_RESULTS_VERSIONS:
            raise ValueError(f"results version {data.get('version')!r} is not supported "
                             f"(readable: {', '.join(map(str, READABLE_RESULTS_VERSIONS))})")
        return cls(
            run=data["run"],
            tasks=tuple(TaskResult.from_json(t) for t in data["tasks"]),
            latencies=tuple(LatencySample.from_json(s) for s in data["latencies"]),
        )


# ---------------------------------------------------------------------------
# Observations: what one task run saw. The runner's recorder collects them as they happen
# (drivers write into it, never into lists the runner edits); every checker is a function
# ``Observation -> CheckResult``. All times are ``time.monotonic_ns()``.


@dataclass(frozen=True)
class UserInput:
    """A user message the harness sent to the agent (a turn's input or a queued inbox item)."""

    text: str
    mono_ns: int
    queued: bool = False  # typed while a turn ran (inbox), not as a new turn


@dataclass(frozen=True)
class StopDelivery:
    """The harness asked the agent to stop the current turn (the request, not its effect).

    ``exercised`` is False when the turn had visibly ended before Stop arrived, so the race
    the task wanted was not run; checkers then answer ``skipped``.
    ``phase`` is what was running: ``"tool"`` (inside a bash window), ``"stream"`` (mid-SSE),
    or ``"other"``. ``chunks_seen`` is how many text chunks the agent demonstrably received
    (shown on screen or delivered as events) before Stop, or None when nobody can know.
    ``by`` says who fired it: the harness, the agent's own ``--timeout``, or the harness as
    the CI watchdog of an agent with no timeout option.
    """

    mono_ns: int
    source: str  # contract.STOP_SOURCES
    how: str  # "api", "signal:SIGINT", "key:esc", "timeout", "watchdog:SIGTERM"
    phase: str
    exercised: bool
    request: int | None = None  # fake-server request number that was streaming, if any
    window: str | None = None  # window id that was open, if any
    chunks_seen: int | None = None
    text_seen: str | None = None
    by: str = "harness"  # "harness", "agent-timeout", "watchdog"


@dataclass(frozen=True)
class Settlement:
    """How a turn ended, as the driver saw it (the effect of a Stop, or a turn's own end):
    the terminal's turn-ended line, the API's settled event, or the process exit."""

    mono_ns: int
    reason: str | None  # a contract reason when the agent says which, else None
    source: str | None
    how: str  # "screen: [turn ended: aborted (user)]", "api", "exit 3", "idle"
    pid: int | None = None


@dataclass(frozen=True)
class AgentKill:
    """A SIGKILL of the agent process at a beacon, with its store as it was right after."""

    mono_ns: int
    pid: int
    at: str  # "request-received", "chunk-flushed", "window-opened", "next-request", …
    request: int | None = None
    window: str | None = None
    log: LogCapture | None = None  # None: the agent has no reader, nothing was captured


@dataclass(frozen=True)
class Restart:
    """The agent started again on an existing session.

    ``before`` is the store when the restart began (after any damage the task did to it);
    ``after_load`` is the store once the agent had loaded it and before it was given new
    input (None when not observable). ``damage`` says what the harness did to it.
    """

    mono_ns: int
    before: LogCapture | None
    after_load: LogCapture | None
    damage: str | None = None  # None, "torn-tail", "mid-file"
    damage_line: int | None = None
    damage_where: str | None = None


@dataclass(frozen=True)
class ProcessExit:
    """An agent process ended (or was killed by the harness)."""

    pid: int
    role: str  # "run", "resume", "chat", …
    started_ns: int
    ended_ns: int
    returncode: int | None  # None when killed by a signal
    signal: int | None
    expect: str  # what the step asked for: "completed", "stopped", "timeout", "killed", "refused"
    timeout_s: float | None = None
    stderr_tail: str = ""
    argv: tuple[str, ...] = ()
    stdout_tail: str = ""


@dataclass(frozen=True)
class WindowObservation:
    """A bash window's process tree, as reported by its beacon, and what became of it."""

    window: str
    pids: tuple[Mapping[str, Any], ...]  # pid, ppid, pgid, sid, create_time, role
    stop_ns: int | None  # Stop delivered while the window was open
    gone_ns: int | None  # when the last process of the tree was seen gone
    survivors: tuple[Mapping[str, Any], ...] = ()  # still alive at the deadline


@dataclass(frozen=True)
class CanaryHit:
    """The canary key found in a file under the run's folders, as captured (unmasked: the
    one mask is applied where results are written)."""

    where: str  # path relative to the run root
    line: int
    excerpt: str
    profile_file: bool = False  # a file the profile itself wrote, still as written


@dataclass(frozen=True)
class AgentFailure:
    """The run ended early because of the agent, not the harness: what was awaited, and
    what the agent did instead. The checks the missing behaviour belongs to fail on it."""

    step: str  # "step 7 (wait: for='request', request=3)"
    awaited: str  # "request 3", "window w1", "the session id"
    what: str  # "the agent exited 1", "the server refused request 2: unbalanced history"
    after_restart: bool = False
    exit: ProcessExit | None = None
    records: tuple[Mapping[str, Any], ...] = ()  # the server's last records


@dataclass(frozen=True)
class Conventions:
    """What the profile declares about its agent, which some checks judge against."""

    exit_codes: Mapping[str, int] = field(default_factory=dict)  # the agent's own convention
    repair_outcome_unknown: str | None = None  # the agent's wording for TOOL_OUTCOME_UNKNOWN
    repair_not_started: str | None = None  # … and for TOOL_NOT_STARTED


@dataclass(frozen=True)
class Observation:
    """Everything a task run observed; the only input of a checker."""

    task: str
    agent: str
    adapter: str
    driver: str
    api_key: str  # the canary key handed to the agent (C13)
    records: tuple[Mapping[str, Any], ...] = ()  # fake-server records, in order
    inputs: tuple[UserInput, ...] = ()
    stops: tuple[StopDelivery, ...] = ()
    settlements: tuple[Settlement, ...] = ()
    kills: tuple[AgentKill, ...] = ()
    restarts: tuple[Restart, ...] = ()
    exits: tuple[ProcessExit, ...] = ()
    windows: tuple[WindowObservation, ...] = ()
    log_format: LogFormat | None = None  # None: the profile has no reader (black-box agent)
    log: SessionLog | None = None  # the final store, parsed
    log_error: str | None = None  # the reader refused the final store
    log_path: str | None = None
    canary_hits: tuple[CanaryHit, ...] = ()
    transcript: str = ""  # what the terminal showed / the agent printed (raw)
    failure: AgentFailure | None = None
    conventions: Conventions = field(default_factory=Conventions)

    def requests(self) -> list[Mapping[str, Any]]:
        return [r for r in self.records if r.get("kind") == "request"]

    def has(self, capability: Capability) -> bool:
        """Whether the agent's store records this (False for a black-box agent)."""
        return self.log_format is not None and capability in self.log_format.capabilities
