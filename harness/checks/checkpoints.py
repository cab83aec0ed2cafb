"""C11: the semantic checkpoints a SIGKILL must not lose — the model request once the server
has it, the tool call once its window opens, the settled step once the next request arrives —
judged on the resumed request (black-box) and on the store the kill left (log). C7 reuses
``checkpoint_carried``: what a resume must carry is what a checkpoint made durable."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fake_server.records import Request
from harness.checks.base import Findings, Item, check, event_item, result
from harness.checks.facts import dropped_call_fact, left_nothing, no_store_fact, undurable_call_fact
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
from harness.model import AgentKill, Capability, CheckResult, DecidedBy, Observation, Outcome, SessionLog
from harness.model.events import AssistantMessage, ModelRequest, StepSettled, ToolCall, ToolResult, TurnStarted

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG


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
        logged = log.events_of(ModelRequest)
        if any(_signature(event_messages(e)) == wanted for e in logged):
            return []
        last = [event_item(logged[-1], note="the last model_request in the store")] if logged else []
        return [request_item(killed, note=f"the server received request {killed.request} but the log left by the "
                             "kill holds no model_request for it (not durable before the stream opened)"), *last]
    said = [m.text for m in sent_messages(killed) if m.role == "user"]
    inputs = [e.input or "" for e in log.events_of(TurnStarted)]
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
        calls = log.events_of(ToolCall)
        if call_id is not None and any(e.call_id == call_id for e in calls):
            return []
        if call_id is None:
            answered = {e.call_id for e in log.events_of(ToolResult)}
            if any(e.call_id not in answered for e in calls):
                return []
        return [{"window": window, "call_id": call_id, **_undurable(obs, kill, call_id),
                 "note": f"window {window} was running (call {call_id}) but the log left by the kill holds no "
                         "tool_call for it (not durable before the tool body ran)"}]
    known = {c.id for e in log.events_of(AssistantMessage) for c in event_calls(e)}
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
    messages = log.events_of(AssistantMessage)
    if call_ids:
        message = next((e for e in messages if [c.id for c in event_calls(e)] == call_ids), None)
    else:
        message = messages[-1] if messages else None
    if message is None:
        return [{"request": number - 1, "calls": call_ids, "note": f"the assistant message of request {number - 1} "
                 f"is not in the store when request {number} arrived"}]
    problems = []
    results = {e.call_id for e in log.events_of(ToolResult)}
    for call_id in call_ids:
        if call_id not in results:
            problems.append(event_item(message, note=f"the result of tool call {call_id} is not in the store when "
                                       f"request {number} arrived"))
    if obs.has(Capability.STEP_SETTLEMENTS) and not any(
            e.turn == message.turn and e.step == message.get("step") for e in log.events_of(StepSettled)):
        problems.append(event_item(message, note=f"step {message.get('step')} of turn {message.turn} has no "
                                   f"step_settled in the store when request {number} arrived"))
    return problems + _request_durable(obs, kill, log)


CHECKPOINTS: dict[str, Callable[[Observation, AgentKill, SessionLog], list[Item]]] = {
    "request-received": _request_durable,
    "chunk-flushed": _request_durable,
    "window-opened": _tool_call_durable,
    "next-request": _step_durable,
}
