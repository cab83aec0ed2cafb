"""Reader for Qwen Code chats: ``~/.qwen/projects/<cwd with dashes>/chats/<session uuid>.jsonl``.

Written for the stores of Qwen Code 0.15.x and 0.24.x (the ``version`` field of its records),
from recordings of 0.15.10 and 0.24.4 (``tests/fixtures/agents/qwen-code-<version>``). 0.24
writes the same records with one more field, ``provenance`` (``real_user``, ``assistant_output``,
``tool_result``, ``system``), and ``toolCallResult.executionStatus`` beside ``status``; neither
changes what an event means. No header line: the
header comes from the first record (``sessionId``, ``cwd``, ``timestamp``) and the first
assistant ``model``. Records are chained by ``uuid`` / ``parentUuid``; messages are in
Gemini's shape (``role`` ``user`` / ``model``, ``parts`` of ``text``, ``functionCall``,
``functionResponse``).

=============================================  =================================================
record                                          canonical event
=============================================  =================================================
``user`` with text parts                        ``turn_started`` (input: the text)
``assistant``                                   ``assistant_message`` (text parts; ``functionCall``
                                                parts as calls) and one ``tool_call`` per call (the
                                                model's request: no start is recorded)
``tool_result`` (``functionResponse`` parts)    ``tool_result`` (``aborted`` when
                                                ``toolCallResult.status`` is ``cancelled``)
``system`` (``ui_telemetry``,                   not mapped (telemetry written after the fact:
``attribution_snapshot``, …)                    ``api_response``, ``tool_call``, ``api_error``)
=============================================  =================================================

Not recorded, so never emitted: turn ends, Stop requests (a Stop shows only as the cancelled
tool result and an ``APIUserAbortError`` telemetry line), model requests, tool starts,
partial text (a stream cut off leaves nothing), step settlements.
"""

from __future__ import annotations

import json
from typing import Any

from harness.model import Capability, FormatProblem, SessionHeader, SessionLog, Snapshot
from harness.readers.base import LogDamaged, UnknownVersion, chain_problems, unanswered_results
from harness.readers.jsonl import Events, JsonlStore, Line

SUPPORTED_VERSIONS = ("0.15.", "0.24.")
KNOWN_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
MESSAGE_TYPES = frozenset({"user", "assistant", "tool_result"})



class QwenCodeReader(JsonlStore):
    name = "qwen-code"
    capabilities = frozenset({Capability.TOOL_ABORTS, Capability.APPEND_ONLY, Capability.FORMAT_RULES,
                              Capability.MONO_TIMES})
    agent_versions = "Qwen Code 0.15.x, 0.24.x"
    torn_fragment = b'{"uuid":"00000000-0000-4000-8000-000000000000","parentUuid":null,"type":"assis'

    def parse(self, snapshot: Snapshot) -> SessionLog:
        lines, torn, cut = self.lines(snapshot)
        path = snapshot.path
        for line in lines:
            _check(path, line, self.agent_versions)
        header = _header(path, lines, self.agent_versions)
        events = Events()
        for line in lines:
            rec = line.record
            kind = rec["type"]
            if kind not in MESSAGE_TYPES:
                continue
            parts = rec["message"].get("parts") or []
            extra = {"uuid": rec["uuid"], "timestamp": rec.get("timestamp")}
            if kind == "user":
                text = _text(parts)
                if text or not any("functionResponse" in p for p in parts):
                    events.start_turn(line.number, input=text, inbox=[], **extra)
                continue
            if kind == "assistant":
                step = 1 + sum(1 for e in events.items if e.type == "assistant_message" and e.turn == events.turn)
                calls = [_call(p["functionCall"]) for p in parts if isinstance(p.get("functionCall"), dict)]
                events.add("assistant_message", line.number, step=step, text=_text(parts),
                           tool_calls=[{k: c[k] for k in ("id", "name", "arguments")} for c in calls],
                           finish_reason=None, interrupted=False, model=rec.get("model"), **extra)
                for call in calls:
                    events.add("tool_call", line.number, step=step, call_id=call["id"], name=call["name"],
                               arguments=call["args"], **extra)
                continue
            status = (rec.get("toolCallResult") or {}).get("status")
            for part in parts:
                response = part.get("functionResponse")
                if not isinstance(response, dict):
                    continue
                raw_body = response.get("response")
                body: dict[str, Any] = raw_body if isinstance(raw_body, dict) else {}
                output = body.get("output", body.get("error", ""))
                events.add("tool_result", line.number, call_id=response.get("id"), name=response.get("name"),
                           output=output if isinstance(output, str) else json.dumps(output),
                           aborted=status == "cancelled", status=status, exit_code=_exit_code(output),
                           is_error="error" in body, **extra)
        return SessionLog(path=path, header=header, events=tuple(events.items), torn_tail=torn, cut_records=cut)

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """Qwen Code's own rules: each record's ``parentUuid`` names the record before it (the
        chat is one chain), and each function response answers an earlier call."""
        return (unanswered_results(log, "function response")
                + chain_problems(log.header.raw.get("parents", []), "record", linear=True))


def _check(path: str, line: Line, versions: str) -> None:
    rec = line.record
    kind = rec.get("type")
    if kind not in KNOWN_TYPES:
        raise LogDamaged(path, line.number, f"unknown record type {kind!r} (this reader is for {versions})")
    version = rec.get("version")
    if not isinstance(version, str):
        raise LogDamaged(path, line.number, f"{kind} record has no version (as {versions} writes it)")
    if not version.startswith(SUPPORTED_VERSIONS):
        raise UnknownVersion(path, line.number, f"record written by Qwen Code {version}; this reader was written for "
                                            f"{versions} and does not know this version's format")
    for key in ("uuid", "sessionId"):
        if not isinstance(rec.get(key), str):
            raise LogDamaged(path, line.number, f"{kind} record lacks {key!r} (as {versions} writes it)")
    if kind in MESSAGE_TYPES and not (isinstance(rec.get("message"), dict)
                                      and isinstance(rec["message"].get("parts"), list)):
        raise LogDamaged(path, line.number, f"{kind} record has no message with parts")


def _header(path: str, lines: list[Line], versions: str) -> SessionHeader:
    if not lines:
        return SessionHeader(session_id=None)
    first = lines[0].record
    model = next((ln.record.get("model") for ln in lines if ln.record["type"] == "assistant"
                  and isinstance(ln.record.get("model"), str)), None)
    parents = [(ln.record["uuid"], ln.record.get("parentUuid"), ln.number) for ln in lines]
    return SessionHeader(session_id=first["sessionId"], created=first.get("timestamp"), cwd=first.get("cwd"),
                         model=model, adapter="chat", raw={"version": first.get("version"), "parents": parents})


def _text(parts: list[Any]) -> str:
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
                   and not p.get("thought"))


def _call(call: dict[str, Any]) -> dict[str, Any]:
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    return {"id": call.get("id"), "name": call.get("name"), "args": args, "arguments": json.dumps(args)}


def _exit_code(output: Any) -> int | None:
    if not isinstance(output, str):
        return None
    for line in output.splitlines():
        if line.startswith("Exit Code: "):
            try:
                return int(line.split(": ", 1)[1])
            except ValueError:
                return None
    return None
