"""Reader for Codex CLI rollouts: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``.

Written for the stores of Codex CLI 0.171.x (``session_meta.cli_version``), from recordings of
that version (``tests/fixtures/agents/codex-0.171.0``). Each line is
``{"timestamp", "type", "payload"}``; line 1 is ``session_meta``. What maps to canonical events:

=============================================  =====================================================
rollout line                                    canonical event
=============================================  =====================================================
``event_msg`` ``task_started``                  ``turn_started`` (input: the turn's first user message)
``response_item`` ``message`` (assistant)       ``assistant_message`` (with the response's calls)
``response_item`` ``function_call`` /            ``tool_call`` (the model's request: Codex records no
``custom_tool_call`` / ``local_shell_call``     separate start of the call)
``response_item`` ``function_call_output`` /    ``tool_result``; ``aborted`` when the output is Codex's
``custom_tool_call_output``                     own wording for a stopped call (``aborted``, ``aborted by user``)
``event_msg`` ``item_completed`` of a           ``tool_result`` (its ``aggregated_output``, ``exit_code``),
``CommandExecution``, completed, for a call     when no output line answers the call: a call run
no output line answers                          beside another, finished before a kill that came
                                                before Codex wrote the response's outputs
``event_msg`` ``task_complete``                 ``turn_ended`` ``completed``
``event_msg`` ``turn_aborted``                  ``turn_ended`` ``aborted`` (``interrupted`` → source ``user``,
                                                ``replaced`` → ``disposed``); the native reason is kept
``event_msg`` ``error`` (last of its turn)      ``turn_ended`` ``error``
=============================================  =====================================================

A response's items are written when each item completes, and a ``token_usage_record`` when
the response completes: text cut off mid-stream is never written (no ``interrupted`` text),
the request is never written before the stream (no ``model_request``), a Stop is written only
as its effect (``turn_aborted``, no ``stop_requested``). A turn killed mid-way has no end line:
its turn has no ``turn_ended``, and on resume Codex does not write one afterwards either.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from harness.model import Capability, FormatProblem, SessionHeader, SessionLog, Snapshot
from harness.readers.base import LogDamaged, UnknownVersion
from harness.readers.jsonl import Events, JsonlStore, Line, text_of

SUPPORTED_VERSIONS = ("0.171.",)
KNOWN_LINE_TYPES = frozenset({"session_meta", "event_msg", "response_item", "world_state", "turn_context",
                              "token_usage_record", "compacted"})
CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
ABORTED_OUTPUT = re.compile(r"^(?:Wall time: [^\n]*\n)?aborted(?: by user)?\s*$")
CONTEXT_PREFIXES = ("<environment_context>", "<turn_aborted>", "<user_instructions>", "<skills_instructions>",
                    "# AGENTS.md")
ABORT_SOURCES = {"interrupted": "user", "replaced": "disposed"}


class CodexRolloutReader(JsonlStore):
    name = "codex-rollout"
    capabilities = frozenset({Capability.TURN_ENDS, Capability.TOOL_ABORTS, Capability.APPEND_ONLY,
                              Capability.MONO_TIMES,
                              Capability.FORMAT_RULES})
    agent_versions = "Codex CLI 0.171.x"
    torn_fragment = b'{"timestamp":"2026-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"mess'

    def parse(self, snapshot: Snapshot) -> SessionLog:
        lines, torn, cut = self.lines(snapshot)
        path = snapshot.path
        if not lines:
            raise LogDamaged(path, 1, "empty rollout: no session_meta line")
        header = self._header(path, lines[0])
        for line in lines:
            self._check_line(path, line)
        mapper = _Mapper(path)
        events = mapper.run(lines[1:])
        if header.model is None and mapper.model is not None:
            header = dataclasses.replace(header, model=mapper.model)
        return SessionLog(path=path, header=header, events=tuple(events), torn_tail=torn, cut_records=cut)

    def _header(self, path: str, line: Line) -> SessionHeader:
        rec = line.record
        if rec.get("type") != "session_meta" or not isinstance(rec.get("payload"), dict):
            raise LogDamaged(path, 1, f"not a Codex CLI rollout: line 1 is {rec.get('type')!r}, not session_meta "
                                      f"(this reader is for {self.agent_versions})")
        meta = rec["payload"]
        version = meta.get("cli_version")
        if not isinstance(version, str):
            raise LogDamaged(path, 1, f"session_meta has no cli_version (this reader is for {self.agent_versions})")
        if not version.startswith(SUPPORTED_VERSIONS):
            raise UnknownVersion(path, 1, f"rollout written by Codex CLI {version}; this reader was written for "
                                      f"{self.agent_versions} and does not know this version's format")
        for key in ("id", "timestamp", "cwd"):
            if not isinstance(meta.get(key), str):
                raise LogDamaged(path, 1, f"session_meta lacks {key!r} (as Codex CLI {version} writes it)")
        return SessionHeader(session_id=meta["id"], created=meta["timestamp"], cwd=meta["cwd"],
                             model=_first_model(meta), adapter="responses",
                             raw={k: v for k, v in meta.items() if k != "base_instructions"})

    def _check_line(self, path: str, line: Line) -> None:
        rec = line.record
        kind = rec.get("type")
        if kind not in KNOWN_LINE_TYPES:
            raise LogDamaged(path, line.number, f"unknown rollout line type {kind!r} "
                                                f"(this reader is for {self.agent_versions})")
        if not isinstance(rec.get("payload"), dict):
            raise LogDamaged(path, line.number, f"{kind} line has no payload object")
        payload = rec["payload"]
        if kind in ("event_msg", "response_item") and not isinstance(payload.get("type"), str):
            raise LogDamaged(path, line.number, f"{kind} payload has no type")
        if kind == "response_item" and payload["type"] in CALL_TYPES | OUTPUT_TYPES \
                and not isinstance(payload.get("call_id"), str):
            raise LogDamaged(path, line.number, f"{payload['type']} has no call_id")

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """Codex's own rules as its rollouts show them: every line has a timestamp, and each
        call's output names a call made earlier in the session."""
        problems = []
        calls: set[str] = set()
        for event in log.events:
            if event.type == "tool_call":
                calls.add(event.get("call_id"))
            elif event.type == "tool_result" and event.get("call_id") not in calls:
                problems.append(FormatProblem(note=f"output for call {event.get('call_id')} that no line "
                                                   "before it made", event=event, line=event.line))
            if not event.get("timestamp"):
                problems.append(FormatProblem(note=f"{event.type} line has no timestamp", event=event,
                                              line=event.line))
        return problems


