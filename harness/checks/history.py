"""What the next model request carries after an interruption: a balanced history after a
kill (C4), the partial work that was read (C5), the whole earlier session after a resume
(C7) and, advisory, a note that the session resumed (A1)."""

from __future__ import annotations

from typing import Any, Mapping

from harness.checks.base import check, clip, event_item, log_or_verdict, request_item
from harness.checks.views import (
    balance_problems,
    first_changed_event,
    first_request_after,
    last_request_before,
    messages,
    of_kind,
    response_to,
    same_text,
    starts_with,
    streamed_text,
    tool_answer,
    turn_at,
    window_call,
)
from harness.model import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    AgentKill,
    CheckResult,
    Observation,
    Restart,
    SessionEvent,
    SessionLog,
    StopDelivery,
    Tier,
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
    """The log as the kill left it: its bytes if captured, else the final log's earlier events."""
    if kill.log_bytes is not None:
        try:
            return read_contract_v1(kill.log_bytes)
        except LogDamaged:
            return None
    if obs.log is None:
        return None
    events = tuple(e for e in obs.log.events if e.mono_ns is not None and e.mono_ns < kill.mono_ns)
    return SessionLog(path=obs.log.path, header=obs.log.header, events=events)


@check("C5", "B+L")
def partial_work_is_kept(obs: Observation) -> CheckResult:
    """Text streamed before an interruption is kept: committed with ``interrupted: true``
    (a prefix of what the model sent, holding at least what was seen) and carried as an
    ordinary assistant message in the next request. After a Stop in a tool, the text the
    step streamed before the tool call is kept too."""
    stops = [s for s in obs.stops if s.exercised and s.phase in ("stream", "tool")]
    if not stops:
        return skipped("C5", "no Stop arrived mid-stream or during a tool")
    log = obs.log
    if log is None and obs.log_error:
        verdict = log_or_verdict(obs, "C5")
        if isinstance(verdict, CheckResult):
            return verdict
    problems: list[dict] = []
    evidence: list[dict] = []
    for stop in stops:
        scripted, seen, complete = _expected_text(obs, stop)
        if not seen and not complete:
            continue
        committed = None
        if log is not None:
            committed, found = _committed_text(log, stop, scripted, seen, complete)
            problems.extend(found)
        next_request = first_request_after(obs, stop.mono_ns)
        if next_request is not None:
            problems.extend(_carried_problems(next_request, stop, scripted, seen, committed))
        evidence.append({"stop": stop.how, "phase": stop.phase, "request": stop.request,
                         "seen": clip(seen, 80), "committed": clip(committed, 80) if committed is not None else None,
                         "next_request": next_request.get("request") if next_request else None})
    if not evidence:
        return skipped("C5", "no assistant text had been streamed before any Stop")
    if problems:
        return failed("C5", problems[0]["note"], *problems)
    if log is None:
        return passed("C5", "the next request carried the text seen before each Stop (no log reader: the "
                      "interrupted flag was not read)", *evidence)
    return passed("C5", f"the text seen before {len(evidence)} Stop(s) was kept and sent again", *evidence)


def _expected_text(obs: Observation, stop: StopDelivery) -> tuple[str, str, bool]:
    """(scripted text of the step, text that must be kept at least, whether the step's stream completed)."""
    if stop.phase == "tool":
        number = window_call(obs, stop.window)[0] if stop.window else None
        if number is None:
            previous = last_request_before(obs, stop.mono_ns)
            number = previous["request"] if previous else None
        text = (response_to(obs, number) or {}).get("text") or "" if number else ""
        return text, text, True
    number = stop.request
    if number is None:
        previous = last_request_before(obs, stop.mono_ns)
        number = previous["request"] if previous else None
    scripted = (response_to(obs, number) or {}).get("text") or "" if number else ""
    if stop.text_seen is not None:
        return scripted, stop.text_seen, False
    if stop.chunks_seen is not None and number is not None:
        return scripted, streamed_text(obs, number, stop.chunks_seen), False
    return scripted, "", False


def _committed_text(log: SessionLog, stop: StopDelivery, scripted: str, seen: str,
                    complete: bool) -> tuple[str | None, list[dict]]:
    turn = turn_at(log, stop.mono_ns)
    in_turn = [e for e in log.of_type("assistant_message") if e.turn == turn]
    if complete:  # Stop in a tool: the step's message was written before the tool ran
        message = next((e for e in reversed(in_turn) if (e.mono_ns or 0) < stop.mono_ns), None)
    else:
        message = next((e for e in in_turn if (e.mono_ns or 0) > stop.mono_ns), None)
    if message is None:
        return None, [{"turn": turn, "seen": clip(seen, 80),
                       "note": f"turn {turn} has no assistant message keeping the text streamed before Stop"}]
    text = str(message.get("text") or "")
    if complete:
        if not same_text(text, scripted):
            return text, [event_item(message, note=f"the text streamed before the tool ran was not kept: "
                                     f"expected {clip(scripted, 80)!r}")]
        return text, []
    problems = []
    if message.get("interrupted") is not True:
        problems.append(event_item(message, note="the assistant message cut off by Stop is not marked interrupted: true"))
    if not starts_with(text, seen):
        problems.append(event_item(message, note=f"the committed text lost what was seen before Stop: "
                                   f"{clip(seen, 80)!r}"))
    elif scripted and not starts_with(scripted, text):
        problems.append(event_item(message, note="the committed text is not a prefix of what the model sent"))
    return text, problems


