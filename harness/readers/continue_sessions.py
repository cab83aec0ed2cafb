"""Reader for Continue CLI sessions: ``~/.continue/sessions/<session uuid>.json``.

Written for the session documents of Continue CLI 1.5.x, from recordings of 1.5.47
(``tests/fixtures/agents/continue-1.5.47``). A session is one JSON document, ``{sessionId,
title, workspaceDirectory, history: [{message, contextItems, toolCallStates?}], usage}``,
written whole; ``sessions.json`` beside it is an index, not a session. In the recordings the
document was written only when a turn completed: a run killed or stopped mid-turn left none.

==============================================  ================================================
history item                                     canonical event
==============================================  ================================================
``message.role`` ``user``                        ``turn_started`` (input: ``content``)
``message.role`` ``assistant``                   ``assistant_message`` (``content``; ``toolCalls``
                                                 as calls) and one ``tool_call`` per call
``toolCallStates[]`` with a final ``status``     ``tool_result`` (``output`` contents; ``aborted``
(``done``, ``errored``, ``canceled``)            when ``canceled``)
==============================================  ================================================

Not recorded, so never emitted: turn ends, Stop requests, model requests, tool starts, step
settlements, and no timestamps (events carry no monotonic time). The document is rewritten,
not appended to: ``lost`` asks that every item but the last is kept as it was. Damage is
``mid-file`` only (a document has no torn last line): bytes in its middle are overwritten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.model import (
    Capability,
    Change,
    FormatProblem,
    LogCapture,
    SessionHeader,
    SessionLog,
    Snapshot,
)
from harness.readers.base import (
    CannotDamage,
    Damage,
    LogDamaged,
    file_snapshot,
    first_byte_difference,
    unanswered_results,
)
from harness.readers.jsonl import Events, text_of

ROLES = frozenset({"user", "assistant", "system", "tool"})
FINAL_STATES = {"done": False, "errored": False, "canceled": True}  # status → aborted


class ContinueReader:
    name = "continue"
    capabilities = frozenset({Capability.FORMAT_RULES})
    damage_kinds = frozenset({"mid-file"})
    agent_versions = "Continue CLI 1.5.x"

    def snapshot(self, path: str) -> Snapshot | None:
        return file_snapshot(self.name, path)

    def parse(self, snapshot: Snapshot) -> SessionLog:
        path = snapshot.path
        doc = _document(path, snapshot.data, self.agent_versions)
        events = Events()
        for n, item in enumerate(doc["history"], start=1):
            message = item["message"]
            role = message["role"]
            where = f"history item {n}"
            if role == "user":
                events.start_turn(n, where=where, input=text_of(message.get("content")), inbox=[])
            elif role == "assistant":
                calls = [c for c in message.get("toolCalls") or [] if isinstance(c, dict)]
                step = 1 + sum(1 for e in events.items if e.type == "assistant_message" and e.turn == events.turn)
                canonical = [_call(c) for c in calls]
                events.add("assistant_message", n, where=where, step=step, text=text_of(message.get("content")),
                           tool_calls=canonical, finish_reason=None, interrupted=False,
                           model=(message.get("usage") or {}).get("model"))
                for call in canonical:
                    events.add("tool_call", n, where=where, step=step, call_id=call["id"], name=call["name"],
                               arguments=_arguments(call["arguments"]))
                for state in item.get("toolCallStates") or []:
                    if isinstance(state, dict) and state.get("status") in FINAL_STATES:
                        events.add("tool_result", n, where=where, call_id=state.get("toolCallId"),
                                   output="".join(o.get("content", "") for o in state.get("output") or []
                                                  if isinstance(o, dict)),
                                   aborted=FINAL_STATES[state["status"]], status=state["status"], exit_code=None)
        model = next((e.get("model") for e in events.items if e.type == "assistant_message" and e.get("model")), None)
        header = SessionHeader(session_id=doc["sessionId"], cwd=doc.get("workspaceDirectory"), model=model,
                               adapter="chat", raw={"title": doc.get("title"), "items": len(doc["history"])})
        return SessionLog(path=path, header=header, events=tuple(events.items), torn_tail=None)

    def damage(self, path: str, kind: str) -> Damage:
        if kind != "mid-file":
            raise CannotDamage(f"a Continue session document has no damage {kind!r} (known: mid-file)")
        data = Path(path).read_bytes()
        if len(data) < 64:
            raise CannotDamage(f"{path} is too short to damage in its middle ({len(data)} bytes)")
        middle = len(data) // 2
        Path(path).write_bytes(data[:middle] + b"\x00 not json " + data[middle + 11:])
        line = data.count(b"\n", 0, middle) + 1
        return Damage(kind, line, f"line {line}")

    def changed(self, before: Snapshot, after: Snapshot) -> Change | None:
        return first_byte_difference(before.data, after.data)

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None:
        """Every history item of ``before`` but the last is still there, unchanged, in order;
        the last may have grown (its tool states filled in) but not vanished."""
        old = _items(before)
        new = _items(after)
        if old is None or new is None:
            return None if old is None else Change(where="the document", detail="the session became unreadable")
        for n, item in enumerate(old, start=1):
            if n > len(new):
                return Change(where=f"history item {n}", detail=f"{len(old)} history items became {len(new)}")
            if item != new[n - 1] and (n < len(old) or item["message"] != new[n - 1]["message"]):
                return Change(where=f"history item {n}", detail=f"history item {n} was rewritten")
        return None

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """Continue's own rules: each tool state answers a call of its assistant message."""
        return unanswered_results(log, "tool state")

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]:
        return []  # a document rewritten whole has no torn tail to continue after


def _document(path: str, data: bytes, versions: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as err:
        line = data.count(b"\n", 0, getattr(err, "pos", 0) or 0) + 1
        raise LogDamaged(path, line, f"unreadable session document (not JSON: {err})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("sessionId"), str) or not isinstance(doc.get("history"),
                                                                                                 list):
        raise LogDamaged(path, 1, f"not a session document (no sessionId and history, as {versions} writes them)")
    for n, item in enumerate(doc["history"], start=1):
        message = item.get("message") if isinstance(item, dict) else None
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise LogDamaged(path, None, f"history item {n} has no message with a known role",
                             where=f"history item {n}")
    return doc


def _items(snapshot: Snapshot) -> list[dict[str, Any]] | None:
    try:
        return _document(snapshot.path, snapshot.data, "")["history"]
    except LogDamaged:
        return None


def _call(call: dict[str, Any]) -> dict[str, Any]:
    raw = call.get("function")
    function: dict[str, Any] = raw if isinstance(raw, dict) else {}
    return {"id": call.get("id"), "name": function.get("name"), "arguments": function.get("arguments") or "{}"}


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
