"""The session as a value: what the log's events add up to, and the model-visible history.

The journal is the session: a live session and a reloaded one are both built by feeding
events to ``SessionState.apply``, so restart is not a separate code path. Repair of a crash
(contract C2/C4) happens here, in memory only: ``repair_open_turn`` synthesizes the missing
turn end, and ``History.messages`` closes every dangling tool call with a result whose text
says what is known about it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import UNSET

from . import failpoints
from .events import Event, apply_all

TOOL_NOT_STARTED = "TOOL_NOT_STARTED"
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"

NOT_STARTED_TEXT = (
    "TOOL_NOT_STARTED: this tool call was requested but never started, because the turn was "
    "interrupted first. It had no effect. Run it again if it is still needed."
)
OUTCOME_UNKNOWN_TEXT = (
    "TOOL_OUTCOME_UNKNOWN: this tool call was started, but the session was interrupted before "
    "its result was recorded, so whether it finished and what it changed is unknown. Retry it "
    "only if it is read-only or idempotent; otherwise verify the current state first (or ask "
    "the user) before deciding whether to run it again."
)


def resume_note(gap_s: float) -> str:
    return (
        f"Session resumed after {_duration(gap_s)}. Files may have changed since; "
        "read them again before editing."
    )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


@dataclass
class InboxItem:
    item_id: str
    text: str
    status: str = "queued"  # queued | delivered | canceled


# The fields of each event the state is built from (docs/contract-log-v1.md has them all).
class TurnStarted(Event, tag="turn_started"):
    turn: Any
    input: Any = None
    inbox: Any = None


class SessionResumed(Event, tag="session_resumed"):
    note: Any = ""


class AssistantMessage(Event, tag="assistant_message"):
    text: Any = None
    tool_calls: Any = None


class ToolCall(Event, tag="tool_call"):
    call_id: Any = None


class ToolStarted(Event, tag="tool_started"):
    call_id: Any = UNSET  # needed only with a tag
    tag: Any = None


class ToolResult(Event, tag="tool_result"):
    call_id: Any = None
    output: Any = UNSET  # needed only for a call still open


class TurnEnded(Event, tag="turn_ended"):
    turn: Any
    reason: Any


class InboxQueued(Event, tag="inbox_queued"):
    item_id: Any
    text: Any = ""


class InboxDelivered(Event, tag="inbox_delivered"):
    item_id: Any


class InboxCanceled(Event, tag="inbox_canceled"):
    item_id: Any


def required(value: Any, name: str) -> Any:
    """A field an event may lack unless this use of it needs it."""
    if value is UNSET:
        raise KeyError(name)
    return value


class History:
    """Chat Completions messages, built incrementally from events.

    Tool calls stay *open* from their assistant message until a ``tool_result`` arrives;
    whatever is still open when the next message or request needs a balanced history is
    closed here with a synthesized result (``TOOL_NOT_STARTED`` when no ``tool_call`` event
    shows it started, ``TOOL_OUTCOME_UNKNOWN`` when one does).
    """

    def __init__(self, system_prompt: str):
        self._messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
        self._open: dict[str, bool] = {}  # call_id -> started, in the order the model asked
        self._open_message: dict[str, Any] | None = None
        self.repairs: list[dict[str, str]] = []

    def user(self, event: TurnStarted, inbox: dict[str, InboxItem]) -> None:
        if self._open:
            self._close_open()
        content = event.input or ""
        queued = event.inbox
        if queued:  # items typed during the previous turn come first
            texts = [inbox[i].text for i in queued if i in inbox]
            if content:
                texts.append(content)
            content = "\n\n".join(texts)
        self._messages.append({"role": "user", "content": content})

    def resumed(self, event: SessionResumed) -> None:
        # Written just after its turn's turn_started: the note goes before that user
        # message, so the request still ends with what the user said.
        at = len(self._messages) - 1 if self._messages[-1]["role"] == "user" else len(self._messages)
        self._messages.insert(at, {"role": "system", "content": event.note})

    def assistant(self, event: AssistantMessage) -> None:
        # Plain loops, no comprehensions: on Python 3.11 each comprehension is a function
        # call, and a replay runs this once per step (23k times on the 132k-event log).
        if self._open:
            self._close_open()
        calls = event.tool_calls
        text = event.text
        if not calls:
            if text:
                self._messages.append({"role": "assistant", "content": text})
            return
        wire = []
        opened = self._open  # empty here: refilled, not replaced (one dict fewer per step)
        for call in calls:
            wire.append({"id": call["id"], "type": "function",
                         "function": {"name": call["name"], "arguments": call["arguments"]}})
            opened[call["id"]] = False
        message = {"role": "assistant", "content": text or None, "tool_calls": wire}
        self._open_message = message
        self._messages.append(message)

    def call_started(self, event: ToolCall) -> None:
        if event.call_id in self._open:
            self._open[event.call_id] = True

    def result(self, event: ToolResult) -> None:
        call_id = event.call_id
        if isinstance(call_id, str) and self._open.pop(call_id, None) is not None:
            self._messages.append({"role": "tool", "tool_call_id": call_id,
                                   "content": required(event.output, "output")})

    def messages(self) -> list[dict[str, Any]]:
        """The history for the next request: balanced (every tool call has a result)."""
        self._close_open()
        return list(self._messages)

    def _close_open(self) -> None:
        if not self._open:
            return
        if failpoints.on("no-repair"):
            self._open.clear()
            return
        if failpoints.on("drop-dangling-call"):
            assert self._open_message is not None  # set together with _open
            kept = [c for c in self._open_message["tool_calls"] if c["id"] not in self._open]
            if kept:
                self._open_message["tool_calls"] = kept
            else:
                del self._open_message["tool_calls"]
            self._open.clear()
            return
        for call_id, started in self._open.items():
            marker, text = ((TOOL_OUTCOME_UNKNOWN, OUTCOME_UNKNOWN_TEXT) if started
                            else (TOOL_NOT_STARTED, NOT_STARTED_TEXT))
            self._messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
            self.repairs.append({"call_id": call_id, "repair": marker})
        self._open.clear()


# One string per reason, shared by every turn: the decoder makes a new string per event.
_REASONS = {r: r for r in ("completed", "aborted", "interrupted", "error", "blocked", "max_tokens")}


@dataclass
class SessionState:
    """Everything the agent knows about a session, derived from its events alone.

    ``handlers`` maps each event type that changes the state (as the struct of the fields
    it reads) to the bound method that applies it; types that change nothing (requests,
    settled steps, Stop requests) have none. A replay of 132k events then costs one lookup
    per event and one call per event that matters (``log.load`` decodes the lines to those
    structs and walks the table directly while it checks the sequence).
    """

    header: dict[str, Any]
    history: History
    last_turn: int = 0
    open_turn: int | None = None
    inbox: dict[str, InboxItem] = field(default_factory=dict)
    endings: dict[int, str] = field(default_factory=dict)  # turn -> reason of its turn_ended (or the synthesized one)
    repaired: set[int] = field(default_factory=set)  # turns whose end was synthesized in memory
    running_tags: dict[str, str] = field(default_factory=dict)  # call_id -> tag of a started, unfinished call
    handlers: dict[type[Event], Callable[[Any], None]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.handlers = {
            TurnStarted: self._turn_started,
            TurnEnded: self._turn_ended,
            SessionResumed: self.history.resumed,
            AssistantMessage: self.history.assistant,
            ToolCall: self.history.call_started,
            ToolStarted: self._tool_started,
            ToolResult: self._tool_result,
            InboxQueued: self._inbox_queued,
            InboxDelivered: self._inbox_delivered,
            InboxCanceled: self._inbox_canceled,
        }

    def apply(self, event: dict[str, Any]) -> None:
        """Apply one event as written (a dict)."""
        apply_all(self, (event,))

    def pending_inbox(self) -> list[InboxItem]:
        return [i for i in self.inbox.values() if i.status == "queued"]

    def repair_open_turn(self) -> None:
        """After a crash: the turn that never ended gets an ``interrupted`` end, in memory."""
        if self.open_turn is not None:
            self.endings[self.open_turn] = "interrupted"
            self.repaired.add(self.open_turn)
            self.open_turn = None

    def _turn_started(self, event: TurnStarted) -> None:
        # A turn that was still open when a later one started was cut off by a crash
        # (the next process resumed after it): its end is synthesized too.
        if self.open_turn is not None:
            self.repair_open_turn()
        hash(event.turn)  # a turn keys its ending: one that cannot is damage here, at its line
        self.last_turn = self.open_turn = event.turn
        self.history.user(event, self.inbox)

    def _turn_ended(self, event: TurnEnded) -> None:
        # The reason only, not the event: a kept event would hold its memory (and its
        # time string) for the life of the session, 7.8k of them on the 132k-event log.
        turn = event.turn
        if turn not in self.endings:
            self.endings[turn] = _REASONS.get(event.reason, event.reason)
        if self.open_turn == turn:
            self.open_turn = None

    def _tool_started(self, event: ToolStarted) -> None:
        if event.tag:
            self.running_tags[required(event.call_id, "call_id")] = event.tag

    def _tool_result(self, event: ToolResult) -> None:
        call_id = event.call_id
        if isinstance(call_id, str):
            self.running_tags.pop(call_id, None)
        self.history.result(event)

    def _inbox_queued(self, event: InboxQueued) -> None:
        self.inbox[event.item_id] = InboxItem(event.item_id, event.text)

    def _inbox_delivered(self, event: InboxDelivered) -> None:
        self._inbox_settled(event.item_id, "delivered")

    def _inbox_canceled(self, event: InboxCanceled) -> None:
        self._inbox_settled(event.item_id, "canceled")

    def _inbox_settled(self, item_id: Any, status: str) -> None:
        item = self.inbox.get(item_id)
        if item is not None:
            item.status = status


def parse_arguments(raw: str) -> Any:
    """Tool arguments are parsed once, when the call is complete; bad JSON is kept as text.

    The log's own decoder parses them, so whatever an argument holds is something the log
    can write and read back (a ``NaN``, which no JSON standard allows, stays text)."""
    try:
        return msgspec.json.decode(raw) if raw.strip() else {}
    except msgspec.DecodeError:
        return {"_unparsed": raw}
