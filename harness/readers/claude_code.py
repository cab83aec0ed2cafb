"""Reader for Claude Code sessions: ``~/.claude/projects/<cwd with dashes>/<session uuid>.jsonl``.

Written for the stores of Claude Code 2.1.x (the ``version`` field of its records), from
recordings of 2.1.197 and 2.1.332 (``tests/fixtures/agents/claude-code-<version>``). 2.1.332
adds records this reader does not map (``attachment``, ``api-request``, ``api-request-shape``,
``api-request-blob``, ``atis-latch``, ``cost-state``, ``tools-used``), keeps the partial text of a
stream cut by Stop as an assistant record, and on resume answers a call left unanswered with a
``tool_result`` marked ``toolDenialKind: "interrupted"`` instead of parenting past it. There is no header
line: the header is gathered from the first records (``sessionId``, ``cwd``, ``timestamp``,
the first assistant ``model``). Records form a tree through ``uuid`` / ``parentUuid``; the
conversation the agent reloads is the chain from the last record back to the root, so an
event whose record is not on that chain is marked ``off_chain: true`` (that is how a resume
after a kill drops a call: the follow-up is parented on an earlier record). That mark is
derived from the records after it (``SessionEvent.derived``), not written on the record: a
resume adds it to records it never touched.

==============================================  =================================================
record                                           canonical event
==============================================  =================================================
``user``, text content (not ``isMeta``)          ``turn_started`` (input: the text)
``user`` "[Request interrupted by user…]"        ``stop_requested`` (source ``user``)
``assistant`` (one record per content block;     ``assistant_message`` per ``message.id``: text,
grouped by ``message.id``)                       ``tool_use`` blocks as calls, ``stop_reason``;
                                                 ``synthetic: true`` for the agent's own
                                                 ``<synthetic>`` messages (e.g. "No response requested.")
``tool_use`` block                               ``tool_call`` (the model's request: no start is recorded)
``user`` with ``tool_result`` blocks             ``tool_result`` (``aborted`` from
                                                 ``toolUseResult.interrupted``, or 2.1.3xx's
                                                 ``toolDenialKind: "interrupted"``; ``rejected: true``
                                                 when ``toolUseResult`` is "User rejected tool use")
``queue-operation``, ``last-prompt``, ``mode``,  not mapped
``system``, ``summary``, snapshots, and the
records 2.1.332 added
==============================================  =================================================

Not recorded, so never emitted: turn ends (no record says a turn settled, or why), model
requests, tool starts, partial text (a stream cut off leaves nothing), step settlements.
"""

from __future__ import annotations

import json
from typing import Any

from harness.model import (
    Capability,
    FormatProblem,
    SessionEvent,
    SessionHeader,
    SessionLog,
    Snapshot,
)
from harness.model.events import with_data
from harness.readers.base import LogDamaged, UnknownVersion
from harness.readers.jsonl import Events, JsonlStore, Line, text_of

SUPPORTED_VERSIONS = ("2.1.",)
INTERRUPT_MARKERS = ("[Request interrupted by user",)
MESSAGE_TYPES = frozenset({"user", "assistant"})



class ClaudeCodeReader(JsonlStore):
    name = "claude-code"
    capabilities = frozenset({Capability.STOP_REQUESTS, Capability.TOOL_ABORTS, Capability.APPEND_ONLY,
                              Capability.MONO_TIMES,
                              Capability.FORMAT_RULES})
    agent_versions = "Claude Code 2.1.x"
    torn_fragment = b'{"parentUuid":"00000000-0000-4000-8000-000000000000","isSidechain":false,"type":"assis'

    def parse(self, snapshot: Snapshot) -> SessionLog:
        lines, torn, cut = self.lines(snapshot)
        path = snapshot.path
        for line in lines:
            _check(path, line, self.agent_versions)
        header = _header(path, lines, self.agent_versions)
        chain = _active_chain(lines)
        events = Events()
        open_message: tuple[str, SessionEvent] | None = None
        for line in lines:
            rec = line.record
            kind = rec["type"]
            if kind not in MESSAGE_TYPES or rec.get("isSidechain"):
                continue
            message = rec["message"]
            content = message.get("content")
            extra: dict[str, Any] = {"uuid": rec["uuid"], "timestamp": rec.get("timestamp"),
                                     "derived": {} if rec["uuid"] in chain else {"off_chain": True}}
            if kind == "assistant":
                mid = message.get("id") or rec["uuid"]
                if open_message is not None and open_message[0] == mid:
                    open_message = (mid, _extend(open_message[1], message, line, events, extra))
                    continue
                blocks = content if isinstance(content, list) else []
                calls = [_call(b) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
                data: dict[str, Any] = {
                    "step": _step(events), "text": text_of(blocks), "tool_calls": [_canonical(c) for c in calls],
                    "finish_reason": message.get("stop_reason"), "interrupted": False, "message_id": mid,
                    "model": message.get("model"), **extra}
                if message.get("model") == "<synthetic>" or rec.get("isApiErrorMessage"):
                    data["synthetic"] = True
                event = events.add("assistant_message", line.number, **data)
                for call in calls:
                    events.add("tool_call", line.number, step=data["step"], call_id=call["id"], name=call["name"],
                               arguments=call["input"], **extra)
                open_message = (mid, event)
                continue
            open_message = None
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                 for b in content):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        events.add("tool_result", line.number, **_result(block, rec), **extra)
                continue
            text = text_of(content)
            if rec.get("isMeta") or rec.get("isCompactSummary"):
                continue
            if text.startswith(INTERRUPT_MARKERS):
                events.add("stop_requested", line.number, source="user", text=text, **extra)
                continue
            events.start_turn(line.number, input=text, inbox=[], **extra)
        return SessionLog(path=path, header=header, events=tuple(events.items), torn_tail=torn, cut_records=cut)

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """Claude Code's own rules: each record's ``parentUuid`` names an earlier record, and
        each tool result answers a ``tool_use`` made before it."""
        problems = []
        seen: set[str] = set()
        calls: set[str] = set()
        for event in log.events:
            if event.type == "tool_call":
                calls.add(event.get("call_id"))
            if event.type == "tool_result" and event.get("call_id") not in calls:
                problems.append(FormatProblem(note=f"tool_result for {event.get('call_id')} answers no earlier "
                                                   "tool_use", event=event, line=event.line))
        for raw in log.header.raw.get("parents", []):
            uuid, parent, line = raw
            if parent is not None and parent not in seen:
                problems.append(FormatProblem(note=f"record {uuid} names parent {parent}, which no earlier record "
                                                   "has", line=line))
            seen.add(uuid)
        return problems


