"""After a kill, the next model request is balanced and keeps every earlier tool call (C4)."""

from __future__ import annotations

from typing import Any, Mapping

from harness.checks.base import check, clip, request_item
from harness.checks.views import (
    balance_problems,
    first_request_after,
    messages,
    of_kind,
    response_to,
    tool_answer,
    window_call,
)
from harness.contract import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN
from harness.model import (
    AgentKill,
    CheckResult,
    Observation,
    SessionLog,
    failed,
    passed,
    skipped,
)
from harness.readers.contract_v1 import LogDamaged, read_contract_v1

# What the first request after a kill must say for a call: a repair marker, the real result, or anything.
UNKNOWN, NOT_STARTED, REAL_RESULT, ANY = "outcome-unknown", "not-started", "real-result", "any"
MARKERS = {UNKNOWN: TOOL_OUTCOME_UNKNOWN, NOT_STARTED: TOOL_NOT_STARTED}


@check("C4", "B+L")
def next_request_is_balanced(obs: Observation) -> CheckResult:
    """After a kill, the next model request is balanced and drops no earlier tool call.

    Every call the agent demonstrably knew before the kill (carried in a later request, or
    whose bash window opened, or recorded in its log) is in the first request after the
    restart with a tool result: ``TOOL_OUTCOME_UNKNOWN…`` when its start was recorded (a
    window opened ⇒ started), ``TOOL_NOT_STARTED…`` when it was requested but never started.
    The log, when there is one, decides which.
    """
    if not obs.kills:
        return skipped("C4", "the agent was never killed")
    problems: list[dict] = []
    evidence: list[dict] = []
    for kill in obs.kills:
        request = first_request_after(obs, kill.mono_ns)
        if request is None:
            continue
        msgs = messages(request)
        found = [{**request_item(request), "note": f"request {request['request']}: {p}"}
                 for p in balance_problems(msgs)]
        if request.get("error"):
            found.append(request_item(request, note=f"the server refused request {request['request']}"))
        known = _calls_known_at(obs, kill)
        for call_id, expect in known.items():
            note = _answer_problem(msgs, call_id, expect)
            if note:
                found.append({**request_item(request), "call_id": call_id, "note": f"request {request['request']}: {note}"})
        problems.extend(found)
        if not found:
            evidence.append({**request_item(request, note=f"first request after the kill of pid {kill.pid} at "
                                            f"{kill.at}"), "calls": known})
    if not problems and not evidence:
        return skipped("C4", "no model request followed any kill")
    if problems:
        return failed("C4", problems[0]["note"], *problems)
    return passed("C4", f"the first request after each of {len(evidence)} kill(s) was balanced and kept every "
                  "earlier tool call with the right repair", *evidence)


def _answer_problem(msgs: list[Mapping[str, Any]], call_id: str, expect: str) -> str | None:
    made, answer = tool_answer(msgs, call_id)
    if made is None:
        return f"tool call {call_id}, issued before the kill, is missing from the history (dropped)"
    if answer is None:
        return f"tool call {call_id} has no tool result"
    text = str(answer.get("text") or "")
    if expect in MARKERS and not text.startswith(MARKERS[expect]):
        return f"tool call {call_id} should be answered {MARKERS[expect]}…, got {clip(text, 80)!r}"
    if expect == REAL_RESULT and text.startswith(tuple(MARKERS.values())):
        return f"tool call {call_id} finished before the kill, but is answered with a repair marker {clip(text, 80)!r}"
    return None


def _calls_known_at(obs: Observation, kill: AgentKill) -> dict[str, str]:
    """Each tool call the agent demonstrably knew at the kill, with what its answer must be."""
    known: dict[str, str] = {}
    for request in of_kind(obs, "request"):  # carried in a request before the kill: already history
        if request["mono_ns"] < kill.mono_ns:
            for m in messages(request):
                for c in m.get("tool_calls") or []:
                    known.setdefault(c.get("id"), ANY)
    finished = {r["window"] for r in of_kind(obs, "window_done") if r["mono_ns"] < kill.mono_ns and r.get("finished")}
    for window in of_kind(obs, "window"):
        if window["mono_ns"] >= kill.mono_ns:
            continue
        number, call_id = window_call(obs, window["window"])
        response = response_to(obs, number) if number else None
        for c in (response or {}).get("tool_calls") or []:
            known.setdefault(c.get("id"), ANY)
        if call_id and window["window"] not in finished:
            known[call_id] = UNKNOWN
    log = _log_at(obs, kill)
    if log is not None:
        results = {e.get("call_id") for e in log.of_type("tool_result")}
        started = {e.get("call_id") for e in log.of_type("tool_call")}
        for message in log.of_type("assistant_message"):
            for c in message.get("tool_calls") or []:
                cid = c.get("id")
                if cid in results:
                    known[cid] = REAL_RESULT
                elif cid in started or known.get(cid) == UNKNOWN:  # a window that opened ran it, logged or not
                    known[cid] = UNKNOWN
                else:
                    known[cid] = NOT_STARTED
    return known


def _log_at(obs: Observation, kill: AgentKill) -> SessionLog | None:
    """The log as the kill left it: its bytes if captured, else the final log's earlier events.
    None for an agent without a log reader (its bytes are not in a format we can read)."""
    if obs.log is None and obs.log_error is None:
        return None
    if kill.log_bytes is not None:
        try:
            return read_contract_v1(kill.log_bytes)
        except LogDamaged:
            return None
    if obs.log is None:
        return None
    events = tuple(e for e in obs.log.events if e.mono_ns is not None and e.mono_ns < kill.mono_ns)
    return SessionLog(path=obs.log.path, header=obs.log.header, events=events)
