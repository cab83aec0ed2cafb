"""What the store keeps: its format, continuation and damage rules (C10), and the semantic
checkpoints a SIGKILL must not lose (C11)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence

from fake_server.records import Request
from harness.checks.base import Findings, Item, captures, check, event_item, result
from harness.checks.facts import dropped_call_fact, left_nothing, no_store_fact, refusal_fact, undurable_call_fact
from harness.checks.process import convention_problem
from harness.checks.views import (
    Message,
    calls,
    clip,
    event_calls,
    event_messages,
    first_request_after,
    last_request_before,
    parsed,
    request,
    request_item,
    request_number,
    response_to,
    same_text,
    sent_messages,
    squeeze,
    tool_answer,
    window_call,
    windows_opened,
)
from harness.contract import expected_exit_code
from harness.model import (
    AgentKill,
    Capability,
    CheckResult,
    DecidedBy,
    LogCapture,
    Observation,
    Outcome,
    Restart,
    SessionLog,
)

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG
MAX_FORMAT_PROBLEMS = 10
AT_THE_END = "at the end"  # the moment of the final store, among the captures


@check("C10")
def log_format_holds(obs: Observation) -> CheckResult:
    """The store keeps its own format: the reader's format rules hold in the final store, and
    its continuation rules across each restart (contract-v1: a torn last line is cut and
    recorded, never appended onto). Every later capture, and the final store, keeps every
    durable record of each earlier one (the reader's ``lost`` on the snapshots: what the store
    holds as written, never a comparison of events a reader derives from the records around
    them). A store damaged mid-file on purpose is refused: the restart exits 2 naming the file
    and the place, and the store is left untouched (the reader's ``changed``). Non-strict: the
    agent's declared error code instead of 2, under a convention that tells the outcomes apart
    (as C8 takes it)."""
    verdict = _log_format(obs)
    own_code = any(i.get("non_strict") for i in verdict.evidence.items)
    return dataclasses.replace(verdict, non_strict=True) if own_code and verdict.outcome is Outcome.PASS else verdict


def _log_format(obs: Observation) -> CheckResult:
    if obs.log_format is None:
        return result("C10", Outcome.UNKNOWN, "no log reader for this agent, so the log format cannot be checked",
                      needs_reader=True)
    fmt = obs.log_format
    found = Findings("C10")
    damaged = [(n, r) for n, r in enumerate(obs.restarts, start=1) if r.damage == "mid-file"]
    for number, restart in damaged:
        _refusal(obs, number, restart, found)
    # From the first mid-file damage on, the store is damaged by the task itself: the capture
    # the damaged restart began with, and every later one, are not the agent's doing.
    first = damaged[0][1] if damaged else None
    damaged_ns = first.before.snapshot.mono_ns if first and first.before and first.before.snapshot else (
        first.mono_ns if first else None)
    kept = [c for c in captures(obs) if damaged_ns is None or (c.snapshot and c.snapshot.mono_ns < damaged_ns)]
    for capture in kept:
        if capture.version_unknown:
            found.cannot(f"the store {capture.moment} is of a version its reader does not know: {capture.error}",
                         moment=capture.moment)
        elif capture.error is not None:
            found.fail(LOG, f"the store {capture.moment} could not be read: {capture.error}", moment=capture.moment)
    final = [LogCapture(moment=AT_THE_END, snapshot=obs.log_snapshot)] if obs.log_snapshot and not damaged else []
    _nothing_lost(obs, [*kept, *final], found)
    log = obs.log
    if log is None:
        if obs.log_version_unknown:
            found.cannot(f"the final store is of a version its reader does not know: {obs.log_error}",
                         reader=obs.log_error)
        elif obs.log_error and not damaged:
            found.fail(LOG, f"the session log breaks the format: {obs.log_error}", reader=obs.log_error,
                       fact=refusal_fact(obs.log_error))
        elif not obs.log_error and not damaged:
            found.cannot(f"the agent left no session store{' at ' + obs.log_path if obs.log_path else ''}")
        return found.result(f"the {fmt.name} store keeps its format and its damage rules")
    if obs.has(Capability.FORMAT_RULES):
        problems = fmt.format_problems(log)
        for problem in problems[:MAX_FORMAT_PROBLEMS]:
            found.fail(LOG, problem.note, event_item(problem.event) if problem.event else {"line": problem.line})
        if not problems:
            found.ok(LOG, log=log.path, events=len(log.events), session_id=log.header.session_id,
                     note=f"the {fmt.name} format rules hold")
    else:
        found.cannot(f"the {fmt.name} store has no format rules its reader can check "
                     f"({Capability.FORMAT_RULES.value})", needs_reader=True)
    for number, restart in enumerate(obs.restarts, start=1):
        if restart.damage == "mid-file" or restart.before is None or restart.before.log is None:
            continue
        problems = fmt.continuation_problems(restart.before, log)
        for problem in problems:
            found.fail(LOG, problem.note, event_item(problem.event) if problem.event else {"restart": number})
        if not problems and restart.before.log.torn_tail is not None:
            found.ok(LOG, restart=number, note=f"restart {number} continued the store by its rules after a torn tail")
    return found.result(f"the {fmt.name} store keeps its format, its continuation and its damage rules")


def _nothing_lost(obs: Observation, kept: Sequence[LogCapture], found: Findings) -> None:
    """Every later capture keeps every durable record of each earlier one (the reader's ``lost``)."""
    assert obs.log_format is not None
    compared = 0
    for i, earlier in enumerate(kept):
        for later in kept[i + 1:]:
            if earlier.snapshot is None or later.snapshot is None:
                continue
            compared += 1
            change = obs.log_format.lost(earlier.snapshot, later.snapshot)
            if change is not None:
                found.fail(LOG, f"the store {later.moment} lost what it held {earlier.moment}: {change.where}: "
                           f"{change.detail}", where=change.where, line=change.line, earlier=earlier.moment,
                           later=later.moment)
                break
    if compared:
        found.ok(LOG, captures=[c.moment for c in kept], note="every later capture kept what earlier ones held")


def _refusal(obs: Observation, number: int, restart: Restart, found: Findings) -> None:
    """A restart on a store damaged mid-file must exit 2 naming file and place, writing nothing."""
    where = restart.damage_where or (f"line {restart.damage_line}" if restart.damage_line else "the middle")
    exit_ = next((e for e in obs.exits if e.started_ns >= restart.mono_ns), None)
    if exit_ is None:
        found.fail(BOX, f"the agent restarted on a log damaged at {where} and did not exit (it should refuse, exit "
                   f"{expected_exit_code('refused')})", restart=number, damage=where)
        return
    item: Item = {"pid": exit_.pid, "returncode": exit_.returncode, "stderr_tail": clip(exit_.stderr_tail[-300:], 300)}
    refused = True
    declared = obs.conventions.exit_codes
    if exit_.returncode == expected_exit_code("refused"):
        pass  # the contract's own code: a strict pass, whatever the agent also declares
    elif exit_.returncode is not None and exit_.returncode == declared.get("error") \
            and convention_problem(declared) is None:
        item["non_strict"] = f"exit {exit_.returncode}, the agent's declared code for error"
    else:
        how = (f"exited {exit_.returncode}" if exit_.returncode is not None
               else f"never exited on its own (it ran on until ended by signal {exit_.signal})")
        found.fail(BOX, f"the agent restarted on a log damaged at {where} {how}, not "
                   f"{expected_exit_code('refused')}", item)
        refused = False
    named = [str(restart.damage_line)] if restart.damage_line else [restart.damage_where] if restart.damage_where \
        else []
    if obs.log_path:
        named.append(os.path.basename(obs.log_path))
    missing = [n for n in named if n not in exit_.stderr_tail]
    if missing:
        found.fail(BOX, f"the refusal does not name {' and '.join(missing)} (the damaged file and place)", item)
        refused = False
    if refused:
        found.ok(BOX, item, note=f"refused the store damaged at {where}, naming it")
    before, after = restart.before, restart.after_load
    if before is None or before.snapshot is None or after is None or after.snapshot is None:
        found.cannot(f"restart {number}: the store after the refusal was not captured, so whether it was left "
                     "untouched is not known", restart=number)
        return
    assert obs.log_format is not None
    change = obs.log_format.changed(before.snapshot, after.snapshot)
    if change is not None:
        found.fail(LOG, f"refusing the damaged log changed the store: {change.where}: {change.detail}",
                   restart=number, where=change.where, line=change.line)
    else:
        found.ok(LOG, restart=number, note="the damaged store was left untouched")


# --- C11 --------------------------------------------------------------------------------


@check("C11")
def checkpoints_are_durable(obs: Observation) -> CheckResult:
    """A SIGKILL at a checkpoint loses nothing the checkpoint covers: the model request once
    the server receives it (or streams it), the tool call once its window opens, the settled
    step once the next request arrives.

    Black-box: after the restart, the resumed request carries what was durable — the user's
    message of a request killed as it arrived, the call whose window was running, the step
    (calls and their real results) before the request killed as it arrived. Log: the store
    captured right after the kill holds it — a ``model_request`` with the request's messages
    (or, for a store that does not record requests, the user's message), the call's
    ``tool_call`` (or, without recorded starts, the call in its assistant message), the step's
    message, results and ``step_settled`` where the store records them.
    """
    if not obs.kills:
        return result("C11", Outcome.SKIPPED, "the agent was never killed")
    found = Findings("C11")
    at_checkpoints = 0
    for number, kill in enumerate(obs.kills, start=1):
        judge = CHECKPOINTS.get(kill.at)
        if judge is None:
            found.note(kill=number, at=kill.at, note="no checkpoint is defined at this moment")
            continue
        at_checkpoints += 1
        said_before = len(found.problems) + len(found.undecided)
        boxed = _resumed_carries(obs, number, kill, found)
        logged = _kill_log(obs, number, kill, judge, found)
        if boxed is None and logged is None and len(found.problems) + len(found.undecided) == said_before:
            found.cannot(f"kill {number} at {kill.at}: no restart followed by a request shows what was durable, and "
                         + ("there is no log reader" if obs.log_format is None
                            else "the store after the kill was not captured"),
                         needs_reader=obs.log_format is None, kill=number, at=kill.at)
    if not at_checkpoints:
        return result("C11", Outcome.SKIPPED, "no kill happened at a checkpoint", found.evidence)
    return found.result(f"{at_checkpoints} kill(s) at checkpoints lost nothing")


def _kill_log(obs: Observation, number: int, kill: AgentKill,
              judge: Callable[[Observation, AgentKill, SessionLog], list[Item]], found: Findings) -> bool | None:
    """The log half: what the store held right after the kill. None when it cannot be read. A
    store looked for where the profile keeps it and not there holds nothing: a failure."""
    capture = kill.log
    if obs.log_format is None or capture is None:
        return None
    if capture.snapshot is None:
        if capture.absent_from is None:
            return None
        found.fail(LOG, f"killed at {kill.at} (kill {number}), the agent had no session store at "
                   f"{capture.absent_from}: nothing the checkpoint covers was durable", kill=number, at=kill.at,
                   looked_in=capture.absent_from, fact=no_store_fact(number))
        return False
    if capture.version_unknown:
        found.cannot(f"the log left by kill {number} is of a version its reader does not know: {capture.error}",
                     kill=number, at=kill.at)
        return None
    if capture.log is None:
        found.fail(LOG, f"the log left by kill {number} is damaged: {capture.error}", kill=number, at=kill.at)
        return False
    problems = judge(obs, kill, capture.log)
    for problem in problems:
        empty = {} if capture.log.events else {"fact": no_store_fact(number)}  # a store with no record in it
        found.fail(LOG, problem.pop("note"), problem | empty)
    if not problems:
        last = capture.log.events[-1] if capture.log.events else None
        found.ok(LOG, kill=number, at=kill.at, events_in_store=len(capture.log.events),
                 last_event=event_item(last) if last else None)
    return not problems


def _resumed_carries(obs: Observation, number: int, kill: AgentKill, found: Findings) -> bool | None:
    """The black-box half: after the restart, the resumed request carries the checkpoint's
    content. None when no restart and request followed the kill."""
    restart = next((r for r in obs.restarts if r.mono_ns > kill.mono_ns and r.damage != "mid-file"), None)
    req = first_request_after(obs, restart.mono_ns) if restart else None
    if req is None or not parsed(req):
        return None
    problems = checkpoint_carried(obs, kill, req)
    # A kill that left nothing of the session on disk is what a resume that lacks it rests on.
    nothing = {"fact": no_store_fact(number)} if left_nothing(kill.log) else {}
    for problem in problems:
        found.fail(BOX, problem.pop("note"), problem | nothing)
    if not problems:
        found.ok(BOX, request_item(req, note=f"the resumed request carries what was durable at kill {number} "
                                             f"({kill.at})"))
    return not problems


def killed_request(obs: Observation, kill: AgentKill) -> Request | None:
    if kill.request is not None:
        return request(obs, kill.request)
    return last_request_before(obs, kill.mono_ns)


def killed_window(obs: Observation, kill: AgentKill) -> tuple[str | None, str | None]:
    """The window running at the kill, and its call."""
    window = kill.window
    if window is None:
        opened = windows_opened(obs, kill.mono_ns)
        window = opened[-1].window if opened else None
    return window, window_call(obs, window)[1] if window else None


def checkpoint_carried(obs: Observation, kill: AgentKill, resumed: Request) -> list[Item]:
    """What a kill at a checkpoint made durable that ``resumed`` does not carry (C7, C11)."""
    users = [m.text for m in sent_messages(resumed) if m.role == "user"]
    if kill.at in ("request-received", "chunk-flushed"):
        killed = killed_request(obs, kill)
        said = [m.text for m in sent_messages(killed) if m.role == "user"] if killed else []
        words = _user_words(obs, said[-1]) if said else ""
        if said and not any(squeeze(words) in squeeze(u) for u in users):
            return [request_item(resumed, note=f"request {resumed.request} after the restart lacks the user's message "
                                 f"{clip(said[-1], 60)!r}, durable since request {killed.request if killed else '?'} "
                                 f"arrived")]
        return []
    if kill.at == "window-opened":
        window, call_id = killed_window(obs, kill)
        if call_id and tool_answer(sent_messages(resumed), call_id)[0] is None:
            return [request_item(resumed, note=f"request {resumed.request} after the restart lacks tool call "
                                 f"{call_id}, durable since window {window} opened")
                    | {"fact": dropped_call_fact(request_number(resumed), call_id)}]
        return []
    if kill.at == "next-request":
        killed = killed_request(obs, kill)
        step = [m for m in sent_messages(killed) if m.role == "assistant" and m.tool_calls][-1:] if killed else []
        out = []
        for call in step[0].tool_calls if step else ():
            if not call.id:
                continue
            made, answer = tool_answer(sent_messages(resumed), call.id)
            _, was = tool_answer(sent_messages(killed) if killed else (), call.id)
            if made is None or answer is None:
                dropped = {"fact": dropped_call_fact(request_number(resumed), call.id)} if made is None else {}
                out.append(request_item(resumed, note=f"request {resumed.request} after the restart lacks tool call "
                                        f"{call.id} or its result, durable since the step settled") | dropped)
            elif was is not None and not same_text(answer.text, was.text):
                out.append(request_item(resumed, note=f"request {resumed.request} answers tool call {call.id} "
                                        f"{clip(answer.text, 60)!r}, not its settled result {clip(was.text, 60)!r}"))
        return out
    return []


def _signature(msgs: Sequence[Message]) -> list[tuple[str | None, str, tuple[str | None, ...], str | None]]:
    """What identifies a request's history, in the canonical shape of records and readers alike."""
    return [(m.role, squeeze(m.text), m.call_ids, m.tool_call_id) for m in msgs]


def _request_durable(obs: Observation, kill: AgentKill, log: SessionLog) -> list[Item]:
    killed = killed_request(obs, kill)
    if killed is None:
        return [{"at": kill.at, "note": f"killed at {kill.at}, but the server recorded no request before the kill"}]
    if obs.has(Capability.REQUESTS):
        wanted = _signature(sent_messages(killed))
        logged = log.of_type("model_request")
        if any(_signature(event_messages(e)) == wanted for e in logged):
            return []
        last = [event_item(logged[-1], note="the last model_request in the store")] if logged else []
        return [request_item(killed, note=f"the server received request {killed.request} but the log left by the "
                             "kill holds no model_request for it (not durable before the stream opened)"), *last]
    said = [m.text for m in sent_messages(killed) if m.role == "user"]
    inputs = [str(e.get("input", "")) for e in log.of_type("turn_started")]
    words = _user_words(obs, said[-1]) if said else ""
    if said and not any(squeeze(words) in squeeze(i) for i in inputs):
        return [request_item(killed, note=f"the server received request {killed.request} but the log left by the kill "
                             f"does not hold its user message {clip(said[-1], 60)!r} (the store does not record "
                             "requests; the turn's input is what it makes durable)")]
    return []


def _user_words(obs: Observation, said: str) -> str:
    """The words the user typed that a request's user text ``said`` carries — what must be
    durable. An agent may wrap them in text of its own for the request and store them apart
    (aider appends its edit-format rules; Gemini CLI sends its session context and the prompt
    as one turn); ``said`` itself when it carries no typed input whole."""
    typed = [i.text for i in obs.inputs if not i.queued and i.text and squeeze(i.text) in squeeze(said)]
    return typed[-1] if typed else said


def _tool_call_durable(obs: Observation, kill: AgentKill, log: SessionLog) -> list[Item]:
    window, call_id = killed_window(obs, kill)
    if obs.has(Capability.TOOL_STARTS):
        calls = log.of_type("tool_call")
        if call_id is not None and any(e.get("call_id") == call_id for e in calls):
            return []
        if call_id is None:
            answered = {e.get("call_id") for e in log.of_type("tool_result")}
            if any(e.get("call_id") not in answered for e in calls):
                return []
        return [{"window": window, "call_id": call_id, **_undurable(obs, kill, call_id),
                 "note": f"window {window} was running (call {call_id}) but the log left by the kill holds no "
                         "tool_call for it (not durable before the tool body ran)"}]
    known = {c.id for e in log.of_type("assistant_message") for c in event_calls(e)}
    if call_id is not None and call_id in known:
        return []
    return [{"window": window, "call_id": call_id, **_undurable(obs, kill, call_id),
             "note": f"window {window} was running (call {call_id}) but the log left by the kill does not hold the "
                     "call (not durable before the tool body ran)"}]


def _undurable(obs: Observation, kill: AgentKill, call_id: str | None) -> Item:
    """The fact a call missing from the store left by a kill rests on (none for an unknown call)."""
    return {"fact": undurable_call_fact(obs.kills.index(kill) + 1, call_id)} if call_id else {}


def _step_durable(obs: Observation, kill: AgentKill, log: SessionLog) -> list[Item]:
    killed = killed_request(obs, kill)
    number = request_number(killed) if killed else None
    previous = response_to(obs, number - 1) if number and number > 1 else None
    if previous is None or number is None:
        return [{"at": kill.at, "note": f"killed at {kill.at}, but there is no previous step to check"}]
    call_ids = [c.id for c in calls(previous)]
    messages = log.of_type("assistant_message")
    if call_ids:
        message = next((e for e in messages if [c.id for c in event_calls(e)] == call_ids), None)
    else:
        message = messages[-1] if messages else None
    if message is None:
        return [{"request": number - 1, "calls": call_ids, "note": f"the assistant message of request {number - 1} "
                 f"is not in the store when request {number} arrived"}]
    problems = []
    results = {e.get("call_id") for e in log.of_type("tool_result")}
    for call_id in call_ids:
        if call_id not in results:
            problems.append(event_item(message, note=f"the result of tool call {call_id} is not in the store when "
                                       f"request {number} arrived"))
    if obs.has(Capability.STEP_SETTLEMENTS) and not any(
            e.turn == message.turn and e.get("step") == message.get("step") for e in log.of_type("step_settled")):
        problems.append(event_item(message, note=f"step {message.get('step')} of turn {message.turn} has no "
                                   f"step_settled in the store when request {number} arrived"))
    return problems + _request_durable(obs, kill, log)


CHECKPOINTS: dict[str, Callable[[Observation, AgentKill, SessionLog], list[Item]]] = {
    "request-received": _request_durable,
    "chunk-flushed": _request_durable,
    "window-opened": _tool_call_durable,
    "next-request": _step_durable,
}
