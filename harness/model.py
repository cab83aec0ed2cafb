"""The event and result model of stopbench: plain values, no I/O.

Every other part of the harness depends on this module and it depends on nothing of
theirs. Readers turn an agent's native session log into ``SessionEvent`` values; drivers
and the fake server's records produce ``Observation`` values; checkers turn both into
``CheckResult`` values; runs collect them, with ``LatencySample`` values, into ``RunResult``,
which is what the results JSON holds and every renderer reads.

Grammar
-------
A session is a header and a sequence of events::

    session   := header event*
    turn      := turn_started session_resumed? step* stop_requested? turn_ended
    step      := model_request assistant_message? (tool_call tool_started? tool_result?)* step_settled?
    inbox     := inbox_queued (inbox_delivered | inbox_canceled)?     -- interleaved anywhere

``stop_requested`` is the request and ``turn_ended`` the effect: two events, never one
edited into the other (Trio's ``cancel_called`` / ``cancelled_caught``). A turn whose end
nobody observed has no ``turn_ended``; a reader never invents one.

A check outcome is one of ``pass``, ``fail``, ``unknown`` (the evidence cannot decide it,
or the checker itself failed) and ``skipped`` (the task did not exercise it, e.g. the
turn had already ended when Stop arrived). Each carries ``evidence``: the log lines,
requests, PIDs or exit codes that decided it, enough for a person to re-check the verdict.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Mapping

RESULTS_FORMAT = "stopbench-results"
RESULTS_VERSION = 1

TURN_END_REASONS = frozenset(
    {"completed", "aborted", "interrupted", "error", "blocked", "max_tokens"}
)
ABORT_SOURCES = frozenset({"user", "parent", "disposed"})
STOP_SOURCES = ABORT_SOURCES | {"timeout"}

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

# Repair markers a reloaded agent puts at the start of a synthesized tool result (C4).
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
TOOL_NOT_STARTED = "TOOL_NOT_STARTED"


class Outcome(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"
    SKIPPED = "skipped"


class Tier(str, enum.Enum):
    """How much a check counts: mandatory checks decide conformance."""

    MANDATORY = "mandatory"
    ADVISORY = "advisory"
    INFORMATIONAL = "informational"


@dataclass(frozen=True)
class SessionHeader:
    session_id: str
    created: str
    cwd: str
    model: str
    adapter: str | None = None
    parent: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionEvent:
    """One event of a session log, in the canonical vocabulary of ``EVENT_TYPES``.

    ``line`` is the 1-based line number in the source file (the header is line 1), so
    evidence can point at it; ``data`` keeps every field the log had.
    """

    seq: int
    type: str
    line: int
    mono_ns: int | None = None
    turn: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)


@dataclass(frozen=True)
class SessionLog:
    """What a reader made of one session file."""

    path: str
    header: SessionHeader
    events: tuple[SessionEvent, ...]
    torn_tail: bytes | None = None  # the bytes of an unterminated or unparsable last line

    def of_type(self, *types: str) -> list[SessionEvent]:
        return [e for e in self.events if e.type in types]

    def turn_events(self, turn: int) -> list[SessionEvent]:
        return [e for e in self.events if e.turn == turn]


@dataclass(frozen=True)
class Evidence:
    """Why a check decided as it did: a sentence, plus the items that show it."""

    summary: str
    items: tuple[Mapping[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary, "items": [dict(i) for i in self.items]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Evidence":
        return cls(summary=data["summary"], items=tuple(data.get("items", ())))


@dataclass(frozen=True)
class CheckResult:
    check: str  # contract ID, e.g. "C3"
    outcome: Outcome
    evidence: Evidence
    tier: Tier = Tier.MANDATORY
    name: str = ""  # the checker's function name, e.g. "pending_tool_calls_close"

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "name": self.name,
            "outcome": self.outcome.value,
            "tier": self.tier.value,
            "evidence": self.evidence.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CheckResult":
        return cls(
            check=data["check"],
            name=data.get("name", ""),
            outcome=Outcome(data["outcome"]),
            tier=Tier(data["tier"]),
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


LATENCY_IDS = ("L1", "L2", "L3", "L4", "L5", "L6")


@dataclass(frozen=True)
class LatencySample:
    """One measured latency. ``value_ns`` may be negative only for L4 (early exit)."""

    latency: str  # "L1" … "L6"
    value_ns: int
    agent: str
    adapter: str
    task: str
    repeat: int = 0
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"detail": dict(self.detail)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "LatencySample":
        return cls(**{k: data[k] for k in ("latency", "value_ns", "agent", "adapter", "task")},
                   repeat=data.get("repeat", 0), detail=data.get("detail", {}))


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
    error: str | None = None  # a harness-side failure that prevented the task from running
    mutant: str | None = None  # failpoint enabled in the agent, if any

    @property
    def conformant(self) -> bool:
        return self.error is None and all(
            c.outcome is Outcome.PASS
            for c in self.checks
            if c.tier is Tier.MANDATORY and c.outcome is not Outcome.SKIPPED
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "agent": self.agent,
            "adapter": self.adapter,
            "repeat": self.repeat,
            "mutant": self.mutant,
            "started": self.started,
            "duration_s": self.duration_s,
            "error": self.error,
            "checks": [c.to_json() for c in self.checks],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TaskResult":
        return cls(
            task=data["task"],
            agent=data["agent"],
            adapter=data["adapter"],
            repeat=data["repeat"],
            mutant=data.get("mutant"),
            started=data.get("started", ""),
            duration_s=data.get("duration_s", 0.0),
            error=data.get("error"),
            checks=tuple(CheckResult.from_json(c) for c in data["checks"]),
        )


@dataclass(frozen=True)
class RunResult:
    """Everything one ``stopbench run`` produced: what the results JSON holds."""

    run: Mapping[str, Any]  # agent profile and version, stopbench version, host, python, start, end, shard
    tasks: tuple[TaskResult, ...]
    latencies: tuple[LatencySample, ...]

    @property
    def conformant(self) -> bool:
        return all(t.conformant for t in self.tasks if t.mutant is None)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RESULTS_FORMAT,
            "version": RESULTS_VERSION,
            "run": dict(self.run),
            "tasks": [t.to_json() for t in self.tasks],
            "latencies": [s.to_json() for s in self.latencies],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunResult":
        if data.get("format") != RESULTS_FORMAT:
            raise ValueError(f"not a stopbench results file (format={data.get('format')!r})")
        if data.get("version") != RESULTS_VERSION:
            raise ValueError(
                f"results version {data.get('version')!r} is not supported (expected {RESULTS_VERSION})"
            )
        return cls(
            run=data["run"],
            tasks=tuple(TaskResult.from_json(t) for t in data["tasks"]),
            latencies=tuple(LatencySample.from_json(s) for s in data["latencies"]),
        )


# ---------------------------------------------------------------------------
# Observations: what one task run saw. Drivers and the runner produce them; every checker
# is a function ``Observation -> CheckResult``. All times are ``time.monotonic_ns()``.


@dataclass(frozen=True)
class UserInput:
    """A user message the harness sent to the agent (a turn's input or a queued inbox item)."""

    text: str
    mono_ns: int
    queued: bool = False  # typed while a turn ran (inbox), not as a new turn


@dataclass(frozen=True)
class StopDelivery:
    """The harness asked the agent to stop the current turn.

    ``exercised`` is False when the turn had visibly ended before Stop arrived, so the race
    the task wanted was not run; checkers then answer ``skipped``.
    ``phase`` is what was running: ``"tool"`` (inside a bash window), ``"stream"`` (mid-SSE),
    or ``"other"``. ``chunks_seen`` is how many text chunks the agent demonstrably received
    (shown on screen or delivered as events) before Stop, or None when nobody can know.
    """

    mono_ns: int
    source: str  # user | parent | disposed | timeout
    how: str  # "api", "signal:SIGINT", "key:esc", "timeout", …
    phase: str
    exercised: bool
    request: int | None = None  # fake-server request number that was streaming, if any
    window: str | None = None  # window id that was open, if any
    chunks_seen: int | None = None
    text_seen: str | None = None


@dataclass(frozen=True)
class AgentKill:
    """A SIGKILL of the agent process at a beacon, with the log as it was right after."""

    mono_ns: int
    pid: int
    at: str  # "request-received", "chunk-flushed", "window-opened", "next-request", …
    request: int | None = None
    window: str | None = None
    log_bytes: bytes | None = None  # the session file's bytes right after the process was gone


@dataclass(frozen=True)
class Restart:
    """The agent started again on an existing session.

    ``bytes_before`` is the session file when the restart began (after any damage the task
    wrote into it); ``bytes_after_load`` is the file once the agent had loaded it and before
    it was given new input (None when not observable). ``damage`` says what the harness wrote.
    """

    mono_ns: int
    bytes_before: bytes | None
    bytes_after_load: bytes | None
    damage: str | None = None  # None, "torn-tail", "mid-file"
    damage_line: int | None = None


@dataclass(frozen=True)
class ProcessExit:
    """A headless agent process ended (or was killed by the harness)."""

    pid: int
    role: str  # "run", "resume", "chat", …
    started_ns: int
    ended_ns: int
    returncode: int | None  # None when killed by a signal
    signal: int | None
    expect: str  # what the step asked for: "completed", "stopped", "timeout", "killed", "refused"
    timeout_s: float | None = None
    stderr_tail: str = ""


@dataclass(frozen=True)
class WindowObservation:
    """A bash window's process tree, as reported by its beacon, and what became of it."""

    window: str
    pids: tuple[Mapping[str, Any], ...]  # pid, ppid, pgid, sid, create_time, role
    stop_ns: int | None  # Stop delivered while the window was open
    gone_ns: int | None  # when the last process of the tree was seen gone
    survivors: tuple[Mapping[str, Any], ...] = ()  # still alive at the deadline


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
    kills: tuple[AgentKill, ...] = ()
    restarts: tuple[Restart, ...] = ()
    exits: tuple[ProcessExit, ...] = ()
    windows: tuple[WindowObservation, ...] = ()
    log: SessionLog | None = None  # final session log via the profile's reader; None if black-box
    log_error: str | None = None  # the reader refused the final log
    log_path: str | None = None
    canary_hits: tuple[Mapping[str, Any], ...] = ()  # {where, line, excerpt}
    transcript: str = ""  # what the terminal showed / the agent printed

    def requests(self) -> list[Mapping[str, Any]]:
        return [r for r in self.records if r.get("kind") == "request"]
