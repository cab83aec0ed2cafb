"""The repair after a kill — and the answer after a Stop or a timeout that ended a running
tool — says what is known of each interrupted tool call (C14)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fake_server.records import Request
from harness.checks.base import Findings, check, event_item, result, stops_seen
from harness.checks.calls import NEVER_RAN, Known, KnownCall, Says, is_repair, known_at, says, wording
from harness.checks.views import (
    clip,
    first_request_after,
    parsed,
    request_item,
    request_number,
    sent_messages,
    squeeze,
    tool_answer,
    window_call,
    windows_open_at,
)
from harness.contract import TOOL_NOT_STARTED
from harness.model import Capability, CheckResult, Conventions, DecidedBy, Observation, Outcome, StopDelivery
from harness.model.events import ToolResult

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG
STARTED_CLASSES = (Known.STARTED, Known.RAN_TO_END)
# What an answer may not say of a call that was running: that it never ran, or was refused.
NEVER_RAN_CLASSES = (Says.NOT_STARTED, Says.NEVER_RAN, Says.BOTH)


@dataclass(frozen=True)
class Answer:
    kill: int
    request: int
    call: KnownCall
    text: str
    says: Says

    def item(self, note: str | None = None) -> dict[str, object]:
        item: dict[str, object] = {"kill": self.kill, "request": self.request, "call_id": self.call.call_id,
                                   "known": self.call.known.value, "how": self.call.how, "answer": clip(self.text, 120),
                                   "says": self.says.value}
        if note:
            item["note"] = note
        return item


@check("C14")
def repair_says_what_is_known(obs: Observation) -> CheckResult:
    """Each call interrupted by a kill is answered with what is known of it; a call a Stop or a
    timeout ended while it ran is never answered as if it never ran.

    A call whose start was durably recorded (its bash window opened, or its ``tool_call`` is in
    the log the kill left) is answered "outcome unknown"; one the model asked for that never
    started (the log shows no start), "not started" — with the contract's markers
    ``TOOL_OUTCOME_UNKNOWN`` / ``TOOL_NOT_STARTED`` or the agent's own wording as its profile
    declares it (matched as substrings). Fails: a started call answered as if it never ran (or
    was rejected), a never-started one answered "outcome unknown", one wording for both
    classes, and a call that finished before the kill answered with a repair instead of its
    result. Undeclared wording used for one class only cannot be judged.

    A Stop, a timeout or a CI watchdog that ended a running tool (its window was open) leaves a
    call whose window ran: the next request's answer for it (black-box) and its result in the
    log must not say it never ran, was not started, or was rejected by the user.
    """
    ended = _tools_ended(obs)
    if not obs.kills and not ended:
        return result("C14", Outcome.SKIPPED, "the agent was never killed, and no Stop or timeout ended a running "
                      "tool")
    conventions = obs.conventions
    found = Findings("C14")
    for stop, window, call_id in ended:
        _judge_ended(obs, stop, window, call_id, found)
    answers: list[Answer] = []
    for n, kill in enumerate(obs.kills, start=1):
        req = first_request_after(obs, kill.mono_ns)
        at_kill = known_at(obs, kill)
        if not at_kill.calls:
            continue
        if req is None or not parsed(req):
            found.cannot(f"no readable model request followed kill {n}, so its repair could not be read"
                         + (f" (request {req.request} was refused; C4 judges it)" if req else ""), kill=n)
            continue
        answers.extend(_answers(n, req, at_kill.calls.values(), conventions, found))
    declared_unknown, declared_not_started = conventions.repair_outcome_unknown, conventions.repair_not_started
    if answers and declared_unknown and declared_unknown == declared_not_started:
        found.fail(BOX, f"the profile declares one wording for both repairs ({declared_unknown!r}), so a started "
                   "call and a never-started one cannot be told apart", wording=declared_unknown)
    deferred = [a for a in answers if not _judge(a, conventions, found)]
    _one_wording_for_both(answers, found)
    if not found.failed:
        for a in deferred:
            found.cannot(_why_undecided(a), item=a.item(),
                         needs_reader=a.call.known is Known.REQUESTED and not obs.has(Capability.TOOL_STARTS))
    summary = [f"{len(answers)} tool call(s) known at {len(obs.kills)} kill(s) answered with what was known of them"]
    if ended:
        summary.append(f"{len(ended)} tool call(s) ended by a Stop or timeout answered as having run")
    return found.result("; ".join(summary) if obs.kills else summary[-1],
                        nothing="no tool call was pending or recent at any kill")


def _tools_ended(obs: Observation) -> list[tuple[StopDelivery, str, str]]:
    """Each Stop, timeout or watchdog that reached a running tool: (the Stop, its window, the
    window's call). The window was open at the Stop, so the call had started."""
    out = []
    for stop in stops_seen(obs):
        open_then = windows_open_at(obs, stop.mono_ns)
        window = stop.window if stop.window in open_then else (open_then[-1] if open_then else None)
        call_id = window_call(obs, window)[1] if window else None
        if window and call_id:
            out.append((stop, window, call_id))
    return out


def _judge_ended(obs: Observation, stop: StopDelivery, window: str, call_id: str, found: Findings) -> None:
    """The answer to a call whose window a Stop or timeout ended: never "it never ran"."""
    what = f"{'a timeout' if stop.source == 'timeout' else 'Stop'} ({stop.how})"
    judged = False
    req = first_request_after(obs, stop.mono_ns)
    answer = tool_answer(sent_messages(req), call_id)[1] if req is not None and parsed(req) else None
    if req is not None and answer is not None:
        judged = True
        said = _said_after_stop(answer.text, obs.conventions)
        item = request_item(req, note=f"answers tool call {call_id} {clip(answer.text, 80)!r}")
        if said in NEVER_RAN_CLASSES:
            found.fail(BOX, f"tool call {call_id} was running in window {window} when {what} ended it, but request "
                       f"{req.request} answers it {clip(answer.text, 80)!r}: {said.value}", item, call_id=call_id)
        else:
            found.ok(BOX, item, call_id=call_id, window=window)
    logged = [e for e in obs.log.events_of(ToolResult) if e.call_id == call_id] if obs.log else []
    for event in logged[:1]:
        judged = True
        said = _said_after_stop(str(event.get("output", "")), obs.conventions)
        if event.get("rejected") is True or said in NEVER_RAN_CLASSES:
            claim = "the user's refusal" if event.get("rejected") is True else said.value
            found.fail(LOG, f"tool call {call_id} was running in window {window} when {what} ended it, but its "
                       f"result in the log records {claim}", event_item(event), call_id=call_id)
        else:
            found.ok(LOG, event_item(event, note=f"the result of tool call {call_id}, ended by {what}"))
    if not judged:
        found.cannot(f"tool call {call_id} was running in window {window} when {what} ended it, but no request "
                     "after it answers the call and no log shows its result", needs_reader=obs.log_format is None,
                     call_id=call_id, window=window)


def _said_after_stop(text: str, conventions: Conventions) -> Says:
    """What an answer to a call a Stop ended says. A profile that declares one wording for both
    repairs makes that wording match both: alone, it is the agent's one word for a cut-off call,
    which after a Stop is an aborted answer (only a kill leaves two classes to tell apart)."""
    said = says(text, conventions)
    declared = conventions.repair_outcome_unknown
    one_word = bool(declared) and declared == conventions.repair_not_started
    if said is Says.BOTH and one_word and TOOL_NOT_STARTED not in text:
        return Says.NEVER_RAN if NEVER_RAN.search(text) else Says.OUTCOME_UNKNOWN
    return said


def _answers(kill: int, req: Request, calls: Iterable[KnownCall], conventions: Conventions,
             found: Findings) -> list[Answer]:
    out = []
    for call in calls:
        _, answer = tool_answer(sent_messages(req), call.call_id)
        if answer is None:
            found.note(kill=kill, request=request_number(req), call_id=call.call_id,
                       note="no tool result to read (the balance of the request is C4's)")
            if call.known is not Known.HISTORY:
                found.cannot(f"tool call {call.call_id} has no result in request {req.request}, so its repair "
                             "could not be read (C4 judges the balance)", kill=kill, call_id=call.call_id)
            continue
        out.append(Answer(kill, request_number(req), call, answer.text, says(answer.text, conventions)))
    return out


def _judge(a: Answer, conventions: Conventions, found: Findings) -> bool:
    """Judge one answer by what is known of its call; False when it cannot be judged alone."""
    s = a.says
    half = LOG if a.call.by_log else BOX
    unknown_words, not_started_words = wording(conventions)
    known = a.call.known
    if s is Says.BOTH:
        found.fail(half, f"tool call {a.call.call_id} is answered both outcome unknown and not started", a.item())
        return True
    if known is Known.HISTORY and a.call.result is not None:
        # Already history: whatever it was answered then (its result, or an earlier repair) is what is known.
        earlier = says(a.call.result, conventions)
        if squeeze(a.text) != squeeze(a.call.result) and (is_repair(a.text, conventions)
                                                         or earlier in (Says.OUTCOME_UNKNOWN, Says.NOT_STARTED)):
            found.fail(half, f"tool call {a.call.call_id} was answered {clip(a.call.result, 60)!r} before the kill "
                       f"({a.call.how}), but is now answered {clip(a.text, 80)!r}", a.item())
        else:
            found.ok(half, a.item("keeps the result it had before the kill"))
        return True
    if known in (Known.HISTORY, Known.FINISHED):
        if known is Known.FINISHED and a.call.result is not None and squeeze(a.text) == squeeze(a.call.result):
            # What the disk held is sent again, even a repair an earlier restart wrote there.
            found.ok(half, a.item("keeps the result it had before the kill"))
            return True
        if s in (Says.OUTCOME_UNKNOWN, Says.NOT_STARTED):
            found.fail(half, f"tool call {a.call.call_id} finished before the kill ({a.call.how}), but is answered "
                       f"with a repair: {clip(a.text, 80)!r}", a.item())
        else:
            found.ok(half, a.item("keeps its real result"))
        return True
    if known in STARTED_CLASSES:
        if s in (Says.NOT_STARTED, Says.NEVER_RAN):
            found.fail(half, f"tool call {a.call.call_id} had started ({a.call.how}), but its result says "
                       f"{s.value}: {clip(a.text, 80)!r}", a.item())
            return True
        if s is Says.OUTCOME_UNKNOWN or known is Known.RAN_TO_END:
            found.ok(half, a.item())
            return True
        if conventions.repair_outcome_unknown:
            found.fail(half, f"tool call {a.call.call_id} had started ({a.call.how}), but is answered "
                       f"{clip(a.text, 80)!r}, which is neither of {list(unknown_words)}", a.item())
            return True
        return False
    if known is Known.NOT_STARTED:
        if s is Says.NOT_STARTED:
            found.ok(half, a.item())
            return True
        if s is Says.OUTCOME_UNKNOWN:
            found.fail(half, f"tool call {a.call.call_id} never started ({a.call.how}), but is answered outcome "
                       f"unknown: {clip(a.text, 80)!r}", a.item())
            return True
        if conventions.repair_not_started:
            found.fail(half, f"tool call {a.call.call_id} never started ({a.call.how}), but is answered "
                       f"{clip(a.text, 80)!r}, which is neither of {list(not_started_words)}", a.item())
            return True
        return False
    return False  # requested, start unknown: only the log can tell which answer was due


def _one_wording_for_both(answers: list[Answer], found: Findings) -> None:
    """A started call and a never-started one given the same result: the classes are not told apart."""
    started = [a for a in answers if a.call.known in STARTED_CLASSES]
    never = [a for a in answers if a.call.known is Known.NOT_STARTED]
    for a in started:
        for b in never:
            if squeeze(a.text) == squeeze(b.text):
                found.fail(LOG, f"tool calls {a.call.call_id} (started) and {b.call.call_id} (never started) are "
                           f"answered alike, {clip(a.text, 80)!r}: one wording for both classes",
                           a.item(), other=b.item())
                return


def _why_undecided(a: Answer) -> str:
    if a.call.known is Known.REQUESTED:
        return (f"tool call {a.call.call_id} was requested ({a.call.how}); whether it had started is not known "
                f"without a log that records starts, so its answer {clip(a.text, 60)!r} cannot be judged")
    marker = "TOOL_OUTCOME_UNKNOWN" if a.call.known in STARTED_CLASSES else "TOOL_NOT_STARTED"
    return (f"tool call {a.call.call_id} ({a.call.known.value}) is answered {clip(a.text, 60)!r}, which is not "
            f"{marker}, and the profile declares no wording of its own for it")
