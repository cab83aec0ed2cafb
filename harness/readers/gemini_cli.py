"""Reader for Gemini CLI chats: ``~/.gemini/tmp/<project>/chats/session-<date>-<id8>.jsonl``.

Written for the stores of Gemini CLI 0.61.x, from recordings of 0.61.0
(``tests/fixtures/agents/gemini-cli-0.61.0``). The store has no version field, so the reader
knows its format by its shapes and refuses any record it does not know. Every line is one of:

- a header (``sessionId``, ``projectHash``, ``startTime`` …): written when a session starts
  and again at each resume, before the conversation is restored;
- a message (a string ``id``): a message with an id seen before replaces it in place (a model
  message is written when its text is complete and again, with ``toolCalls``, once its tools
  have run; a resume's checkpoint may give a message of another type an earlier id, which then
  replaces that message, as the agent's own loader does);
- ``{"$set": {…}}``: a metadata update; with ``messages`` it is a checkpoint that replaces the
  whole conversation (a session starts with one holding its ``<session_context>``, a resume
  writes one that restores the conversation);
- ``{"$rewindTo": id}``: the conversation from that message on is dropped.

The events are those of the conversation the agent reloads, in its order; each event's line is
where its message first appeared, and its time the time the message was first written: a resume
writes every earlier message again in its checkpoint, stamped with the resume's time and
without its model and token counts (the reader keeps what that copy leaves out). A call id is
given as the agent sends it to the model: the store keeps it behind a ``<function name>__``
prefix, which the agent strips from every request (``native_id`` keeps the stored form).

=============================================  =================================================
message                                         canonical event
=============================================  =================================================
``user`` with text (not a ``<session_context>``  ``turn_started`` (input: the text)
or ``<hook_context>`` block)
``gemini``                                      ``assistant_message`` (``content``; ``toolCalls`` as
                                                calls) and one ``tool_call`` per call
``user`` with ``functionResponse`` parts        ``tool_result`` (``aborted`` when the call's
                                                ``status`` is ``cancelled``); a call whose result is
                                                kept only in its ``toolCalls`` entry gets one there
``info``, ``warning``, ``error``                not mapped
=============================================  =================================================

Not recorded, so never emitted: turn ends, Stop requests, model requests, tool starts (a call
is written only once its tool has finished: a kill while it runs leaves no trace of it),
partial text, step settlements.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from harness.model import Capability, FormatProblem, SessionHeader, SessionLog, Snapshot
from harness.readers.base import LogDamaged
from harness.readers.jsonl import Events, JsonlStore, Line

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "warning", "error"})
CONTEXT_MARKERS = ("<session_context>", "<hook_context>")   # the agent's own context, not a prompt
# The working folder is recorded only in the session context's list of workspace folders.
WORKSPACE = re.compile(r"\*\*Workspace Directories:\*\*\n\s*- (.+)")


@dataclass
class _Message:
    line: int          # where it first appeared
    record: dict[str, Any]


class GeminiCliReader(JsonlStore):
    name = "gemini-cli"
    capabilities = frozenset({Capability.TOOL_ABORTS, Capability.APPEND_ONLY, Capability.FORMAT_RULES,
                              Capability.MONO_TIMES})
    agent_versions = "Gemini CLI 0.61.x"
    torn_fragment = b'{"id":"00000000-0000-4000-8000-000000000000","timestamp":"2026-01-01T00:00:00.000Z","type":"gem'

    def parse(self, snapshot: Snapshot) -> SessionLog:
        lines, torn, cut = self.lines(snapshot)
        metadata, messages = _replay(snapshot.path, lines, self.agent_versions)
        events = Events()
        calls: dict[str, dict[str, Any]] = {}     # call id → its toolCalls entry
        answered: set[str] = set()                # calls a user message's function response answers
        for message in messages.values():
            for call in _calls(message.record):
                calls[call["id"]] = call
            for part in _parts(message.record.get("content")) if message.record["type"] == "user" else []:
                if isinstance(part.get("functionResponse"), dict):
                    answered.add(part["functionResponse"].get("id"))
        for message in messages.values():
            rec, line = message.record, message.line
            extra = {"id": rec["id"], "timestamp": rec.get("timestamp")}
            if rec["type"] == "user":
                parts = _parts(rec.get("content"))
                text = _text(parts)
                if text.strip() and not text.lstrip().startswith(CONTEXT_MARKERS):
                    events.start_turn(line, input=text, inbox=[], **extra)
                for part in parts:
                    result = part.get("functionResponse")
                    if isinstance(result, dict):
                        _result(events, line, result, calls.get(str(result.get("id"))), extra)
            elif rec["type"] == "gemini":
                step = 1 + sum(1 for e in events.items if e.type == "assistant_message" and e.turn == events.turn)
                tool_calls = _calls(rec)
                events.add("assistant_message", line, step=step, text=_text(_parts(rec.get("content"))),
                           tool_calls=[{"id": wire_id(c["id"], c["name"]), "name": c["name"],
                                        "arguments": json.dumps(c.get("args") or {})} for c in tool_calls],
                           finish_reason=None, interrupted=False, model=rec.get("model"), **extra)
                for call in tool_calls:
                    events.add("tool_call", line, step=step, call_id=wire_id(call["id"], call["name"]),
                               native_id=call["id"], name=call["name"], arguments=call.get("args") or {},
                               status=call.get("status"), **extra)
                for call in tool_calls:      # a result kept only beside its call
                    kept = [p["functionResponse"] for p in _parts(call.get("result"))
                            if isinstance(p.get("functionResponse"), dict)]
                    if call["id"] not in answered and kept:
                        _result(events, line, kept[0], call, {**extra, "timestamp": call.get("timestamp")})
        model = next((m.record.get("model") for m in messages.values() if m.record["type"] == "gemini"
                      and isinstance(m.record.get("model"), str)), None)
        context = next((_text(_parts(m.record.get("content"))) for m in messages.values()
                        if m.record["type"] == "user" and CONTEXT_MARKERS[0] in _text(_parts(m.record.get("content")))),
                       "")
        workspace = WORKSPACE.search(context)
        header = SessionHeader(session_id=metadata.get("sessionId"), created=metadata.get("startTime"),
                               cwd=workspace.group(1).strip() if workspace else None, model=model, adapter="gemini",
                               raw={"projectHash": metadata.get("projectHash"), "kind": metadata.get("kind")})
        return SessionLog(path=snapshot.path, header=header, events=tuple(events.items), torn_tail=torn,
                          cut_records=cut)

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """Gemini CLI's own rule: each function response answers a call made before it."""
        calls: set[str] = set()
        problems = []
        for event in log.events:
            if event.type == "tool_call":
                calls.add(event.get("call_id"))
            if event.type == "tool_result" and event.get("call_id") not in calls:
                problems.append(FormatProblem(note=f"function response for {event.get('call_id')} answers no "
                                                   "earlier call", event=event, line=event.line))
        return problems


