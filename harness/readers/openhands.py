"""Reader for OpenHands conversations: ``~/.openhands/conversations/<hex id>/``.

Written for the stores of OpenHands CLI 1.16.x (OpenHands SDK 1.21.x), from recordings of
1.16.0 (``tests/fixtures/agents/openhands-1.16.0``). A conversation is a folder: its state,
``base_state.json`` (rewritten as the run goes: ``execution_status``, statistics), and
``events/event-NNNNN-<event id>.json``, one JSON object per file, numbered from 0 without
gaps, written once each and never rewritten (written in place, so a crash can leave the last
one cut off). The store names no version of its own, so the reader refuses event kinds it
does not know rather than guess at them.

=============================================  =================================================
event (``kind``)                                canonical event
=============================================  =================================================
``MessageEvent`` from the user                  ``turn_started`` (input: the text)
``MessageEvent`` from the agent                 ``assistant_message`` (text only) and
                                                ``turn_ended`` (completed): an answer without a
                                                call ends the run (state ``finished``)
``ActionEvent`` (one per tool call; the calls   one ``assistant_message`` per model response
of one response share ``llm_response_id``)      (the ``thought`` text, every call) and one
                                                ``tool_call`` per action (the model's request:
                                                no start is recorded)
``ObservationEvent``                            ``tool_result`` (exit code from the observation)
``AgentErrorEvent``                             ``tool_result`` with ``is_error`` (a call refused
                                                before it ran, e.g. a missing argument)
``UserRejectObservation``                       ``tool_result`` with ``rejected``
``ObservationEvent`` of ``finish``              also ``turn_ended`` (completed)
``ConversationErrorEvent``                      ``turn_ended`` (error: its code and detail)
``PauseEvent``                                  ``stop_requested`` (source user)
``SystemPromptEvent``, state updates, hooks,    not mapped
condensations, token and log events
=============================================  =================================================

Not recorded, so never emitted: an aborted tool result (a stopped call gets no observation,
or the next run's), a turn's end by Stop, model requests, tool starts, partial text (requests
are not streamed), step settlements.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from harness.model import (
    Capability,
    Change,
    FormatProblem,
    LogCapture,
    SessionHeader,
    SessionLog,
    Snapshot,
)
from harness.readers.base import CannotDamage, Damage, LogDamaged, unanswered_results
from harness.readers.jsonl import Events, local_stamp, text_of

STATE = "base_state.json"
EVENT_FILE = re.compile(r"^event-(?P<idx>\d{5})-(?P<id>[0-9a-fA-F-]{8,})\.json$")
MAPPED = frozenset({"MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent", "UserRejectObservation",
                    "ConversationErrorEvent", "PauseEvent"})
UNMAPPED = frozenset({"SystemPromptEvent", "ConversationStateUpdateEvent", "HookExecutionEvent", "Condensation",
                      "CondensationRequest", "CondensationSummaryEvent", "TokenEvent", "LLMCompletionLogEvent",
                      "StreamingDeltaEvent", "ACPToolCallEvent"})
FINISH_TOOL = "finish"
TORN_FRAGMENT = b'{"id":"00000000-0000-4000-8000-000000000000","timestamp":"2026-01-01T00:00:00","source":"ag'


class OpenHandsReader:
    name = "openhands"
    capabilities = frozenset({Capability.APPEND_ONLY, Capability.FORMAT_RULES, Capability.MONO_TIMES})
    damage_kinds = frozenset({"torn-tail", "mid-file"})
    agent_versions = "OpenHands CLI 1.16.x (SDK 1.21.x)"
    torn_fragment = TORN_FRAGMENT

    # --- the store as bytes -----------------------------------------------------------
    def snapshot(self, path: str) -> Snapshot | None:
        """The state file and every event file, by number, as one document of their texts."""
        folder = Path(path)
        if not folder.is_dir():
            return None
        state = folder / STATE
        events = []
        for entry in sorted((folder / "events").glob("event-*.json")):
            try:
                events.append([entry.name, entry.read_bytes().decode("utf-8", "surrogateescape")])
            except FileNotFoundError:
                continue
        doc = {"state": state.read_text(encoding="utf-8", errors="surrogateescape") if state.is_file() else None,
               "events": events}
        return Snapshot(reader=self.name, path=os.fspath(path), data=json.dumps(doc).encode(),
                        mono_ns=time.monotonic_ns())

    def damage(self, path: str, kind: str) -> Damage:
        files = sorted(Path(path, "events").glob("event-*.json"))
        if kind == "torn-tail":
            if files and not _is_object(files[-1].read_bytes()):
                raise CannotDamage(f"{files[-1]} is already cut off")
            index = int(EVENT_FILE.match(files[-1].name)["idx"]) + 1 if files else 0  # type: ignore[index]
            target = Path(path, "events", f"event-{index:05d}-00000000-0000-4000-8000-000000000000.json")
            target.write_bytes(self.torn_fragment)
            return Damage(kind, index, f"event {index} ({target.name})")
        if kind != "mid-file":
            raise CannotDamage(f"{self.name} has no damage {kind!r} (known: {', '.join(sorted(self.damage_kinds))})")
        if len(files) < 3:
            raise CannotDamage(f"mid-file damage needs at least three events in the store, it has {len(files)}")
        target = files[len(files) // 2]
        index = int(EVENT_FILE.match(target.name)["idx"])  # type: ignore[index]
        target.write_bytes(b'{"kind": \x00 not json' + b"#" * 40)
        return Damage(kind, index, f"event {index} ({target.name})")

    def changed(self, before: Snapshot, after: Snapshot) -> Change | None:
        if before.data == after.data:
            return None
        old, new = _doc(before), _doc(after)
        for (name, text), later in zip(old["events"], new["events"], strict=False):
            if [name, text] != later:
                return Change(where=f"event file {name}", detail=f"became {later[0]}: {later[1][:80]!r}")
        if len(old["events"]) != len(new["events"]):
            return Change(where="events", detail=f"{len(old['events'])} event files became {len(new['events'])}")
        return Change(where=STATE, detail="the conversation's state was rewritten")

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None:
        """Events are written once: every complete event file of ``before`` is still there,
        byte for byte (the state file is rewritten by design and is not compared)."""
        kept = {name: text for name, text in _doc(after)["events"]}
        for name, text in _doc(before)["events"]:
            if not _is_object(text.encode("utf-8", "surrogateescape")):
                continue  # a cut-off last event may be replaced
            if name not in kept:
                return Change(where=f"event file {name}", detail="is gone")
            if kept[name] != text:
                return Change(where=f"event file {name}", detail=f"was rewritten: {kept[name][:80]!r}")
        return None

    # --- events ---------------------------------------------------------------------------
    def parse(self, snapshot: Snapshot) -> SessionLog:
        doc = _doc(snapshot)
        path = snapshot.path
        records, torn = _records(path, doc["events"], self.agent_versions)
        header = _header(path, doc["state"], records)
        events = Events()
        calls: dict[str, str] = {}
        step = 0
        for number, (idx, name, rec) in enumerate(records):
            kind = rec["kind"]
            extra = {"event_id": rec.get("id"), "timestamp": local_stamp(rec.get("timestamp"))}
            where = f"event {idx} ({name})"
            if kind == "MessageEvent":
                message = rec.get("llm_message") or {}
                text = text_of(message.get("content"))
                if rec.get("source") == "user":
                    events.start_turn(idx, where=where, input=text, inbox=[], **extra)
                    step = 0
                else:
                    step += 1
                    events.add("assistant_message", idx, where=where, step=step, text=text, tool_calls=[],
                               finish_reason=None, interrupted=False, **extra)
                    # an answer without a tool call ends OpenHands' run (its state turns "finished")
                    events.add("turn_ended", idx, where=where, reason="completed", source=None, error=None, **extra)
            elif kind == "ActionEvent":
                response = rec.get("llm_response_id")
                earlier = records[number - 1][2] if number else {}
                same = earlier.get("kind") == "ActionEvent" and earlier.get("llm_response_id") == response
                if not (response and same):
                    step += 1
                    group = [r for _, _, r in records[number:]
                             if r.get("kind") == "ActionEvent" and response and r.get("llm_response_id") == response] \
                        or [rec]
                    events.add("assistant_message", idx, where=where, step=step, text=text_of(rec.get("thought")),
                               tool_calls=[_call(r) for r in group], finish_reason=None, interrupted=False,
                               response_id=response, **extra)
                call = _call(rec)
                calls[call["id"]] = call["name"]
                events.add("tool_call", idx, where=where, step=step, call_id=call["id"], name=call["name"],
                           arguments=_arguments(call["arguments"]), security_risk=rec.get("security_risk"), **extra)
            elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
                observation = rec.get("observation") or {}
                output = {"AgentErrorEvent": rec.get("error"), "UserRejectObservation": rec.get("rejection_reason")
                          }.get(kind, text_of(observation.get("content")))
                code = observation.get("exit_code")
                tool = rec.get("tool_name") or calls.get(rec.get("tool_call_id", ""))
                events.add("tool_result", idx, where=where, call_id=rec.get("tool_call_id"), name=tool,
                           output=output if isinstance(output, str) else json.dumps(output), aborted=False,
                           exit_code=code if isinstance(code, int) and code >= 0 else None,
                           is_error=kind == "AgentErrorEvent" or bool(observation.get("is_error")),
                           rejected=kind == "UserRejectObservation", native_kind=observation.get("kind") or kind,
                           **extra)
                if kind == "ObservationEvent" and tool == FINISH_TOOL:
                    events.add("turn_ended", idx, where=where, reason="completed", source=None, error=None, **extra)
            elif kind == "ConversationErrorEvent":
                events.add("turn_ended", idx, where=where, reason="error", source=None,
                           error=f"{rec.get('code')}: {rec.get('detail')}", **extra)
            elif kind == "PauseEvent":
                events.add("stop_requested", idx, where=where, source="user", **extra)
        return SessionLog(path=path, header=header, events=tuple(events.items), torn_tail=torn)

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """OpenHands' own rules: every observation answers an earlier action, and no action is
        answered twice."""
        problems = unanswered_results(log, "observation", earlier="earlier action")
        answered: set[str] = set()
        for event in log.of_type("tool_result"):
            call_id = event.get("call_id")
            if call_id in answered:
                problems.append(FormatProblem(note=f"action {call_id} is answered twice", event=event,
                                              line=event.line))
            answered.add(call_id)
        return problems

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]:
        """No rule beyond parsing: a restart that kept a cut-off event and numbered on after
        it leaves an unreadable event before the last, which ``parse`` refuses, naming it."""
        return []


def _doc(snapshot: Snapshot) -> dict[str, Any]:
    return json.loads(snapshot.data)


def _is_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


def _records(path: str, files: list[list[str]], versions: str) -> tuple[list[tuple[int, str, dict]], bytes | None]:
    """(number, file name, event) in order; the cut-off last file as the torn tail."""
    out: list[tuple[int, str, dict]] = []
    torn = None
    for position, (name, text) in enumerate(files):
        match = EVENT_FILE.match(name)
        if not match:
            raise LogDamaged(os.path.join(path, "events", name), None, "not an event file name (event-NNNNN-<id>.json)")
        idx = int(match["idx"])
        if idx != position:
            raise LogDamaged(path, None, f"event {position} is missing (the next file is {name})",
                             where=f"event {position}")
        raw = text.encode("utf-8", "surrogateescape")
        file = os.path.join(path, "events", name)
        try:
            rec = json.loads(raw)
        except ValueError as err:
            if position == len(files) - 1:
                torn = raw
                break
            raise LogDamaged(file, idx, f"unreadable event (not JSON: {err}); only the last may be cut off",
                             where=f"event {idx}") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("kind"), str):
            raise LogDamaged(file, idx, "event without a kind", where=f"event {idx}")
        if rec["kind"] not in MAPPED | UNMAPPED:
            raise LogDamaged(file, idx, f"unknown event kind {rec['kind']!r} (this reader is for {versions})",
                             where=f"event {idx}")
        if rec.get("id") != match["id"]:
            raise LogDamaged(file, idx, f"event id {rec.get('id')!r} is not the one its file name gives",
                             where=f"event {idx}")
        out.append((idx, name, rec))
    return out, torn


def _header(path: str, state_text: str | None, records: list[tuple[int, str, dict]]) -> SessionHeader:
    state: dict[str, Any] = {}
    if state_text is not None:
        try:
            loaded = json.loads(state_text)
        except ValueError:
            loaded = None  # rewritten in place: a snapshot may catch it half written; the events decide
        state = loaded if isinstance(loaded, dict) else {}
    agent, workspace = _table(state, "agent"), _table(state, "workspace")
    llm = _table(agent, "llm")
    sid = state.get("id")
    created = records[0][2].get("timestamp") if records else None
    return SessionHeader(session_id=sid.replace("-", "") if isinstance(sid, str) else Path(path).name,
                         created=created, cwd=workspace.get("working_dir"), model=llm.get("model"), adapter="chat",
                         raw={"execution_status": state.get("execution_status"),
                              "tool_concurrency_limit": agent.get("tool_concurrency_limit"),
                              "files": [name for _, name, _ in records]})


def _call(rec: dict[str, Any]) -> dict[str, Any]:
    call = _table(rec, "tool_call")
    arguments = call.get("arguments")
    return {"id": call.get("id") or rec.get("tool_call_id"), "name": call.get("name") or rec.get("tool_name"),
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {})}


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