def _carried_problems(request: Mapping[str, Any], stop: StopDelivery, scripted: str, seen: str,
                      committed: str | None) -> list[dict]:
    msgs = messages(request)
    want = committed if committed is not None else seen
    if not want.strip():
        return []
    position = next((i for i, m in enumerate(msgs) if m.get("role") == "assistant" and (
        same_text(str(m.get("text") or ""), want) if committed is not None
        else starts_with(str(m.get("text") or ""), seen) and starts_with(scripted, str(m.get("text") or ""))
    )), None)
    if position is None:
        return [request_item(request, note=f"request {request['request']} after the Stop does not carry the kept "
                             f"text {clip(want, 80)!r} as an assistant message")]
    if position == len(msgs) - 1:
        return [request_item(request, note=f"request {request['request']} ends with the partial assistant text: "
                             "it is sent as a continuation, not as ordinary history")]
    return []


@check("C7", "B+L")
def resume_continues_the_session(obs: Observation) -> CheckResult:
    """A follow-up after a restart is an ordinary turn of the same session, never a fork.

    Black-box: the first request after the restart carries every earlier user input. Log:
    same session id, the earlier events kept as they were, and a new turn appended after them.
    """
    restarts = [r for r in obs.restarts if r.damage != "mid-file"]
    if not restarts:
        return skipped("C7", "the agent was never restarted on a readable session")
    problems: list[dict] = []
    evidence: list[dict] = []
    exercised = 0
    for number, restart in enumerate(restarts, start=1):
        request = first_request_after(obs, restart.mono_ns)
        if request is None:
            continue
        exercised += 1
        user_texts = [str(m.get("text") or "") for m in messages(request) if m.get("role") == "user"]
        for item in obs.inputs:
            if item.mono_ns < restart.mono_ns and not item.queued and not any(item.text in t for t in user_texts):
                problems.append(request_item(request, note=f"request {request['request']} after restart {number} "
                                             f"lacks the earlier user input {clip(item.text, 60)!r}: a blank fork"))
        if obs.log is not None:
            problems.extend(_log_continues(obs.log, restart, number))
        evidence.append(request_item(request, note=f"first request after restart {number}"))
    if not exercised:
        return skipped("C7", "no model request followed a restart")
    if obs.log is None and obs.log_error:
        verdict = log_or_verdict(obs, "C7")
        if isinstance(verdict, CheckResult):
            return verdict
    if problems:
        return failed("C7", problems[0]["note"], *problems)
    return passed("C7", f"{exercised} restart(s) continued the same session with its history", *evidence)


def _log_continues(log: SessionLog, restart: Restart, number: int) -> list[dict]:
    if restart.bytes_before is None:
        return []
    try:
        before = read_contract_v1(restart.bytes_before)
    except LogDamaged:
        return []
    problems = []
    if log.header.session_id != before.header.session_id:
        problems.append({"restart": number, "note": f"after restart {number} the log is session "
                         f"{log.header.session_id!r}, not {before.header.session_id!r}: a fork"})
    changed = first_changed_event(before, log)
    if changed is not None:
        problems.append(event_item(changed, note=f"line {changed.line} was lost or changed across restart {number}"))
    last_turn = max((e.turn for e in before.of_type("turn_started")), default=0)
    new_turns = [e for e in log.of_type("turn_started") if (e.mono_ns or 0) > restart.mono_ns]
    if not new_turns:
        problems.append({"restart": number, "note": f"no turn was appended to the session after restart {number}"})
    elif new_turns[0].turn <= last_turn:
        problems.append(event_item(new_turns[0], note=f"the turn after restart {number} is numbered "
                                   f"{new_turns[0].turn}, not after turn {last_turn}"))
    return problems


@check("A1", "B+L", tier=Tier.ADVISORY)
def resume_note_is_sent(obs: Observation) -> CheckResult:
    """The first request after a resume tells the model the session resumed and files may
    have changed (the log's ``session_resumed`` note when there is one)."""
    restarts = [r for r in obs.restarts if r.damage != "mid-file"]
    problems: list[dict] = []
    evidence: list[dict] = []
    for number, restart in enumerate(restarts, start=1):
        request = first_request_after(obs, restart.mono_ns)
        if request is None:
            continue
        texts = [str(m.get("text") or "") for m in messages(request)]
        note = _resume_note(obs.log, restart.mono_ns)
        if note is not None:
            ok = any(same_text(note, t) or "".join(note.split()) in "".join(t.split()) for t in texts)
            wanted = f"the session_resumed note {clip(note, 60)!r}"
        else:
            previous = last_request_before(obs, restart.mono_ns)
            old = {str(m.get("text") or "") for m in messages(previous)} if previous else set()
            ok = any("resum" in t.lower() and t not in old for t in texts)
            wanted = "a note that the session resumed"
        (evidence if ok else problems).append(request_item(
            request, note=f"request {request['request']} {'carries' if ok else 'lacks'} {wanted}"))
    if not problems and not evidence:
        return skipped("A1", "no model request followed a restart")
    if problems:
        return failed("A1", problems[0]["note"], *problems)
    return passed("A1", "every resumed session told the model it had resumed", *evidence)


def _resume_note(log: SessionLog | None, after_ns: int) -> str | None:
    if log is None:
        return None
    resumed: list[SessionEvent] = [e for e in log.of_type("session_resumed") if (e.mono_ns or 0) > after_ns]
    return str(resumed[0].get("note")) if resumed else None