def _replay(path: str, lines: list[Line], versions: str) -> tuple[dict[str, Any], dict[str, _Message]]:
    """The metadata and the conversation (id → message, in order) the lines leave, replayed
    the way the agent reloads them."""
    if not lines:
        return {}, {}
    first = lines[0].record
    if not (isinstance(first.get("sessionId"), str) and isinstance(first.get("projectHash"), str)):
        raise LogDamaged(path, 1, f"the first line is not a session header (as {versions} writes it)")
    metadata: dict[str, Any] = {}
    messages: dict[str, _Message] = {}
    seen: dict[str, _Message] = {}     # every message as last written, where it first appeared

    def write(number: int, rec: Any) -> None:
        _check_message(path, number, rec, versions)
        before = seen.get(rec["id"])
        if before is not None and before.record["type"] == rec["type"]:
            # a new version: its content, the first time, the fields it left out
            rec = {**before.record, **rec, "timestamp": before.record.get("timestamp", rec.get("timestamp"))}
        seen[rec["id"]] = messages[rec["id"]] = _Message(before.line if before else number, rec)

    for line in lines:
        rec = line.record
        if isinstance(rec.get("id"), str):
            write(line.number, rec)             # an update keeps its place
        elif isinstance(rec.get("$set"), dict):
            update = rec["$set"]
            if isinstance(update.get("messages"), list):
                messages = {}
                for m in update["messages"]:
                    write(line.number, m)
            metadata.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(rec.get("$rewindTo"), str):
            ids = list(messages)
            keep = ids[:ids.index(rec["$rewindTo"])] if rec["$rewindTo"] in messages else []
            messages = {i: messages[i] for i in keep}
        elif isinstance(rec.get("sessionId"), str) and isinstance(rec.get("projectHash"), str):
            metadata.update(rec)
        else:
            raise LogDamaged(path, line.number, f"unknown record (keys {', '.join(sorted(rec)) or 'none'}; this "
                                                f"reader is for {versions})")
    return metadata, messages


def _check_message(path: str, line: int, rec: Any, versions: str) -> None:
    if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
        raise LogDamaged(path, line, "a message without an id")
    if rec.get("type") not in MESSAGE_TYPES:
        raise LogDamaged(path, line, f"message {rec['id']} has unknown type {rec.get('type')!r} (this reader is "
                                     f"for {versions})")
    for call in rec.get("toolCalls") or []:
        if not (isinstance(call, dict) and isinstance(call.get("id"), str) and isinstance(call.get("name"), str)):
            raise LogDamaged(path, line, f"message {rec['id']} has a tool call without id or name")


def _calls(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """A model message's calls: its ``toolCalls`` (with status and result), or, in a resume's
    checkpoint copy, which has none, the ``functionCall`` parts of its content."""
    if rec.get("type") != "gemini":
        return []
    if rec.get("toolCalls"):
        return list(rec["toolCalls"])
    return [{"id": p["functionCall"].get("id"), "name": p["functionCall"].get("name"),
             "args": p["functionCall"].get("args") or {}}
            for p in _parts(rec.get("content")) if isinstance(p.get("functionCall"), dict)
            and isinstance(p["functionCall"].get("id"), str) and isinstance(p["functionCall"].get("name"), str)]


def wire_id(native: Any, name: Any) -> Any:
    """A stored call id as the agent sends it: without its ``<function name>__`` prefix."""
    prefix = f"{str(name or '').strip() or 'generic_tool'}__"
    return native[len(prefix):] if isinstance(native, str) and native.startswith(prefix) else native


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    return [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []


def _text(parts: list[dict[str, Any]]) -> str:
    return "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))


def _result(events: Events, line: int, result: dict[str, Any], call: dict[str, Any] | None,
            extra: dict[str, Any]) -> None:
    raw = result.get("response")
    body: dict[str, Any] = raw if isinstance(raw, dict) else {}
    output = body.get("output", body.get("error", ""))
    status = call.get("status") if call else None
    native = result.get("id")
    events.add("tool_result", line, call_id=wire_id(native, result.get("name")), native_id=native,
               name=result.get("name"),
               output=output if isinstance(output, str) else json.dumps(output),
               aborted=status == "cancelled", status=status, is_error="error" in body, **extra)
