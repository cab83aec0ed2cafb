"""What is on disk: the log format and its torn-tail and damage rules (C10), and the
semantic checkpoints that a SIGKILL must not lose (C11)."""

from __future__ import annotations

import base64
import os
from typing import Any, Callable, Mapping

from harness.checks.base import check, clip, event_item, request_item
from harness.checks.views import (
    chat_message_text,
    first_changed_event,
    last_request_before,
    messages,
    of_kind,
    request_record,
    response_to,
    window_call,
)
from harness.model import AgentKill, CheckResult, Observation, Restart, SessionLog, failed, passed, skipped, unknown
from harness.readers.contract_v1 import LogDamaged, complete_prefix, event_field_problems, read_contract_v1

MAX_FIELD_PROBLEMS = 10


@check("C10", "L")
def log_format_holds(obs: Observation) -> CheckResult:
    """Header on line 1, one event per line with contiguous ``seq``; a torn last line is
    tolerated and never appended onto; damage before the last line is refused (exit 2,
    naming file and line) and the file left untouched. Loading never rewrites earlier lines."""
    problems: list[dict] = []
    evidence: list[dict] = []
    mid_file = [r for r in obs.restarts if r.damage == "mid-file"]
    for restart in mid_file:
        problems.extend(_refusal_problems(obs, restart, evidence))
    log = obs.log
    if log is None:
        if obs.log_error and not mid_file:
            problems.append({"reader": obs.log_error, "note": f"the session log breaks the format: {obs.log_error}"})
        elif not obs.log_error and not mid_file:
            return unknown("C10", "no log reader for this agent, so the log format cannot be checked")
    else:
        field_problems = [event_item(e, note=p) for e in log.events for p in event_field_problems(e)]
        problems.extend(field_problems[:MAX_FIELD_PROBLEMS])
        for number, restart in enumerate(obs.restarts, start=1):
            if restart.damage != "mid-file":
                problems.extend(_continuation_problems(log, restart, number, evidence))
        problems.extend(_rewritten_bytes(obs))
        evidence.insert(0, {"log": log.path, "events": len(log.events), "session_id": log.header.session_id})
    if problems:
        return failed("C10", problems[0]["note"], *problems)
    return passed("C10", "the log keeps the v1 format, its torn-tail and its damage rules", *evidence)


def _refusal_problems(obs: Observation, restart: Restart, evidence: list[dict]) -> list[dict]:
    """A restart on a log damaged mid-file must exit 2 naming file and line, writing nothing."""
    where = f"line {restart.damage_line}" if restart.damage_line else "the middle"
    exit_ = next((e for e in obs.exits if e.started_ns >= restart.mono_ns), None)
    if exit_ is None:
        return [{"damage_line": restart.damage_line,
                 "note": f"the agent restarted on a log damaged at {where} and did not exit (it should refuse, exit 2)"}]
    item = {"pid": exit_.pid, "returncode": exit_.returncode, "stderr_tail": clip(exit_.stderr_tail[-300:], 300)}
    problems = []
    if exit_.returncode != 2:
        problems.append({**item, "note": f"the agent restarted on a log damaged at {where} exited "
                         f"{exit_.returncode}, not 2"})
    named = [str(restart.damage_line)] if restart.damage_line else []
    if obs.log_path:
        named.append(os.path.basename(obs.log_path))
    missing = [n for n in named if n not in exit_.stderr_tail]
    if missing:
        problems.append({**item, "note": f"the refusal does not name {' and '.join(missing)} (the damaged file and line)"})
    if restart.bytes_before is not None and restart.bytes_after_load is not None \
            and restart.bytes_before != restart.bytes_after_load:
        problems.append({"bytes_before": len(restart.bytes_before), "bytes_after": len(restart.bytes_after_load),
                         "note": "refusing the damaged log changed the file"})
    if not problems:
        evidence.append({**item, "note": f"refused the log damaged at {where}, file untouched"})
    return problems


