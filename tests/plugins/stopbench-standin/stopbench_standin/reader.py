"""Reader for the stand-in agent's session documents: ``<store>/<session id>.json``.

A document is one JSON object, ``{format: "standin-session", version: 1, id, cwd, model,
messages: [{role, content, tool_calls?, tool_call_id?, interrupted?, aborted?, note?}],
turns: [{first_message, outcome, cause, stop}], tool_starts}``, rewritten whole (atomically)
at every change. A turn owns the messages from its ``first_message`` to the next turn's.

=============================================  =================================================
document                                       canonical event
=============================================  =================================================
the turn's user message (not a resume note)    ``turn_started`` (input)
a resume note (``note = "resumed"``)           ``session_resumed``
``assistant`` message                          ``assistant_message`` (``interrupted`` as kept)
                                               and one ``tool_call`` per call
``tool`` message                               ``tool_result`` (``aborted`` as kept)
the turn's ``stop``                            ``stop_requested`` (``timeout``, else ``user``)
the turn's ``outcome``                         ``turn_ended`` (reason; ``cause`` as the error)
=============================================  =================================================

Not recorded, so never emitted: model requests, tool starts once finished, step settlements.
"""

from __future__ import annotations

import json
from typing import Any

from harness.model import Capability, Change, FormatProblem, LogCapture, SessionHeader, SessionLog, Snapshot
from harness.readers.base import (
    CannotDamage,
    Damage,
    LogDamaged,
    file_snapshot,
    first_byte_difference,
    unanswered_results,
)
from harness.readers.jsonl import Events

FORMAT, VERSION = "standin-session", 1


class StandinReader:
    name = "standin"
    capabilities = frozenset({Capability.TURN_ENDS, Capability.STOP_REQUESTS, Capability.INTERRUPTED_TEXT,
                              Capability.TOOL_ABORTS, Capability.FORMAT_RULES})
    damage_kinds: frozenset[str] = frozenset()
    agent_versions = "standin-agent (session documents version 1)"

    def snapshot(self, path: str) -> Snapshot | None:
        return file_snapshot(self.name, path)

    def parse(self, snapshot: Snapshot) -> SessionLog:
        doc = _document(snapshot.path, snapshot.data)
        messages = doc["messages"]
        firsts = [t["first_message"] for t in doc["turns"]] + [len(messages)]
        events = Events()
        for n, turn in enumerate(doc["turns"]):
            owned = range(firsts[n], firsts[n + 1])
            prompt = next((i for i in owned if messages[i]["role"] == "user" and not messages[i].get("note")), None)
            if prompt is None:
                continue
            events.start_turn(prompt + 1, where=f"messages[{prompt}]", input=messages[prompt]["content"], inbox=[])
            step = 0
            for i in owned:
                message, where = messages[i], f"messages[{i}]"
                if message["role"] == "user" and message.get("note"):
                    events.add("session_resumed", i + 1, where=where, note=message["content"])
                elif message["role"] == "assistant":
                    step += 1
                    calls = [_call(c) for c in message.get("tool_calls") or []]
                    events.add("assistant_message", i + 1, where=where, step=step, text=message.get("content") or "",
                               tool_calls=calls, interrupted=bool(message.get("interrupted")))
                    for call in calls:
                        events.add("tool_call", i + 1, where=where, step=step, call_id=call["id"], name=call["name"],
                                   arguments=call["arguments"])
                elif message["role"] == "tool":
                    events.add("tool_result", i + 1, where=where, call_id=message.get("tool_call_id"),
                               output=message.get("content") or "", aborted=bool(message.get("aborted")))
            if isinstance(turn.get("stop"), dict):
                source = "timeout" if turn["stop"].get("cause") == "timeout" else "user"
                events.add("stop_requested", firsts[n + 1], where=f"turns[{n}].stop", source=source)
            if turn.get("outcome"):
                events.add("turn_ended", firsts[n + 1], where=f"turns[{n}]", reason=turn["outcome"],
                           source=("timeout" if (turn.get("stop") or {}).get("cause") == "timeout" else "user")
                           if turn["outcome"] in ("aborted", "interrupted") else None,
                           error=turn.get("cause") if turn["outcome"] == "error" else None)
        header = SessionHeader(session_id=doc["id"], created=doc.get("created"), cwd=doc.get("cwd"),
                               model=doc.get("model"), adapter="chat", raw={"turns": len(doc["turns"])})
        return SessionLog(path=snapshot.path, header=header, events=tuple(events.items), torn_tail=None)

    def damage(self, path: str, kind: str) -> Damage:
        raise CannotDamage(f"this reader damages no stand-in document ({kind!r})")

    def changed(self, before: Snapshot, after: Snapshot) -> Change | None:
        return first_byte_difference(before.data, after.data)

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None:
        """Every message of ``before`` is still there, unchanged, in order."""
        try:
            old = _document(before.path, before.data)["messages"]
            new = _document(after.path, after.data)["messages"]
        except LogDamaged:
            return Change(where="the document", detail="the session became unreadable")
        for i, message in enumerate(old):
            if i >= len(new) or new[i] != message:
                return Change(where=f"messages[{i}]", detail=f"messages[{i}] was rewritten or dropped")
        return None

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        return unanswered_results(log, "tool message")

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]:
        return []  # a document rewritten whole has no torn tail to continue after


def _document(path: str, data: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as err:
        raise LogDamaged(path, None, f"not a JSON document ({err})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise LogDamaged(path, 1, f"not a {FORMAT} document")
    if doc.get("version") != VERSION:
        raise LogDamaged(path, 1, f"a {FORMAT} document of version {doc.get('version')!r}, not {VERSION}")
    if not isinstance(doc.get("messages"), list) or not isinstance(doc.get("turns"), list):
        raise LogDamaged(path, 1, "messages and turns must be arrays")
    return doc


def _call(call: dict[str, Any]) -> dict[str, Any]:
    raw = call.get("function")
    function: dict[str, Any] = raw if isinstance(raw, dict) else {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except ValueError:
        arguments = function.get("arguments")
    return {"id": call.get("id"), "name": function.get("name"), "arguments": arguments}

