"""Reader for GitHub Copilot CLI sessions: ``~/.copilot/session-state/<session uuid>/events.jsonl``.

Written for the stores of Copilot CLI 1.0.x (``session.start``'s ``copilotVersion``, event
format ``version`` 1), from recordings of 1.0.102 (``tests/fixtures/agents/copilot-1.0.102``).
One event per line, ``{type, data, id, timestamp, parentId}``, each parented on the event
before it; the streamed deltas the ``--output-format json`` stream shows are ``ephemeral`` and
never reach the file. Copilot's ``assistant.turn_start`` / ``turn_end`` bracket one model
round trip and its tools, not the user's turn.

=============================================  =================================================
event                                           canonical event
=============================================  =================================================
``session.start``                               the header (``sessionId``, ``startTime``,
                                                ``context.cwd``, ``selectedModel``)
``user.message``                                ``turn_started`` (input: ``transformedContent``,
                                                what the model is sent; typed: ``content``)
``assistant.message``                           ``assistant_message`` (``content``;
                                                ``toolRequests`` as calls) and one ``tool_call``
                                                per request (the model's request)
``tool.execution_start``                        ``tool_started`` (no pid is recorded)
``tool.execution_complete``                     ``tool_result`` (``result.content`` or the error's
                                                message; ``shellExecution.exitCode``; ``aborted``
                                                when its error code is ``interrupted``)
``abort``                                       ``stop_requested`` (``user_initiated`` and
                                                ``user_abort`` → source user)
``session.resume``, ``session.shutdown``,       not mapped (process bookkeeping, usage, the
``session.usage_record``, ``system.message``,   system prompt)
``assistant.turn_start`` / ``turn_end``, …
=============================================  =================================================

A Stop (SIGINT) of a running tool leaves the call with no completion; a resume after a kill
writes one for the cut-off call, error code ``interrupted`` and a message saying its effects
are unknown (its repair). A Stop's own tool result was never seen, so the reader does not
claim to record tool aborts. Not recorded, so never emitted: turn ends (``session.shutdown``
ends a process, whatever became of its turn), model requests, partial text (a stream cut off
leaves nothing), step settlements.
"""

from __future__ import annotations

from typing import Any

from harness.model import Capability, FormatProblem, SessionHeader, SessionLog, Snapshot
from harness.readers.base import LogDamaged, UnknownVersion, chain_problems, unanswered_results
from harness.readers.jsonl import Events, JsonlStore, Line

SUPPORTED_VERSIONS = ("1.0.",)
FORMAT_VERSION = 1
INTERRUPTED = "interrupted"  # the error code of the completion a resume writes for a call cut off by a kill
# Copilot's abort reasons as the contract's Stop sources (others are kept as they are).
STOP_SOURCES = {"user_initiated": "user", "user_abort": "user", "remote_command": "parent"}


class CopilotReader(JsonlStore):
    name = "copilot"
    capabilities = frozenset({Capability.TOOL_STARTS, Capability.STOP_REQUESTS, Capability.APPEND_ONLY,
                              Capability.FORMAT_RULES, Capability.MONO_TIMES})
    agent_versions = "Copilot CLI 1.0.x (event format 1)"
    torn_fragment = b'{"type":"assistant.message","data":{"messageId":"00000000-0000-4000-8000-000000000000","con'

    def parse(self, snapshot: Snapshot) -> SessionLog:
        lines, torn, cut = self.lines(snapshot)
        path = snapshot.path
        if not lines:
            return SessionLog(path=path, header=SessionHeader(session_id=None), events=(), torn_tail=torn,
                              cut_records=cut)
        for line in lines:
            _check(path, line, self.agent_versions)
        header = _header(path, lines, self.agent_versions)
        events = Events()
        for line in lines:
            rec = line.record
            kind, data = rec["type"], rec["data"]
            extra = {"event_id": rec["id"], "timestamp": rec.get("timestamp")}
            if kind == "user.message":
                # What the model is sent, and so what is durable, is the transformed content
                # (the typed text behind a <current_datetime> preamble); the typed text is kept too.
                events.start_turn(line.number, input=data.get("transformedContent") or data.get("content", ""),
                                  typed=data.get("content", ""), inbox=[], **extra)
            elif kind == "assistant.message":
                calls = [r for r in data.get("toolRequests") or [] if isinstance(r, dict)]
                step = 1 + sum(1 for e in events.items if e.type == "assistant_message" and e.turn == events.turn)
                events.add("assistant_message", line.number, step=step, text=data.get("content") or "",
                           tool_calls=[{"id": c.get("toolCallId"), "name": c.get("name"),
                                        "arguments": c.get("arguments")} for c in calls],
                           finish_reason=None, interrupted=False, model=data.get("model"), **extra)
                for call in calls:
                    events.add("tool_call", line.number, step=step, call_id=call.get("toolCallId"),
                               name=call.get("name"), arguments=call.get("arguments"), **extra)
            elif kind == "tool.execution_start":
                events.add("tool_started", line.number, call_id=data.get("toolCallId"), pid=None, pgid=None,
                           name=data.get("toolName"), **extra)
            elif kind == "tool.execution_complete":
                events.add("tool_result", line.number, **_result(data), **extra)
            elif kind == "abort":
                reason = data.get("reason")
                events.add("stop_requested", line.number, source=STOP_SOURCES.get(reason, reason),
                           native_reason=reason, **extra)
        return SessionLog(path=path, header=header, events=tuple(events.items), torn_tail=torn, cut_records=cut)

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """Copilot's own rules: each event's ``parentId`` names the event before it (the file
        is one chain), and each tool completion answers a call that was started."""
        return (unanswered_results(log, "tool completion", answers="tool_started", earlier="started call")
                + chain_problems(log.header.raw.get("parents", []), "event", linear=True))


def _check(path: str, line: Line, versions: str) -> None:
    rec = line.record
    for key, kind in (("type", str), ("id", str), ("data", dict)):
        if not isinstance(rec.get(key), kind):
            raise LogDamaged(path, line.number, f"event lacks {key!r} (as {versions} writes it)")


def _header(path: str, lines: list[Line], versions: str) -> SessionHeader:
    first = lines[0].record
    if first["type"] != "session.start":
        raise LogDamaged(path, 1, f"the first event is {first['type']!r}, not session.start (as {versions} writes it)")
    data = first["data"]
    version = data.get("copilotVersion")
    known = isinstance(version, str) and version.startswith(SUPPORTED_VERSIONS)
    if data.get("version") != FORMAT_VERSION or not known:
        raise UnknownVersion(path, 1, f"written by Copilot CLI {version} (event format {data.get('version')}); "
                                      f"this reader was written for {versions} and does not know this version's format")
    context = data.get("context") if isinstance(data.get("context"), dict) else {}
    parents = [(ln.record["id"], ln.record.get("parentId"), ln.number) for ln in lines]
    return SessionHeader(session_id=data.get("sessionId"), created=data.get("startTime"), cwd=context.get("cwd"),
                         model=data.get("selectedModel"), raw={"version": version, "parents": parents})


def _result(data: dict[str, Any]) -> dict[str, Any]:
    result, error, shell = (_table(data, key) for key in ("result", "error", "shellExecution"))
    output = result.get("content") if isinstance(result.get("content"), str) else error.get("message") or ""
    return {"call_id": data.get("toolCallId"), "output": output, "is_error": data.get("success") is False,
            "exit_code": shell.get("exitCode"), "aborted": error.get("code") == INTERRUPTED,
            "error_code": error.get("code")}


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}
