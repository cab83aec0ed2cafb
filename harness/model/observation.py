"""Observations: what one task run saw, the only input of a checker. The runner's recorder
collects the parts as they happen (drivers write into it, never into lists the runner edits);
all times are ``time.monotonic_ns()``, the clock every process on the host shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fake_server.records import Record, Request
from harness.model.session import Capability, LogCapture, LogFormat, SessionLog, Snapshot

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
    # A Stop delivered as a signal that did not reach the process holding the model
    # connection (an agent that relaunched itself into another process group): which, and why.
    missed: str | None = None


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
class TurnUpdate:
    """What an agent told its protocol client about a turn (ACP's ``session/update``): a
    tool call's status as it changed, and anything at all it sent for a turn after that
    turn's settlement. ``turn`` counts the driver's turns from 1; ``how`` names the message
    in the driver's transcript."""

    mono_ns: int  # read off the agent's output
    turn: int
    kind: str  # "tool_call" (a call's status) or the update's own kind ("agent_message_chunk", …)
    how: str
    call_id: str | None = None
    status: str | None = None  # pending, in_progress, completed, failed (or the agent's own word)
    after_end: bool = False  # sent after the turn had settled


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
    records: tuple[Record, ...] = ()  # the server's last records
    kind: str = ""  # the step's kind ("settle", "wait", …): which behaviour went missing


@dataclass(frozen=True)
class Conventions:
    """What the profile declares about its agent, which some checks judge against."""

    exit_codes: Mapping[str, int] = field(default_factory=dict)  # the agent's own convention
    repair_outcome_unknown: str | None = None  # the agent's wording for TOOL_OUTCOME_UNKNOWN
    repair_not_started: str | None = None  # … and for TOOL_NOT_STARTED
    # The agent runs a response's tool calls one after another, in order: a call behind one
    # still running at a kill had not started (so the black-box half can tell the classes apart).
    sequential_tools: bool = False


@dataclass(frozen=True)
class Observation:
    """Everything a task run observed; the only input of a checker."""

    task: str
    agent: str
    adapter: str
    driver: str
    api_key: str  # the canary key handed to the agent (C13)
    records: tuple[Record, ...] = ()  # fake-server records, in order, typed as the server wrote them
    inputs: tuple[UserInput, ...] = ()
    stops: tuple[StopDelivery, ...] = ()
    settlements: tuple[Settlement, ...] = ()
    kills: tuple[AgentKill, ...] = ()
    restarts: tuple[Restart, ...] = ()
    exits: tuple[ProcessExit, ...] = ()
    windows: tuple[WindowObservation, ...] = ()
    updates: tuple[TurnUpdate, ...] = ()  # what a protocol driver was told about turns (ACP)
    log_format: LogFormat | None = None  # None: the profile has no reader (black-box agent)
    log: SessionLog | None = None  # the final store, parsed
    log_snapshot: Snapshot | None = None  # the final store as it was taken (for the reader's ``lost``)
    log_error: str | None = None  # the reader refused the final store
    log_version_unknown: bool = False  # … because it was not written for the store's version
    log_path: str | None = None
    canary_hits: tuple[CanaryHit, ...] = ()
    transcript: str = ""  # what the terminal showed / the agent printed (raw)
    failure: AgentFailure | None = None
    conventions: Conventions = field(default_factory=Conventions)

    def requests(self) -> list[Request]:
        return [r for r in self.records if isinstance(r, Request)]

    def has(self, capability: Capability) -> bool:
        """Whether the agent's store records this (False for a black-box agent)."""
        return self.log_format is not None and capability in self.log_format.capabilities
