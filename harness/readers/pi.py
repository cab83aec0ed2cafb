"""Reader for pi sessions: ``~/.pi/agent/sessions/--<cwd with dashes>--/<timestamp>_<session uuid>.jsonl``.

Written for session format version 3 as pi 0.73.x writes it, from recordings of 0.73.1
(``tests/fixtures/agents/pi-0.73.1``). The first line is the header (``type: session``,
``version``, ``id``, ``timestamp``, ``cwd``); every other entry has an 8-hex ``id`` and the
``parentId`` of the entry it follows, so entries form a tree whose active branch ends at
the last entry. pi writes nothing until the first assistant message exists (then the
entries so far at once), so a run killed before its first answer leaves no file at all.

=============================================  =================================================
entry                                           canonical event
=============================================  =================================================
``message`` role ``user``                       ``turn_started`` (input: the text)
``message`` role ``assistant``                  ``assistant_message`` (text blocks; ``toolCall``
                                                blocks as calls; ``stopReason`` as finish reason,
                                                ``interrupted`` when it is ``aborted``) and one
                                                ``tool_call`` per call (the model's request: no
                                                start is recorded); a call id ``<id>|<item>``
                                                (the Responses wire) is the wire's ``<id>``
``message`` role ``toolResult``                 ``tool_result`` (``aborted`` when the error text
                                                ends with pi's own status line ``Command aborted``)
``model_change``, ``thinking_level_change``,    not mapped (settings and bookkeeping)
``label``, ``session_info``, ``custom``, …
=============================================  =================================================

Not recorded, so never emitted: turn ends, Stop requests, model requests, tool starts, step
settlements. The wire of each answer is in the assistant's ``api`` field; the header's
``adapter`` is the wire (``chat``, ``responses``, ``anthropic``, ``gemini``) of the first.
"""

from __future__ import annotations

import json
from typing import Any

from harness.model import Capability, FormatProblem, SessionHeader, SessionLog, Snapshot
from harness.readers.base import LogDamaged, UnknownVersion, chain_problems, unanswered_results
from harness.readers.jsonl import Events, JsonlStore, Line, text_of

SUPPORTED_VERSIONS = (3,)
ENTRY_TYPES = frozenset({"message", "model_change", "thinking_level_change", "compaction", "branch_summary",
                         "custom", "custom_message", "label", "session_info"})
WIRES = {"openai-completions": "chat", "openai-responses": "responses", "anthropic-messages": "anthropic",
         "google-generative-ai": "gemini"}
ABORTED_STATUS = "Command aborted"  # the last line pi's bash tool gives an aborted command's output
# On the Responses wire pi keeps a call's id as "<call_id>|<output item id>"; the wire's call id
# is the part before the bar.
ID_SEPARATOR = "|"


class PiReader(JsonlStore):
    name = "pi"
    capabilities = frozenset({Capability.APPEND_ONLY, Capability.FORMAT_RULES, Capability.MONO_TIMES})
    agent_versions = "pi 0.73.x (session format 3)"
    torn_fragment = b'{"type":"message","id":"00000000","parentId":"00000000","timestamp":"2026-01-01T00:00:00.0'

    def parse(self, snapshot: Snapshot) -> SessionLog:
        lines, torn, cut = self.lines(snapshot)
        path = snapshot.path
        if not lines:
            return SessionLog(path=path, header=SessionHeader(session_id=None), events=(), torn_tail=torn,
                              cut_records=cut)
        header = _header(path, lines, self.agent_versions)
        events = Events()
        for line in lines[1:]:
            _check(path, line, self.agent_versions)
            rec = line.record
            if rec["type"] != "message":
                continue
            message = rec["message"]
            role = message["role"]
            extra = {"entry_id": rec["id"], "timestamp": rec.get("timestamp")}
            if role == "user":
                events.start_turn(line.number, input=text_of(message.get("content")), inbox=[], **extra)
            elif role == "assistant":
                blocks = message.get("content") if isinstance(message.get("content"), list) else []
                calls = [_call(b) for b in blocks if isinstance(b, dict) and b.get("type") == "toolCall"]
                step = 1 + sum(1 for e in events.items if e.type == "assistant_message" and e.turn == events.turn)
                events.add("assistant_message", line.number, step=step, text=text_of(blocks),
                           tool_calls=[{k: c[k] for k in ("id", "name", "arguments")} for c in calls],
                           finish_reason=message.get("stopReason"), interrupted=message.get("stopReason") == "aborted",
                           error=message.get("errorMessage"), model=message.get("model"),
                           wire=WIRES.get(message.get("api", "")), **extra)
                for call in calls:
                    events.add("tool_call", line.number, step=step, call_id=call["id"], name=call["name"],
                               arguments=call["args"], native_id=call["native_id"], **extra)
            elif role == "toolResult":
                output = text_of(message.get("content"))
                error = bool(message.get("isError"))
                events.add("tool_result", line.number, call_id=_wire_id(message.get("toolCallId")),
                           native_id=message.get("toolCallId"),
                           name=message.get("toolName"), output=output, is_error=error, exit_code=None,
                           aborted=error and output.rstrip().endswith(ABORTED_STATUS), **extra)
        return SessionLog(path=path, header=header, events=tuple(events.items), torn_tail=torn, cut_records=cut)

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """pi's own rules: each entry's ``parentId`` names an earlier entry (the first names
        none), and each tool result answers a call made before it."""
        return (unanswered_results(log, "tool result")
                + chain_problems(log.header.raw.get("parents", []), "entry", linear=False))


def _header(path: str, lines: list[Line], versions: str) -> SessionHeader:
    first = lines[0].record
    if first.get("type") != "session" or not isinstance(first.get("id"), str):
        raise LogDamaged(path, 1, f"the first line is not a session header (as {versions} writes it)")
    if first.get("version") not in SUPPORTED_VERSIONS:
        raise UnknownVersion(path, 1, f"session format version {first.get('version')!r}; this reader was written for "
                                  f"{versions} and does not know this version's format")
    answers = [ln.record["message"] for ln in lines[1:] if ln.record.get("type") == "message"
               and isinstance(ln.record.get("message"), dict) and ln.record["message"].get("role") == "assistant"]
    parents = [(ln.record["id"], ln.record.get("parentId"), ln.number) for ln in lines[1:]
               if isinstance(ln.record.get("id"), str)]
    return SessionHeader(session_id=first["id"], created=first.get("timestamp"), cwd=first.get("cwd"),
                         model=answers[0].get("model") if answers else None,
                         adapter=WIRES.get(answers[0].get("api", "")) if answers else None,
                         raw={"version": first["version"], "parents": parents})


def _check(path: str, line: Line, versions: str) -> None:
    rec = line.record
    kind = rec.get("type")
    if kind not in ENTRY_TYPES:
        raise LogDamaged(path, line.number, f"unknown entry type {kind!r} (this reader is for {versions})")
    if not isinstance(rec.get("id"), str):
        raise LogDamaged(path, line.number, f"{kind} entry lacks its id (as {versions} writes it)")
    if kind == "message":
        message = rec.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise LogDamaged(path, line.number, "message entry has no message with a role")


def _call(block: dict[str, Any]) -> dict[str, Any]:
    args = block.get("arguments") if isinstance(block.get("arguments"), dict) else {}
    return {"id": _wire_id(block.get("id")), "native_id": block.get("id"), "name": block.get("name"), "args": args,
            "arguments": json.dumps(args)}


def _wire_id(native: Any) -> Any:
    return native.split(ID_SEPARATOR, 1)[0] if isinstance(native, str) else native
