"""Reader for the ACP replay: a session's durable history as ``session/load`` replays it to
any ACP client, whatever the agent keeps on disk.

The ACP driver writes each load's replay to a file: a header line of its own (``acp_replay``,
the ``sessionId``, the method, the ``prompts`` it had sent, the tool calls it saw finish
live), then every ``update`` of the ``session/update`` notifications the agent sent before
answering the load, in order. That works for every agent that advertises ``loadSession``, so
this reader judges what an agent kept through the protocol, not through its own format.

==========================================  ===================================================
replayed update                              canonical event
==========================================  ===================================================
``user_message_chunk`` (a run of them)       ``turn_started`` (input: their text; a run is cut
                                             where its text so far ends with a prompt the
                                             client sent: a turn killed before any answer)
``agent_message_chunk`` (a run of them)      ``assistant_message`` (text, tool_calls)
``tool_call``                                a call on the assistant message before it (one
                                             with no text if none), and ``tool_call``
                                             (call_id, name: its title, arguments: its
                                             ``rawInput``, status)
``tool_call_update`` completed / failed      ``tool_result`` (output: its text content, status,
                                             ``is_error`` when failed), for a call the client
                                             saw finish while the agent ran (the header's
                                             ``finished_live``); any other is the repair a
                                             load made in memory of a call a kill cut short
anything else (thoughts, plans, modes)       not mapped
==========================================  ===================================================

A replay carries no times, no turn ends, no Stop requests and no interrupted flags: checks
that need those answer ``unknown`` naming them, and judge the rest (what was kept, in which
order, under which session). Its format rules are the protocol's: a tool call is announced
once, and a status update names a call announced before it (C10).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from harness.model import Capability, Change, FormatProblem, LogCapture, SessionHeader, SessionLog, Snapshot
from harness.model.events import with_data
from harness.readers.base import (
    CannotDamage,
    Damage,
    LogDamaged,
    file_snapshot,
    first_byte_difference,
)
from harness.readers.jsonl import Events, Line, load_lines

NAME = "acp-replay"
FINISHED = ("completed", "failed")


class AcpReplayReader:
    """A replay file is written whole by the client, once the load has been answered: it is
    never torn, never continued, and has no damage of its own."""

    name = NAME
    capabilities: frozenset[Capability] = frozenset({Capability.FORMAT_RULES})
    damage_kinds: frozenset[str] = frozenset()
    agent_versions = "any ACP agent that advertises loadSession (protocol version 1)"

    def snapshot(self, path: str) -> Snapshot | None:
        return file_snapshot(self.name, path)

    def damage(self, path: str, kind: str) -> Damage:
        raise CannotDamage("a replay is what the agent sends on session/load, not a store the harness can damage")

    def changed(self, before: Snapshot, after: Snapshot) -> Change | None:
        return first_byte_difference(before.data, _under_header_of(before, after).data)

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None:
        """The first update ``before`` replayed that ``after`` no longer replays, in the same
        order (the header is the client's own, and grows with the prompts sent). Not a byte
        prefix: an agent that repairs a killed call on load replays the repair after the
        whole history, so a later load, with more history, has it further on."""
        later = after.data.split(b"\n")[1:]
        at = 0
        for number, line in enumerate(before.data.split(b"\n")[1:], start=2):
            if not line:
                continue
            try:
                at = later.index(line, at) + 1
            except ValueError:
                return Change(where=f"line {number}", line=number,
                              detail=f"the later replay no longer holds, in order, {line[:120]!r}")
        return None

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """The rules of a replay as the protocol states them: a tool call is announced once,
        and every update of a call's status names a call the replay announced before it."""
        problems, announced = [], set()
        for event in log.events:
            call_id = event.get("call_id")
            if event.type == "tool_call":
                if call_id in announced:
                    problems.append(FormatProblem(f"line {event.line}: tool call {call_id!r} is announced twice",
                                                  line=event.line, event=event))
                announced.add(call_id)
            elif event.type == "tool_result" and call_id not in announced:
                problems.append(FormatProblem(f"line {event.line}: an update of tool call {call_id!r}, which the "
                                              "replay never announced", line=event.line, event=event))
        return problems

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]:
        return []

    def parse(self, snapshot: Snapshot) -> SessionLog:
        lines, torn, cut = load_lines(snapshot.path, snapshot.data)
        path = snapshot.path
        if not lines or lines[0].record.get("acp_replay") != 1:
            raise LogDamaged(path, 1, "the first line is not an ACP replay header")
        header = lines[0].record
        prompts = [p for p in header.get("prompts", []) if isinstance(p, str) and p]
        live = header.get("finished_live")
        finished = set(live) if isinstance(live, list) else None
        events = Events()
        previous: str | None = None
        for line in lines[1:]:
            kind = line.record.get("sessionUpdate")
            text = _text(line.record.get("content"))
            if kind == "user_message_chunk":
                said = str(events.items[-1].data.get("input", "")) if previous == kind else ""
                if previous == kind and not any(said.rstrip().endswith(p.strip()) for p in prompts):
                    _extend(events, "input", text)
                else:
                    events.start_turn(line.number, input=text, inbox=[])
            elif kind == "agent_message_chunk":
                if previous == kind:
                    _extend(events, "text", text)
                else:
                    events.add("assistant_message", line.number, text=text, tool_calls=[])
            elif kind == "tool_call":
                _call(events, line, finished)
            elif kind == "tool_call_update" and line.record.get("status") in FINISHED:
                _result(events, line, finished)
            previous = kind if isinstance(kind, str) else None
        return SessionLog(path=path, header=SessionHeader(session_id=header.get("sessionId"), raw=header),
                          events=tuple(events.items), torn_tail=torn, cut_records=cut)


