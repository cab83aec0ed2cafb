"""Reader for gptme conversations: ``~/.local/share/gptme/logs/<name>/conversation.jsonl``.

Written for the logs of gptme 0.35.x (the version its system prompt names: "You are gptme
v0.35.1"), from recordings of 0.35.1 (``tests/fixtures/agents/gptme-0.35.1``). One message
per line, ``role`` ``system`` / ``user`` / ``assistant``, ``content`` text and a wall-clock
``timestamp``; no header line. With ``--tool-format tool`` an assistant's tool calls are
written into its text, one per call: ``@name(call_id): {json arguments}``; a tool's result is
a ``system`` message carrying that ``call_id``.

=============================================  =================================================
message                                         canonical event
=============================================  =================================================
``user`` (not one of gptme's own nudges)        ``turn_started`` (input: the text)
``user`` "<system>No tool call detected…"       not a turn: gptme's own nudge inside the turn
                                                (``nudge`` on the next ``assistant_message``)
``assistant``                                   ``assistant_message`` (text without the call
                                                lines; ``interrupted`` when gptme cut it with
                                                "... ^C Interrupted") and one ``tool_call`` per
                                                ``@name(id): {…}`` (the model's request: no start
                                                is recorded)
``system`` with ``call_id``                     ``tool_result`` (``aborted`` when its text is
                                                gptme's "Interrupted by user")
``system`` result of the ``complete`` tool      also ``turn_ended`` (completed): the only turn
                                                end gptme writes
other ``system`` (prompt, context, notes)       not mapped
=============================================  =================================================

Not recorded, so never emitted: a turn's end other than ``complete`` (a Stop writes "Interrupted
by user" and either asks the model again or ends the run, the same message either way), Stop
requests, model requests, tool starts, step settlements.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from harness.model import Capability, FormatProblem, SessionHeader, SessionLog, Snapshot
from harness.readers.base import LogDamaged, UnknownVersion, unanswered_results
from harness.readers.jsonl import Events, JsonlStore, Line, local_stamp

SUPPORTED_VERSIONS = ("0.35.",)
ROLES = frozenset({"system", "user", "assistant"})
VERSION = re.compile(r"You are gptme v(\d+\.\d+\.\d+)")
WORKDIR = re.compile(r"^\*\*Working Directory:\*\* (.+)$", re.MULTILINE)  # in its "System Information" message
CALL = re.compile(r"^@([^\r\n]+?)\(([\w\-:.]+)\):\s*(?=\{)", re.MULTILINE)
INTERRUPTED = "Interrupted by user"  # gptme's result of a call it stopped (constants.INTERRUPT_CONTENT)
CUT_SUFFIX = "... ^C Interrupted"  # what gptme appends to text it stopped mid-stream
NUDGE = "<system>No tool call detected in last message"
FINISH_TOOL = "complete"


class GptmeReader(JsonlStore):
    name = "gptme"
    capabilities = frozenset({Capability.TOOL_ABORTS, Capability.INTERRUPTED_TEXT, Capability.APPEND_ONLY,
                              Capability.FORMAT_RULES, Capability.MONO_TIMES})
    agent_versions = "gptme 0.35.x"
    torn_fragment = b'{"role": "assistant", "content": "I will run the che'

    def parse(self, snapshot: Snapshot) -> SessionLog:
        lines, torn, cut = self.lines(snapshot)
        path = snapshot.path
        for line in lines:
            _check(path, line)
        header = _header(path, lines, self.agent_versions)
        events = Events()
        calls: dict[str, str] = {}  # call id → tool name
        nudged = False
        for line in lines:
            rec = line.record
            role, content = rec["role"], rec["content"]
            extra = {"timestamp": local_stamp(rec.get("timestamp"))}
            if role == "user":
                if content.startswith(NUDGE):
                    nudged = True
                    continue
                events.start_turn(line.number, input=content, inbox=[], **extra)
                continue
            if role == "assistant":
                step = 1 + sum(1 for e in events.items if e.type == "assistant_message" and e.turn == events.turn)
                text, found = split_calls(content)
                interrupted = text.endswith(CUT_SUFFIX)
                if interrupted:
                    text = text[: -len(CUT_SUFFIX)]
                events.add("assistant_message", line.number, step=step, text=text.rstrip("\n"),
                           tool_calls=[{k: c[k] for k in ("id", "name", "arguments")} for c in found],
                           finish_reason=None, interrupted=interrupted, nudge=nudged,
                           model=(rec.get("metadata") or {}).get("model"), **extra)
                nudged = False
                for call in found:
                    calls[call["id"]] = call["name"]
                    events.add("tool_call", line.number, step=step, call_id=call["id"], name=call["name"],
                               arguments=call["args"], **extra)
                continue
            call_id = rec.get("call_id")
            if not isinstance(call_id, str):
                continue
            name = calls.get(call_id) or (rec.get("metadata") or {}).get("tool")
            events.add("tool_result", line.number, call_id=call_id, name=name, output=content,
                       aborted=content == INTERRUPTED, exit_code=_exit_code(content), **extra)
            if name == FINISH_TOOL:
                events.add("turn_ended", line.number, reason="completed", source=None, error=None, **extra)
        return SessionLog(path=path, header=header, events=tuple(events.items), torn_tail=torn, cut_records=cut)

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """gptme's own rule: a result names the call it answers, and that call came before it."""
        return unanswered_results(log, "tool result")


def split_calls(content: str) -> tuple[str, list[dict[str, Any]]]:
    """The text before the first ``@name(id): {…}`` line, and every such call with its arguments.
    Arguments that are not a whole JSON object (a call cut off while streaming) end the calls."""
    found: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    first = None
    position = 0
    while match := CALL.search(content, position):
        try:
            args, end = decoder.raw_decode(content, match.end())
        except ValueError:
            break
        if not isinstance(args, dict):
            break
        first = match.start() if first is None else first
        found.append({"id": match.group(2), "name": match.group(1), "args": args, "arguments": json.dumps(args)})
        position = end
    return (content if first is None else content[:first]), found


def _check(path: str, line: Line) -> None:
    rec = line.record
    role = rec.get("role")
    if role not in ROLES:
        raise LogDamaged(path, line.number, f"message with role {role!r} (gptme writes system, user, assistant)")
    if not isinstance(rec.get("content"), str):
        raise LogDamaged(path, line.number, f"{role} message has no text content")


def _header(path: str, lines: list[Line], versions: str) -> SessionHeader:
    if not lines:
        return SessionHeader(session_id=None)
    first = lines[0].record
    found = VERSION.search(first["content"]) if first["role"] == "system" else None
    version = found.group(1) if found else None
    if version is not None and not version.startswith(SUPPORTED_VERSIONS):
        raise UnknownVersion(path, 1, f"conversation written by gptme {version}; this reader was written for "
                                  f"{versions} and does not know this version's format")
    model = next(((ln.record.get("metadata") or {}).get("model") for ln in lines if ln.record["role"] == "assistant"
                  and isinstance((ln.record.get("metadata") or {}).get("model"), str)), None)
    cwd = next((m.group(1).strip() for ln in lines if ln.record["role"] == "system"
                and (m := WORKDIR.search(ln.record["content"]))), None)
    return SessionHeader(session_id=Path(path).parent.name, created=first.get("timestamp"), cwd=cwd, model=model,
                         adapter="chat", raw={"version": version})


def _exit_code(output: str) -> int | None:
    found = re.search(r"^Return code: (-?\d+)$", output, re.MULTILINE)
    return int(found.group(1)) if found else None