def _first_model(meta: dict[str, Any]) -> str | None:
    model = meta.get("model")
    return model if isinstance(model, str) else None


class _Mapper:
    """Walks the lines after session_meta and emits canonical events."""

    def __init__(self, path: str):
        self.path = path
        self.events = Events()
        self.open_turn: int | None = None
        self.step = 0
        self.pending: list[tuple[Line, dict]] = []  # response items waiting for their response to close
        self.last_error: tuple[Line, str] | None = None
        self.model: str | None = None

    def run(self, lines: list[Line]) -> list:
        answered = {line.record["payload"]["call_id"] for line in lines
                    if line.record["type"] == "response_item" and line.record["payload"].get("type") in OUTPUT_TYPES}
        for index, line in enumerate(lines):
            rec, payload = line.record, line.record["payload"]
            kind, sub = rec["type"], payload.get("type")
            stamp = rec.get("timestamp")
            if kind == "turn_context" and isinstance(payload.get("model"), str):
                self.model = payload["model"]
            if kind == "event_msg" and sub == "task_started":
                self._flush()
                self._close_with_error()
                self.events.start_turn(line.number, input=_turn_input(lines[index + 1:]), inbox=[],
                                       turn_id=payload.get("turn_id"), timestamp=stamp)
                self.open_turn = self.events.turn
                self.step = 0
            elif kind == "response_item" and (sub == "message" and payload.get("role") == "assistant"
                                              or sub in CALL_TYPES):
                self.pending.append((line, payload))
            elif kind == "token_usage_record":
                self._flush()
            elif kind == "response_item" and sub in OUTPUT_TYPES:
                self._flush()
                output = payload.get("output")
                text = output if isinstance(output, str) else json.dumps(output)
                self.events.add("tool_result", line.number, call_id=payload["call_id"], output=text,
                                aborted=bool(ABORTED_OUTPUT.match(text)), exit_code=_exit_code(text),
                                timestamp=stamp)
            elif kind == "event_msg" and sub == "item_completed" and _finished_command(payload, answered):
                self._flush()
                item = payload["item"]
                self.events.add("tool_result", line.number, call_id=item["id"], output=str(item["aggregated_output"]),
                                aborted=False, exit_code=item["exit_code"], timestamp=stamp)
            elif kind == "event_msg" and sub == "task_complete" and self.open_turn is not None:
                self._flush()
                self.events.add("turn_ended", line.number, reason="completed", timestamp=stamp,
                                last_agent_message=payload.get("last_agent_message"))
                self.open_turn, self.last_error = None, None
            elif kind == "event_msg" and sub == "turn_aborted" and self.open_turn is not None:
                self._flush()
                native = payload.get("reason")
                self.events.add("turn_ended", line.number, reason="aborted",
                                source=ABORT_SOURCES.get(native, "user"), native_reason=native, timestamp=stamp)
                self.open_turn, self.last_error = None, None
            elif kind == "event_msg" and sub in ("error", "stream_error") and self.open_turn is not None:
                self.last_error = (line, str(payload.get("message", "")))
        self._flush()
        self._close_with_error()
        return self.events.items

    def _flush(self) -> None:
        """Emit the pending items of one response: its message, then its calls."""
        if not self.pending:
            return
        self.step += 1
        texts = [text_of(p.get("content")) for _, p in self.pending if p.get("type") == "message"]
        calls = [(line, p) for line, p in self.pending if p.get("type") in CALL_TYPES]
        first = self.pending[0][0]
        self.events.add("assistant_message", first.number, step=self.step, text="".join(texts),
                        tool_calls=[{"id": p["call_id"], "name": p.get("name") or p.get("type"),
                                     "arguments": p.get("arguments") or json.dumps(p.get("action") or {})}
                                    for _, p in calls],
                        finish_reason=None, interrupted=False, timestamp=first.record.get("timestamp"))
        for line, p in calls:
            self.events.add("tool_call", line.number, step=self.step, call_id=p["call_id"],
                            name=p.get("name") or p.get("type"), arguments=_arguments(p),
                            timestamp=line.record.get("timestamp"))
        self.pending = []

    def _close_with_error(self) -> None:
        """An error line that nothing settled after it is the turn's end."""
        if self.last_error is not None and self.open_turn is not None:
            line, message = self.last_error
            self.events.add("turn_ended", line.number, reason="error", error=message,
                            timestamp=line.record.get("timestamp"))
            self.open_turn = None
        self.last_error = None


