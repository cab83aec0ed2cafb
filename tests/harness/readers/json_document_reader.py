"""A second session-store format, deliberately unlike contract-v1, to prove the reader seam.

One JSON document per session, rewritten whole every time a message is added::

    {"id": "s-doc",
     "messages": [{"id": "m1", "turn": 1, "role": "user", "text": "…", "at": <mono ns>},
                  {"id": "m2", "turn": 1, "role": "assistant", "text": "…", "tool_calls": [{id, name, arguments}],
                   "at": …},
                  {"id": "m3", "turn": 1, "role": "tool", "tool_call_id": "c1", "text": "…", "at": …}],
     "turns": [{"started": <mono ns>, "ended": <mono ns> | null, "outcome": "completed" | … | null}]}

It records no Stop requests, no tool starts (a call is known only from the assistant message
that asked for it), no aborted flags, no model requests, no step settlements, no inbox and no
interrupted flag on partial text, and it is not append-only — so its reader says so in its
capabilities, and checks that need those answer ``unknown`` naming them. A turn is known by
its start: an agent that records a turn's end by adding another entry with the same
``started`` (instead of filling in ``ended``) has ended that turn twice.

Its format rules (C10) are the document's own: every message has a unique string ``id``, a
role of ``user``/``assistant``/``tool`` and a string ``text``; a tool message names its call;
an ended turn has an outcome. It has no notion of a torn tail, so no continuation rules, and
no damage the harness could do to it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.model import (
    Capability,
    Change,
    FormatProblem,
    LogCapture,
    SessionEvent,
    SessionHeader,
    SessionLog,
    Snapshot,
    event_of,
)
from harness.readers.base import CannotDamage, Damage, LogDamaged, file_snapshot

ROLES = ("user", "assistant", "tool")


class JsonDocumentReader:
    name = "json-document"
    capabilities = frozenset({Capability.TURN_ENDS, Capability.MONO_TIMES, Capability.FORMAT_RULES})
    damage_kinds: frozenset[str] = frozenset()
    agent_versions = "the json-document test agent"

    def snapshot(self, path: str) -> Snapshot | None:
        return file_snapshot(self.name, path)

    def damage(self, path: str, kind: str) -> Damage:
        raise CannotDamage(f"a {self.name} store has no damage {kind!r}: it is rewritten whole")

    def parse(self, snapshot: Snapshot) -> SessionLog:
        doc = _document(snapshot)
        events: list[SessionEvent] = []

        def add(type: str, at: Any, turn: int | None, where: str, **data: Any) -> None:
            seq = len(events) + 1
            events.append(event_of(type, seq=seq, line=seq, mono_ns=at if isinstance(at, int) else None,
                                   turn=turn, data={"turn": turn, **data} if turn is not None else data, where=where))

        starts: list[Any] = []
        for entry in doc["turns"]:
            if entry.get("started") not in starts:
                starts.append(entry.get("started"))
        for number, started in enumerate(starts, start=1):
            mine = [(i, m) for i, m in enumerate(doc["messages"]) if m.get("turn") == number]
            first = next((m for _, m in mine if m.get("role") == "user"), None)
            index = next(i for i, e in enumerate(doc["turns"]) if e.get("started") == started)
            add("turn_started", started, number, f"turns[{index}]", input=str((first or {}).get("text", "")),
                inbox=[])
            step = 0
            for i, m in mine:
                fields = {k: v for k, v in m.items() if k not in ("turn", "at")}
                if m.get("role") == "assistant":
                    step += 1
                    add("assistant_message", m.get("at"), number, f"messages[{i}]", step=step,
                        **{**fields, "tool_calls": list(m.get("tool_calls") or [])})
                elif m.get("role") == "tool":
                    add("tool_result", m.get("at"), number, f"messages[{i}]", call_id=m.get("tool_call_id"),
                        output=m.get("text"), **fields)
            for i, entry in enumerate(doc["turns"]):
                if entry.get("started") == started and entry.get("ended") is not None:
                    add("turn_ended", entry.get("ended"), number, f"turns[{i}]", reason=entry.get("outcome"))
        header = SessionHeader(session_id=doc.get("id"),
                               raw={"id": doc.get("id"), "messages": len(doc["messages"]), "turns": len(doc["turns"])})
        return SessionLog(path=snapshot.path, header=header, events=tuple(events))

    def changed(self, before: Snapshot, after: Snapshot) -> Change | None:
        """Any difference: the first message or turn that differs, else the bytes themselves."""
        if before.data == after.data:
            return None
        try:
            old, new = _document(before), _document(after)
        except LogDamaged as err:
            return Change(where="the document", detail=f"rewritten, and one side is unreadable: {err}")
        for kind in ("messages", "turns"):
            for i in range(max(len(old[kind]), len(new[kind]))):
                was = old[kind][i] if i < len(old[kind]) else None
                now = new[kind][i] if i < len(new[kind]) else None
                if was != now:
                    return Change(where=f"{kind[:-1]} {i + 1}", detail=f"{was} became {now}")
        return Change(where="the document", detail=f"rewritten ({len(before.data)} bytes became {len(after.data)}) "
                                                    "with the same messages and turns")

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None:
        """Every message of ``before`` is still there, at its place and unchanged; every turn
        too (a turn that had ended keeps its end)."""
        try:
            old = _document(before)
        except LogDamaged:
            return None  # nothing of an unreadable document was durable
        try:
            new = _document(after)
        except LogDamaged as err:
            return Change(where="the document", detail=f"no longer readable: {err}")
        for i, message in enumerate(old["messages"]):
            kept = new["messages"][i] if i < len(new["messages"]) else None
            if kept != message:
                return Change(where=f"message {i + 1}", detail=f"{_brief(message)} became {_brief(kept)}")
        for i, turn in enumerate(old["turns"]):
            kept = new["turns"][i] if i < len(new["turns"]) else None
            if kept is None or kept.get("started") != turn.get("started") or (
                    turn.get("ended") is not None and (kept.get("ended"), kept.get("outcome")) !=
                    (turn.get("ended"), turn.get("outcome"))):
                return Change(where=f"turn {i + 1}", detail=f"{turn} became {kept}")
        return None

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        problems: list[FormatProblem] = []
        seen: set[Any] = set()
        for event in log.events:
            if event.type in ("assistant_message", "tool_result"):
                ident = event.get("id")
                if not isinstance(ident, str):
                    problems.append(FormatProblem(f"{event.where} has no string id", event, event.line))
                elif ident in seen:
                    problems.append(FormatProblem(f"{event.where} repeats the id {ident!r}", event, event.line))
                seen.add(ident)
                if not isinstance(event.get("text"), str):
                    problems.append(FormatProblem(f"{event.where} has no string text", event, event.line))
            if event.type == "tool_result" and not isinstance(event.get("call_id"), str):
                problems.append(FormatProblem(f"{event.where} is a tool message naming no call", event, event.line))
            if event.type == "turn_ended" and not isinstance(event.get("reason"), str):
                problems.append(FormatProblem(f"{event.where} ended with no outcome", event, event.line))
        return problems

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]:
        return []  # a document rewritten whole has no torn tail to continue after


def _document(snapshot: Snapshot) -> dict[str, Any]:
    try:
        doc = json.loads(snapshot.data)
    except ValueError as err:
        raise LogDamaged(snapshot.path, None, f"not a JSON document: {err}", where="the document") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list) or not isinstance(doc.get("turns"), list):
        raise LogDamaged(snapshot.path, None, "not a session document (no messages or turns)", where="the document")
    if not all(isinstance(m, dict) for m in doc["messages"]) or not all(isinstance(t, dict) for t in doc["turns"]):
        raise LogDamaged(snapshot.path, None, "a message or turn is not an object", where="the document")
    return doc


def _brief(message: Mapping[str, Any] | None) -> str:
    if message is None:
        return "nothing"
    return f"{message.get('role')} {message.get('id')!r} ({str(message.get('text'))[:40]!r})"


class DocumentStore:
    """A hand-made json-document store: the whole document, rewritten on every change."""

    def __init__(self, session_id: str = "s-doc"):
        self.doc: dict[str, Any] = {"id": session_id, "messages": [], "turns": []}
        self.count = 0

    def start(self, at: int) -> int:
        """A new turn; returns its number."""
        self.doc["turns"].append({"started": at, "ended": None, "outcome": None})
        return len({t["started"] for t in self.doc["turns"]})

    def say(self, turn: int, role: str, text: str, at: int, **fields: Any) -> str:
        self.count += 1
        ident = f"m{self.count}"
        self.doc["messages"].append({"id": ident, "turn": turn, "role": role, "text": text, "at": at, **fields})
        return ident

    def end(self, turn: int, outcome: str, at: int) -> None:
        self.doc["turns"][turn - 1].update(ended=at, outcome=outcome)

    def to_bytes(self) -> bytes:
        return json.dumps(self.doc).encode()