def _rewritten_bytes(obs: Observation) -> list[dict]:
    """Byte for byte: every later capture of the file starts with each earlier restart's
    complete lines. Captures from the first mid-file damage on are left out (the task
    itself rewrote a line there)."""
    damaged_ns = min((r.mono_ns for r in obs.restarts if r.damage == "mid-file"), default=None)
    captures = [(k.mono_ns, f"the log after kill {n}", k.log_bytes) for n, k in enumerate(obs.kills, start=1)]
    captures += [(r.mono_ns, f"the log before restart {n}", r.bytes_before) for n, r in enumerate(obs.restarts, start=1)]
    captures = [c for c in captures if c[2] is not None and (damaged_ns is None or c[0] < damaged_ns)]
    problems = []
    for number, restart in enumerate(obs.restarts, start=1):
        if restart.bytes_before is None or restart.damage == "mid-file":
            continue
        kept = complete_prefix(restart.bytes_before)
        for ns, label, data in captures:
            if ns > restart.mono_ns and not data.startswith(kept):
                offset = next((i for i, (a, b) in enumerate(zip(kept, data)) if a != b), min(len(kept), len(data)))
                line = kept.count(b"\n", 0, offset) + 1
                problems.append({"restart": number, "capture": label, "offset": offset, "line": line,
                                 "note": f"{label} no longer starts with the lines written before restart {number}: "
                                         f"line {line} differs at byte {offset}"})
                break
    return problems


def _continuation_problems(log: SessionLog, restart: Restart, number: int, evidence: list[dict]) -> list[dict]:
    """The final log keeps every complete pre-restart line and records a dropped torn tail."""
    if restart.bytes_before is None:
        return []
    try:
        before = read_contract_v1(restart.bytes_before, path=f"log before restart {number}")
    except LogDamaged as err:
        return [{"restart": number, "note": f"the log was already damaged before restart {number}: {err}"}]
    changed = first_changed_event(before, log)
    if changed is not None:
        return [event_item(changed, note=f"line {changed.line} was lost or rewritten across restart {number}")]
    if before.torn_tail is not None and log.torn_tail is not None and log.torn_tail != before.torn_tail \
            and log.torn_tail.startswith(before.torn_tail.rstrip(b"\n")):
        return [{"restart": number, "torn_tail": clip(log.torn_tail.decode("utf-8", "replace")),
                 "note": f"restart {number} appended onto the torn last line instead of cutting it"}]
    if before.torn_tail is None or len(log.events) == len(before.events):
        return []
    follower = log.events[len(before.events)]
    offset = len(complete_prefix(restart.bytes_before))
    if follower.type != "torn_tail_dropped":
        return [event_item(follower, note=f"restart {number} appended after a torn last line without a "
                           "torn_tail_dropped event first")]
    try:
        dropped = base64.b64decode(str(follower.get("dropped")), validate=True)
    except ValueError:
        dropped = None
    if dropped != before.torn_tail or follower.get("offset") != offset:
        return [event_item(follower, note=f"torn_tail_dropped should hold the {len(before.torn_tail)} torn bytes "
                           f"cut at offset {offset}")]
    evidence.append(event_item(follower, note=f"restart {number} cut the torn tail and recorded it"))
    return []


@check("C11", "B+L")
def checkpoints_are_durable(obs: Observation) -> CheckResult:
    """A SIGKILL at a checkpoint loses nothing the checkpoint covers: the model request is
    on disk once the server receives it, the tool call once its window opens, and the
    previous step (assistant message, tool results, ``step_settled``) once the next request
    arrives. Judged on the log bytes captured right after each kill."""
    if not obs.kills:
        return skipped("C11", "the agent was never killed")
    if obs.log is None and not obs.log_error:
        return unknown("C11", "no log reader for this agent, so the log left by a kill cannot be read")
    problems: list[dict] = []
    evidence: list[dict] = []
    undecided: list[dict] = []
    for kill in obs.kills:
        judge = CHECKPOINTS.get(kill.at)
        if judge is None or kill.log_bytes is None:
            undecided.append({"pid": kill.pid, "at": kill.at,
                              "note": "no checkpoint is defined at this moment" if judge is None
                              else "the log bytes after the kill were not captured"})
            continue
        try:
            log = read_contract_v1(kill.log_bytes, path=f"log after the kill at {kill.at}")
        except LogDamaged as err:
            problems.append({"pid": kill.pid, "at": kill.at, "note": f"the log left by the kill is damaged: {err}"})
            continue
        found = judge(obs, kill, log)
        problems.extend(found)
        if not found:
            evidence.append({"pid": kill.pid, "at": kill.at, "events_on_disk": len(log.events),
                             "last_event": event_item(log.events[-1]) if log.events else None})
    if problems:
        return failed("C11", problems[0]["note"], *problems)
    if not evidence:
        return skipped("C11", "no kill happened at a checkpoint with its log captured", *undecided)
    return passed("C11", f"{len(evidence)} kill(s) at checkpoints lost nothing", *evidence, *undecided)


