"""Reader for kimi-cli sessions: ``~/.kimi/sessions/<work-dir hash>/<session id>/wire.jsonl``.

Written for the stores of kimi-cli 1.51.x (wire protocol ``1.*``, line 1
``{"type": "metadata", "protocol_version"}``), from recordings of 1.51.0
(``tests/fixtures/agents/kimi-cli-1.51.0``). Every later line is
``{"timestamp": <epoch seconds>, "message": {"type", "payload"}}``, appended as the agent's
events happen. The session id is the name of the file's folder. Beside it, ``context.jsonl``
holds the conversation kimi reloads on resume (messages and checkpoints, no times): the event
log is the one that says what happened when, so it is the one read.

=============================================  =================================================
wire message                                    canonical event
=============================================  =================================================
``TurnBegin`` (``user_input``)                  ``turn_started`` (input: its text)
``ContentPart`` (text) and ``ToolCall`` of a    one ``assistant_message`` per step (its text and
step (after ``StepBegin``)                      calls), at the step's first such line
``ToolCall``                                    ``tool_call`` (the model's request: no separate
                                                start is recorded)
``ToolResult``                                  ``tool_result`` (``is_error`` kept)
``TurnEnd``                                     ``turn_ended`` with no reason: the message has none
``StatusUpdate``, ``StepInterrupted``, …        not mapped (usage, display, hooks, subagents)
=============================================  =================================================

What the store does not record, so never emitted or claimed: why a turn ended (``TurnEnd`` is
the same after a completion, a Stop and a provider error, and is left out after a kill), Stop
requests, model requests, tool starts, aborted tool results (a stopped call gets no result at
all), an ``interrupted`` mark on text cut off mid-stream (the part received is written as it is).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from harness.model import Capability, FormatProblem, SessionHeader, SessionLog, Snapshot
from harness.readers.base import LogDamaged, UnknownVersion
from harness.readers.jsonl import Events, JsonlStore, Line, text_of

SUPPORTED_PROTOCOLS = ("1.",)
STEP_PARTS = frozenset({"ContentPart", "ToolCall"})


class KimiCliReader(JsonlStore):
    name = "kimi-cli"
    capabilities = frozenset({Capability.APPEND_ONLY, Capability.FORMAT_RULES, Capability.MONO_TIMES})
    damage_kinds = frozenset()  # kimi resumes from context.jsonl, not this log: damaging the log tests nothing
    agent_versions = "kimi-cli 1.51.x (wire protocol 1.*)"
    torn_fragment = b'{"timestamp": 1796000000.0, "message": {"type": "ContentPart", "payload": {"type": "te'

    def parse(self, snapshot: Snapshot) -> SessionLog:
        lines, torn, cut = self.lines(snapshot)
        path = snapshot.path
        if not lines:
            raise LogDamaged(path, 1, "empty wire log: no metadata line")
        meta = lines[0].record
        protocol = meta.get("protocol_version")
        if meta.get("type") != "metadata" or not isinstance(protocol, str):
            raise LogDamaged(path, 1, f"line 1 is not the metadata line ({self.agent_versions} writes one first)")
        if not protocol.startswith(SUPPORTED_PROTOCOLS):
            raise UnknownVersion(path, 1, f"wire protocol {protocol}; this reader was written for "
                                          f"{self.agent_versions} and does not know this version's format")
        messages = [(line, *_message(path, line)) for line in lines[1:]]
        first = next((line.record["timestamp"] for line, kind, _ in messages if kind == "TurnBegin"), None)
        header = SessionHeader(session_id=Path(path).parent.name, created=_iso(first), adapter="chat",
                               raw={"protocol_version": protocol})
        return SessionLog(path=path, header=header, events=tuple(_events(messages)), torn_tail=torn, cut_records=cut)

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """kimi's own rules: a turn begins before anything of it (``TurnBegin`` first, ``TurnEnd``
        after all), and each tool result answers a call made earlier."""
        problems = []
        calls: set[str] = set()
        open_turn = False
        for event in log.events:
            if event.type == "turn_started":
                open_turn = True
            elif not open_turn:
                problems.append(FormatProblem(note=f"{event.type} outside a turn (before TurnBegin or after TurnEnd)",
                                              event=event, line=event.line))
            if event.type == "turn_ended":
                open_turn = False
            if event.type == "tool_call":
                calls.add(event.get("call_id"))
            if event.type == "tool_result" and event.get("call_id") not in calls:
                problems.append(FormatProblem(note=f"tool result for {event.get('call_id')} answers no earlier call",
                                              event=event, line=event.line))
        return problems


def _message(path: str, line: Line) -> tuple[str, dict[str, Any]]:
    """The type and payload of one wire line; LogDamaged when it is not shaped like one."""
    message = line.record.get("message")
    if not isinstance(line.record.get("timestamp"), (int, float)) or not isinstance(message, dict):
        raise LogDamaged(path, line.number, "not a wire line ({timestamp, message}) as kimi-cli 1.51.x writes it")
    kind, payload = message.get("type"), message.get("payload")
    if not isinstance(kind, str) or not isinstance(payload, dict):
        raise LogDamaged(path, line.number, "wire message without a type and a payload object")
    return kind, payload


def _events(messages: list[tuple[Line, str, dict[str, Any]]]) -> list[Any]:
    """Canonical events, one assistant message per step placed at the step's first part."""
    events = Events()
    step = 0
    pending: list[tuple[Line, str, dict[str, Any]]] = []  # the current step's parts and results

    def flush() -> None:
        parts = [(line, kind, p) for line, kind, p in pending if kind in STEP_PARTS]
        if parts:
            text = "".join(p.get("text", "") for _, kind, p in parts
                           if kind == "ContentPart" and p.get("type") == "text")
            calls = [_call(p) for _, kind, p in parts if kind == "ToolCall"]
            first = parts[0][0]
            events.add("assistant_message", first.number, step=step, text=text,
                       tool_calls=[{k: c[k] for k in ("id", "name", "arguments")} for c in calls],
                       finish_reason=None, interrupted=False, timestamp=_iso(first.record["timestamp"]))
        for line, kind, payload in pending:
            stamp = _iso(line.record["timestamp"])
            if kind == "ToolCall":
                call = _call(payload)
                events.add("tool_call", line.number, step=step, call_id=call["id"], name=call["name"],
                           arguments=call["args"], timestamp=stamp)
            elif kind == "ToolResult":
                value = _table(payload.get("return_value"))
                output = value.get("output", "")
                events.add("tool_result", line.number, call_id=payload.get("tool_call_id"),
                           output=output if isinstance(output, str) else text_of(output), aborted=False,
                           is_error=bool(value.get("is_error")), message=value.get("message"), timestamp=stamp)
        pending.clear()

    for line, kind, payload in messages:
        stamp = _iso(line.record["timestamp"])
        if kind == "TurnBegin":
            flush()
            step = 0
            user_input = payload.get("user_input")
            events.start_turn(line.number, input=user_input if isinstance(user_input, str) else text_of(user_input),
                              inbox=[], timestamp=stamp)
        elif kind == "StepBegin":
            flush()
            n = payload.get("n")
            step = n if isinstance(n, int) else step + 1
        elif kind in STEP_PARTS or kind == "ToolResult":
            pending.append((line, kind, payload))
        elif kind == "TurnEnd":
            flush()
            events.add("turn_ended", line.number, reason=None, native="TurnEnd", timestamp=stamp)
    flush()
    return events.items


def _call(payload: dict[str, Any]) -> dict[str, Any]:
    function = _table(payload.get("function"))
    raw = function.get("arguments")
    arguments = raw if isinstance(raw, str) else "{}"
    try:
        args = json.loads(arguments)
    except ValueError:
        args = arguments
    return {"id": payload.get("id"), "name": function.get("name"), "arguments": arguments, "args": args}


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _iso(stamp: Any) -> str | None:
    """An epoch-seconds stamp as the ISO text ``Events`` places on the harness's clock."""
    if isinstance(stamp, bool) or not isinstance(stamp, (int, float)):
        return None
    return dt.datetime.fromtimestamp(stamp, dt.UTC).isoformat()