def _under_header_of(before: Snapshot, after: Snapshot) -> Snapshot:
    """``after`` with ``before``'s header line in place of its own."""
    head = before.data.split(b"\n", 1)[0]
    rest = after.data.split(b"\n", 1)[1] if b"\n" in after.data else b""
    return dataclasses.replace(after, data=head + b"\n" + rest)


def _call(events: Events, line: Line, finished: set[str] | None) -> None:
    """A tool call: on the assistant message it follows in the same turn (one with no text
    when the agent said nothing before it), then as a ``tool_call`` of its own."""
    raw = line.record.get("rawInput")
    call = {"id": line.record.get("toolCallId"), "name": line.record.get("title"),
            "arguments": json.dumps(raw) if raw is not None else None}
    message = next((e for e in reversed(events.items) if e.type in ("assistant_message", "tool_call")), None)
    if message is None or message.turn != events.turn or events.items[-1].type not in ("assistant_message",
                                                                                       "tool_call"):
        events.add("assistant_message", line.number, text="", tool_calls=[call])
    else:
        owner = next(i for i in range(len(events.items) - 1, -1, -1) if events.items[i].type == "assistant_message")
        last = events.items[owner]
        events.items[owner] = with_data(last, {**last.data, "tool_calls": [*last.data["tool_calls"], call]})
    events.add("tool_call", line.number, call_id=call["id"], name=call["name"], arguments=call["arguments"],
               status=line.record.get("status"))
    if line.record.get("status") in FINISHED:  # a call replayed whole, as one update
        _result(events, line, finished)


def _result(events: Events, line: Line, finished: set[str] | None) -> None:
    """A finished call's result — unless the client never saw the call finish while the agent
    ran (``finished_live``): then the agent was killed while it ran, and the result is the
    repair the load made in memory, not a result the agent kept."""
    if finished is not None and line.record.get("toolCallId") not in finished:
        return
    status = line.record["status"]
    events.add("tool_result", line.number, call_id=line.record.get("toolCallId"),
               output=_text(line.record.get("content")), status=status, is_error=status == "failed")


def _extend(events: Events, key: str, text: str) -> None:
    """Add a chunk's text to the event the run of chunks began (replaced: events are frozen)."""
    last = events.items[-1]
    events.items[-1] = with_data(last, {**last.data, key: str(last.data.get(key, "")) + text})


def _text(content: Any) -> str:
    """A content block's text (``{type: text, text}``), or a tool call's content list's."""
    if isinstance(content, dict):
        inner = content.get("content") if content.get("type") == "content" else content
        return str(inner.get("text", "")) if isinstance(inner, dict) else ""
    if isinstance(content, list):
        return "".join(_text(c) for c in content)
    return ""
