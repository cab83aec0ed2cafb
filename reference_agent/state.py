"""The session as a value: what the log's events add up to, and the model-visible history.

The journal is the session: a live session and a reloaded one are both built by feeding
events to ``SessionState.apply``, so restart is not a separate code path. Repair of a crash
(contract C2/C4) happens here, in memory only: ``repair_open_turn`` synthesizes the missing
turn end, and ``History.messages`` closes every dangling tool call with a result whose text
says what is known about it.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from . import failpoints

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


class History:
    """Chat Completions messages, built incrementally from events.

    Tool calls stay *open* from their assistant message until a ``tool_result`` arrives;
    whatever is still open when the next message or request needs a balanced history is
    closed here with a synthesized result (``TOOL_NOT_STARTED`` when no ``tool_call`` event
    shows it started, ``TOOL_OUTCOME_UNKNOWN`` when one does).
    """

    def __init__(self, system_prompt: str):
        self._messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
        self._open: OrderedDict[str, bool] = OrderedDict()  # call_id -> started
        self._open_message: dict[str, Any] | None = None
        self.repairs: list[dict[str, str]] = []

    def apply(self, event: dict[str, Any], inbox: dict[str, InboxItem]) -> None:
        kind = event["type"]
        if kind == "turn_started":
            self._close_open()
            texts = [inbox[i].text for i in event.get("inbox", ()) if i in inbox]
            if event.get("input"):
                texts.append(event["input"])
            self._messages.append({"role": "user", "content": "\n\n".join(texts)})
        elif kind == "session_resumed":
            # Written just after its turn's turn_started: the note goes before that user
            # message, so the request still ends with what the user said.
            at = len(self._messages) - 1 if self._messages[-1]["role"] == "user" else len(self._messages)
            self._messages.insert(at, {"role": "system", "content": event.get("note", "")})
        elif kind == "assistant_message":
            self._close_open()
            calls = event.get("tool_calls") or []
            if not event.get("text") and not calls:
                return
            message: dict[str, Any] = {"role": "assistant", "content": event.get("text") or None}
            if calls:
                message["tool_calls"] = [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls
                ]
                self._open = OrderedDict((c["id"], False) for c in calls)
                self._open_message = message
            self._messages.append(message)
        elif kind == "tool_call":
            if event.get("call_id") in self._open:
                self._open[event["call_id"]] = True
        elif kind == "tool_result":
            if self._open.pop(event.get("call_id"), None) is not None:
                self._messages.append({"role": "tool", "tool_call_id": event["call_id"], "content": event["output"]})

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
            kept = [c for c in self._open_message["tool_calls"] if c["id"] not in self._open]
            if kept:
                self._open_message["tool_calls"] = kept
            else:
                del self._open_message["tool_calls"]
            self._open.clear()
            return
        for call_id, started in self._open.items():
            marker, text = (TOOL_OUTCOME_UNKNOWN, OUTCOME_UNKNOWN_TEXT) if started else (TOOL_NOT_STARTED, NOT_STARTED_TEXT)
            self._messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
            self.repairs.append({"call_id": call_id, "repair": marker})
        self._open.clear()


@dataclass
class SessionState:
    """Everything the agent knows about a session, derived from its events alone."""

    header: dict[str, Any]
    history: History
    last_turn: int = 0
    open_turn: int | None = None
    steps_in_turn: int = 0
    inbox: dict[str, InboxItem] = field(default_factory=dict)
    endings: dict[int, dict[str, Any]] = field(default_factory=dict)  # turn -> turn_ended (or synthesized)

    def apply(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "turn_started":
            # A turn that was still open when a later one started was cut off by a crash
            # (the next process resumed after it): its end is synthesized too.
            self.repair_open_turn()
            self.last_turn = event["turn"]
            self.open_turn = event["turn"]
            self.steps_in_turn = 0
        elif kind == "model_request":
            self.steps_in_turn = event.get("step", self.steps_in_turn + 1)
        elif kind == "turn_ended":
            self.endings.setdefault(event["turn"], event)
            if self.open_turn == event["turn"]:
                self.open_turn = None
        elif kind == "inbox_queued":
            self.inbox[event["item_id"]] = InboxItem(event["item_id"], event.get("text", ""))
        elif kind in ("inbox_delivered", "inbox_canceled"):
            item = self.inbox.get(event["item_id"])
            if item is not None:
                item.status = "delivered" if kind == "inbox_delivered" else "canceled"
        self.history.apply(event, self.inbox)

    def pending_inbox(self) -> list[InboxItem]:
        return [i for i in self.inbox.values() if i.status == "queued"]

    def repair_open_turn(self) -> dict[str, Any] | None:
        """After a crash: the turn that never ended gets an ``interrupted`` end, in memory."""
        if self.open_turn is None:
            return None
        ending = {"type": "turn_ended", "turn": self.open_turn, "reason": "interrupted", "synthesized": True}
        self.endings[self.open_turn] = ending
        self.open_turn = None
        return ending


def parse_arguments(raw: str) -> Any:
    """Tool arguments are parsed once, when the call is complete; bad JSON is kept as text."""
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return {"_unparsed": raw}