def _check(path: str, line: Line, versions: str) -> None:
    rec = line.record
    kind = rec.get("type")
    if not isinstance(kind, str):
        raise LogDamaged(path, line.number, f"record has no type (not a {versions} session record)")
    version = rec.get("version")
    if version is not None and not (isinstance(version, str) and version.startswith(SUPPORTED_VERSIONS)):
        raise UnknownVersion(path, line.number, f"record written by Claude Code {version}; this reader was written "
                                            f"for {versions} and does not know this version's format")
    if kind in MESSAGE_TYPES:
        for key in ("uuid", "message", "sessionId"):
            if key not in rec:
                raise LogDamaged(path, line.number, f"{kind} record lacks {key!r} (as {versions} writes it)")
        if not isinstance(rec["message"], dict) or "content" not in rec["message"]:
            raise LogDamaged(path, line.number, f"{kind} record's message has no content")


def _header(path: str, lines: list[Line], versions: str) -> SessionHeader:
    messages = [line.record for line in lines if line.record["type"] in MESSAGE_TYPES]
    first = messages[0] if messages else (lines[0].record if lines else {})
    session_id = first.get("sessionId") or next((ln.record.get("sessionId") for ln in lines
                                                if ln.record.get("sessionId")), None)
    if session_id is None and lines:
        raise LogDamaged(path, 1, f"no record names its sessionId (not a {versions} session)")
    model = next((m["message"].get("model") for m in messages if m["type"] == "assistant"
                  and m["message"].get("model") not in (None, "<synthetic>")), None)
    parents = [(ln.record["uuid"], ln.record.get("parentUuid"), ln.number) for ln in lines
               if isinstance(ln.record.get("uuid"), str)]
    return SessionHeader(session_id=session_id, created=first.get("timestamp"), cwd=first.get("cwd"), model=model,
                         adapter="anthropic", raw={"version": first.get("version"), "parents": parents})


def _active_chain(lines: list[Line]) -> set[str]:
    """uuids on the chain from the last message record back to the root."""
    parent = {ln.record["uuid"]: ln.record.get("parentUuid") for ln in lines if isinstance(ln.record.get("uuid"), str)}
    leaf = next((ln.record["uuid"] for ln in reversed(lines) if ln.record["type"] in MESSAGE_TYPES
                 and not ln.record.get("isSidechain")), None)
    chain: set[str] = set()
    while leaf is not None and leaf not in chain:
        chain.add(leaf)
        leaf = parent.get(leaf)
    return chain


def _step(events: Events) -> int:
    return 1 + sum(1 for e in events.items if e.type == "assistant_message" and e.turn == events.turn)


def _call(block: dict[str, Any]) -> dict[str, Any]:
    raw = block.get("input")
    return {"id": block.get("id"), "name": block.get("name"), "input": raw if isinstance(raw, dict) else {},
            "arguments": json.dumps(raw if raw is not None else {})}


def _canonical(call: dict[str, Any]) -> dict[str, Any]:
    return {"id": call["id"], "name": call["name"], "arguments": call["arguments"]}


def _extend(event: SessionEvent, message: dict, line: Line, events: Events, extra: dict[str, Any]) -> SessionEvent:
    """A further content block of the same assistant message: its text and calls join the
    message's event (replaced in place, same seq), and each call gets its ``tool_call``."""
    content = message.get("content")
    blocks: list[Any] = content if isinstance(content, list) else []
    calls = [_call(b) for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
    data = dict(event.data)
    data["text"] = data["text"] + text_of(blocks)
    data["tool_calls"] = [*data["tool_calls"], *(_canonical(c) for c in calls)]
    data["finish_reason"] = message.get("stop_reason") or data["finish_reason"]
    grown = with_data(event, data)
    events.items[events.items.index(event)] = grown
    for call in calls:
        events.add("tool_call", line.number, step=data["step"], call_id=call["id"], name=call["name"],
                   arguments=call["input"], **extra)
    return grown


def _result(block: dict[str, Any], rec: dict[str, Any]) -> dict[str, Any]:
    native = rec.get("toolUseResult")
    out: dict[str, Any] = {"call_id": block.get("tool_use_id"), "output": text_of(block.get("content")),
                           "is_error": bool(block.get("is_error")), "exit_code": None,
                           "aborted": (isinstance(native, dict) and native.get("interrupted") is True)
                           or rec.get("toolDenialKind") == "interrupted"}
    if isinstance(native, str) and "rejected" in native.lower():
        out["rejected"] = True
    if isinstance(native, (dict, str)):
        out["native_result"] = native if isinstance(native, str) else {k: native[k] for k in native
                                                                        if k in ("interrupted", "stderr")}
    return out