def _finished_command(payload: dict[str, Any], answered: set[str]) -> bool:
    """A shell command Codex recorded as run to its end, whose output line it never wrote: the
    durable record that the call finished. Seen when Codex ran a response's second call beside a
    first still running and was killed: the finished call had this line and no output line."""
    item = payload.get("item")
    return (isinstance(item, dict) and item.get("type") == "CommandExecution" and item.get("status") == "completed"
            and isinstance(item.get("id"), str) and item["id"] not in answered
            and isinstance(item.get("exit_code"), int) and isinstance(item.get("aggregated_output"), str))


def _turn_input(rest: list[Line]) -> str:
    for line in rest:
        rec, payload = line.record, line.record["payload"]
        if rec["type"] == "event_msg" and payload.get("type") == "task_started":
            break
        if rec["type"] == "response_item" and payload.get("type") == "message" and payload.get("role") == "user":
            text = text_of(payload.get("content"))
            if not text.lstrip().startswith(CONTEXT_PREFIXES):
                return text
    return ""


def _arguments(payload: dict[str, Any]) -> dict[str, Any]:
    raw = payload.get("arguments", payload.get("input"))
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"raw": raw}
        return value if isinstance(value, dict) else {"raw": raw}
    action = payload.get("action")
    return action if isinstance(action, dict) else {}


def _exit_code(output: str) -> int | None:
    m = re.search(r"Process exited with code (-?\d+)", output)
    return int(m.group(1)) if m else None
