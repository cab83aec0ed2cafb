"""Canonical session events: one frozen type per event, and the one way readers make them.

The grammar (``harness.model``'s docstring) is written here as types: ``SessionEvent`` is the
union of the event classes, each naming the canonical fields its type holds, so a checker
that asks a ``ToolResult`` for its ``call_id`` is checked by the type checker, not by a
docstring. ``event_of`` is how a reader turns one record of its store into an event: it picks
the class by type and fills the canonical fields from what the record holds (else from what
the reader derived, ``derived``); ``data`` keeps every field of the record as written, for
evidence and for a store's own extras (``Event.get``).

A canonical field the record lacks is ``None`` (or empty): a store that does not record
something yields nothing for it, and a check that needs it answers ``unknown``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast


@dataclass(frozen=True, kw_only=True)
class Event:
    """What every event has.

    ``line`` is where the store keeps it (the 1-based line of a JSONL file, the header being
    line 1; a row number for a database), so evidence can point at it; ``where`` says the same
    in words for stores that are not line-based; ``data`` keeps every field of the record as
    the store holds it. ``derived`` is what the reader concluded from other records (e.g. that
    a later resume left the record off the conversation it reloads): it may change as the
    store grows though the record itself does not, so whether a record was lost or changed is
    never decided on it.
    """

    type: ClassVar[str]
    seq: int
    line: int
    mono_ns: int | None = None
    turn: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    where: str | None = None
    derived: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        """A field as written, else as the reader derived it."""
        return self.data[key] if key in self.data else self.derived.get(key, default)


@dataclass(frozen=True, kw_only=True)
class TurnStarted(Event):
    type: ClassVar[str] = "turn_started"
    input: str | None = None
    inbox: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SessionResumed(Event):
    type: ClassVar[str] = "session_resumed"
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class ModelRequest(Event):
    """What was made durable before the stream: the canonical messages of the request."""

    type: ClassVar[str] = "model_request"
    step: int | None = None
    messages: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, kw_only=True)
class AssistantMessage(Event):
    type: ClassVar[str] = "assistant_message"
    step: int | None = None
    text: str | None = None
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    interrupted: bool | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCall(Event):
    """The call was durably recorded as *starting*."""

    type: ClassVar[str] = "tool_call"
    step: int | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: Any = None


@dataclass(frozen=True, kw_only=True)
class ToolStarted(Event):
    type: ClassVar[str] = "tool_started"
    call_id: str | None = None
    pid: int | None = None
    pgid: int | None = None


@dataclass(frozen=True, kw_only=True)
class ToolResult(Event):
    type: ClassVar[str] = "tool_result"
    call_id: str | None = None
    output: str | None = None
    aborted: bool | None = None


@dataclass(frozen=True, kw_only=True)
class StepSettled(Event):
    type: ClassVar[str] = "step_settled"
    step: int | None = None


@dataclass(frozen=True, kw_only=True)
class StopRequested(Event):
    """The request: a Stop reached the agent (``source``: user, parent, disposed, timeout)."""

    type: ClassVar[str] = "stop_requested"
    source: str | None = None


@dataclass(frozen=True, kw_only=True)
class TurnEnded(Event):
    """The effect: the turn settled (``reason``: ``contract.TURN_END_REASONS``)."""

    type: ClassVar[str] = "turn_ended"
    reason: str | None = None
    source: str | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class InboxQueued(Event):
    type: ClassVar[str] = "inbox_queued"
    item_id: str | None = None
    text: str | None = None


@dataclass(frozen=True, kw_only=True)
class InboxDelivered(Event):
    type: ClassVar[str] = "inbox_delivered"
    item_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class InboxCanceled(Event):
    type: ClassVar[str] = "inbox_canceled"
    item_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class TornTailDropped(Event):
    type: ClassVar[str] = "torn_tail_dropped"
    offset: int | None = None
    dropped: str | None = None


SessionEvent = (TurnStarted | SessionResumed | ModelRequest | AssistantMessage | ToolCall | ToolStarted | ToolResult
                | StepSettled | StopRequested | TurnEnded | InboxQueued | InboxDelivered | InboxCanceled
                | TornTailDropped)
EVENT_CLASSES: dict[str, type[Event]] = {cls.type: cls for cls in (
    TurnStarted, SessionResumed, ModelRequest, AssistantMessage, ToolCall, ToolStarted, ToolResult, StepSettled,
    StopRequested, TurnEnded, InboxQueued, InboxDelivered, InboxCanceled, TornTailDropped)}
EVENT_TYPES = frozenset(EVENT_CLASSES)
_BASE_FIELDS = frozenset(f.name for f in dataclasses.fields(Event))
_SEQUENCES = ("inbox", "messages", "tool_calls")  # canonical lists, held as tuples


def event_of(kind: str, *, seq: int, line: int, mono_ns: int | None = None, turn: int | None = None,
             data: Mapping[str, Any] | None = None, where: str | None = None,
             derived: Mapping[str, Any] | None = None) -> SessionEvent:
    """The event of type ``kind`` for a record holding ``data`` (``KeyError`` for a type
    outside the vocabulary: a reader maps its store onto ``EVENT_TYPES`` first)."""
    cls = EVENT_CLASSES[kind]
    data, derived = dict(data or {}), dict(derived or {})
    canonical: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in _BASE_FIELDS:
            continue
        value = data[f.name] if f.name in data else derived.get(f.name)
        if value is None:
            continue
        canonical[f.name] = tuple(value) if f.name in _SEQUENCES and isinstance(value, list | tuple) else value
    return cast(SessionEvent, cls(seq=seq, line=line, mono_ns=mono_ns, turn=turn, data=data, where=where,
                                  derived=derived, **canonical))


def with_data(event: SessionEvent, data: Mapping[str, Any]) -> SessionEvent:
    """``event`` with its record grown to ``data`` (a reader joining chunks into one message),
    its canonical fields made again from it: never ``dataclasses.replace(event, data=…)``,
    which would leave them as they were."""
    return event_of(event.type, seq=event.seq, line=event.line, mono_ns=event.mono_ns, turn=event.turn, data=data,
                    where=event.where, derived=event.derived)