def _killed_request(obs: Observation, kill: AgentKill) -> Mapping[str, Any] | None:
    if kill.request is not None:
        return request_record(obs, kill.request)
    return last_request_before(obs, kill.mono_ns)


def _request_durable(obs: Observation, kill: AgentKill, log: SessionLog) -> list[dict]:
    request = _killed_request(obs, kill)
    if request is None:
        return [{"at": kill.at, "note": f"killed at {kill.at}, but the server recorded no request before the kill"}]
    wanted = _signature(messages(request), canonical=True)
    logged = log.of_type("model_request")
    if any(_signature((e.get("request") or {}).get("messages") or [], canonical=False) == wanted for e in logged):
        return []
    last = [event_item(logged[-1], note="the last model_request on disk")] if logged else []
    return [request_item(request, note=f"the server received request {request['request']} but the log left by the "
                         "kill holds no model_request for it (not durable before the stream opened)"), *last]


def _tool_call_durable(obs: Observation, kill: AgentKill, log: SessionLog) -> list[dict]:
    window = kill.window
    if window is None:
        opened = [r for r in of_kind(obs, "window") if r["mono_ns"] < kill.mono_ns]
        window = opened[-1]["window"] if opened else None
    call_id = window_call(obs, window)[1] if window else None
    calls = log.of_type("tool_call")
    if call_id is not None and any(e.get("call_id") == call_id for e in calls):
        return []
    if call_id is None:
        answered = {e.get("call_id") for e in log.of_type("tool_result")}
        if any(e.get("call_id") not in answered for e in calls):
            return []
    return [{"window": window, "call_id": call_id,
             "note": f"window {window} was running (call {call_id}) but the log left by the kill holds no "
                     "tool_call for it (not durable before the tool body ran)"}]


def _step_durable(obs: Observation, kill: AgentKill, log: SessionLog) -> list[dict]:
    request = _killed_request(obs, kill)
    number = request["request"] if request else None
    previous = response_to(obs, number - 1) if number and number > 1 else None
    if previous is None:
        return [{"at": kill.at, "note": f"killed at {kill.at}, but there is no previous step to check"}]
    call_ids = [c.get("id") for c in previous.get("tool_calls") or []]
    message = next((e for e in log.of_type("assistant_message")
                    if [c.get("id") for c in e.get("tool_calls") or []] == call_ids), None) if call_ids \
        else (log.of_type("assistant_message") or [None])[-1]
    if message is None:
        return [{"request": number - 1, "calls": call_ids, "note": f"the assistant message of request {number - 1} "
                 f"is not on disk when request {number} arrived"}]
    problems = []
    results = {e.get("call_id") for e in log.of_type("tool_result")}
    for call_id in call_ids:
        if call_id not in results:
            problems.append(event_item(message, note=f"the result of tool call {call_id} is not on disk when "
                                       f"request {number} arrived"))
    if not any(e.turn == message.turn and e.get("step") == message.get("step") for e in log.of_type("step_settled")):
        problems.append(event_item(message, note=f"step {message.get('step')} of turn {message.turn} has no "
                                   f"step_settled on disk when request {number} arrived"))
    return problems + _request_durable(obs, kill, log)


CHECKPOINTS: dict[str, Callable[[Observation, AgentKill, SessionLog], list[dict]]] = {
    "request-received": _request_durable,
    "chunk-flushed": _request_durable,
    "window-opened": _tool_call_durable,
    "next-request": _step_durable,
}


def _signature(msgs: list[Mapping[str, Any]], canonical: bool) -> list[tuple]:
    """What identifies a request's history across the log's Chat shape and the canonical one."""
    out = []
    for m in msgs:
        if canonical:
            text = str(m.get("text") or "")
            ids = tuple(c.get("id") for c in m.get("tool_calls") or [])
        else:
            text = chat_message_text(m)
            ids = tuple(c.get("id") for c in m.get("tool_calls") or [])
        out.append((m.get("role"), "".join(text.split()), ids, m.get("tool_call_id") or None))
    return out
