"""Session logs as readers make them: canonical events, snapshots of a store, and the
questions a checker may ask of the store's reader (``LogFormat``). The events themselves are
``harness.model.events``, one type per event; the grammar is in ``harness.model``'s docstring."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from harness.model.events import Event, SessionEvent

E = TypeVar("E", bound=Event)



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
class SessionLog:
    """What a reader made of one snapshot of a session store."""

    path: str
    header: SessionHeader
    events: tuple[SessionEvent, ...]
    torn_tail: bytes | None = None  # an unterminated or unparsable last record, kept as it was
    # Records a crash cut short before the last, left in place by a restart that started a new
    # line after them (line, bytes as on disk): a store whose format allows it keeps them unparsed.
    cut_records: tuple[tuple[int, bytes], ...] = ()

    def of_type(self, *types: str) -> list[SessionEvent]:
        return [e for e in self.events if e.type in types]

    def events_of(self, cls: type[E]) -> list[E]:
        """The events of one type, typed: ``log.events_of(ToolResult)``."""
        return [e for e in self.events if isinstance(e, cls)]

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
    version_unknown: bool = False  # the refusal: a store version the reader was not written for
    # No snapshot because the store was looked for here (a path, or the profile's glob) and did
    # not exist: evidence that nothing was durable. None: nobody knew where to look.
    absent_from: str | None = None


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
