"""Events as a replay of the log reads them: a struct per event type, of the fields its
handler uses, and the decoder that turns lines into those structs.

Why structs: a resume needs a few fields of each event, not the envelope, the request and
the time string every line also carries. Decoding a line into a struct skips every other
field, so a replay never builds them only to drop them (a third of the decoding of a long
log). The same handlers take live events, which are dicts, through ``apply_all``.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import msgspec


class Event(msgspec.Struct, tag_field="type", kw_only=True, gc=False):
    """An event as a replay target reads it. Each target declares a subclass per event type
    it uses (the tag is the type) holding only the fields its handler reads; a field
    without a default is one that handler cannot do without. No cycles can form through
    the decoded values, hence ``gc=False``."""

    seq: Any = None


# The event types of contract-log v1 (docs/contract-log-v1.md): the ones a target has no
# handler for are decoded to their seq alone. A line of any other type is read as a dict.
EVENT_TYPES = ("turn_started", "session_resumed", "model_request", "assistant_message", "tool_call",
               "tool_started", "tool_result", "step_settled", "stop_requested", "turn_ended", "inbox_queued",
               "inbox_delivered", "inbox_canceled", "torn_tail_dropped")


class Replayer(Protocol):
    """What a log is replayed into: the handler of each event type that matters to it,
    keyed by the ``Event`` subclass it reads."""

    handlers: dict[type[Event], Callable[[Any], None]]


def tag_of(kind: type[Event]) -> str:
    return kind.__struct_config__.tag  # type: ignore[return-value]


@functools.cache
def _bare(type_: str) -> type[Event]:
    return msgspec.defstruct(f"Bare_{type_}", [], bases=(Event,), tag=type_)  # type: ignore[return-value]


def events_decoder(handlers: dict[type[Event], Any]) -> msgspec.json.Decoder:
    """What a replay into a target with ``handlers`` decodes lines with: each line to the
    struct its handler reads, a line of every other v1 type to its bare seq."""
    return _events_decoder(frozenset(handlers))


@functools.cache
def _events_decoder(kinds: frozenset[type[Event]]) -> msgspec.json.Decoder:
    handled = {tag_of(kind) for kind in kinds}
    union = tuple(kinds) + tuple(_bare(t) for t in EVENT_TYPES if t not in handled)
    return msgspec.json.Decoder(functools.reduce(operator.or_, union))


@functools.cache
def kinds_by_tag(kinds: frozenset[type[Event]]) -> dict[str, type[Event]]:
    return {tag_of(kind): kind for kind in kinds}


def apply_all(into: Replayer, events: Iterable[dict[str, Any]]) -> None:
    """Hand events already decoded as dicts (the live ones, or a load's) to ``into``'s
    handlers, each as the struct its handler reads; one that lacks a field the handler
    cannot do without raises ``msgspec.ValidationError``."""
    handlers = into.handlers
    kind_of = kinds_by_tag(frozenset(handlers)).get
    convert = msgspec.convert
    for event in events:
        kind = kind_of(event["type"])
        if kind is not None:
            handlers[kind](convert(event, kind))
