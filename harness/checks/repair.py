"""The repair after a kill says what is known of each interrupted tool call (C14)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.checks.base import Findings, check, result
from harness.checks.calls import Known, KnownCall, Says, is_repair, known_at, says, wording
from harness.checks.views import Request, clip, first_request_after, squeeze, tool_answer
from harness.model import Capability, CheckResult, Conventions, DecidedBy, Observation, Outcome

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG
STARTED_CLASSES = (Known.STARTED, Known.RAN_TO_END)


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
    """Each call interrupted by a kill is answered with what is known of it.

    A call whose start was durably recorded (its bash window opened, or its ``tool_call`` is in
    the log the kill left) is answered "outcome unknown"; one the model asked for that never
    started (the log shows no start), "not started" — with the contract's markers
    ``TOOL_OUTCOME_UNKNOWN`` / ``TOOL_NOT_STARTED`` or the agent's own wording as its profile
    declares it (matched as substrings). Fails: a started call answered as if it never ran (or
    was rejected), a never-started one answered "outcome unknown", one wording for both
    classes, and a call that finished before the kill answered with a repair instead of its
    result. Undeclared wording used for one class only cannot be judged.
    """
    if not obs.kills:
        return result("C14", Outcome.SKIPPED, "the agent was never killed")
    conventions = obs.conventions
    found = Findings("C14")
    answers: list[Answer] = []
    for n, kill in enumerate(obs.kills, start=1):
        req = first_request_after(obs, kill.mono_ns)
        at_kill = known_at(obs, kill)
        if not at_kill.calls:
            continue
        if req is None or not req.parsed:
            found.cannot(f"no readable model request followed kill {n}, so its repair could not be read"
                         + (f" (request {req.number} was refused; C4 judges it)" if req else ""), kill=n)
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
    return found.result(f"{len(answers)} tool call(s) known at {len(obs.kills)} kill(s) answered with what was known "
                        "of them",
                        nothing="no tool call was pending or recent at any kill")


def _answers(kill: int, req: Request, calls: Iterable[KnownCall], conventions: Conventions,
             found: Findings) -> list[Answer]:
    out = []
    for call in calls:
        _, answer = tool_answer(req.messages, call.call_id)
        if answer is None:
            found.note(kill=kill, request=req.number, call_id=call.call_id,
                       note="no tool result to read (the balance of the request is C4's)")
            if call.known is not Known.HISTORY:
                found.cannot(f"tool call {call.call_id} has no result in request {req.number}, so its repair "
                             "could not be read (C4 judges the balance)", kill=kill, call_id=call.call_id)
            continue
        out.append(Answer(kill, req.number, call, answer.text, says(answer.text, conventions)))
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
