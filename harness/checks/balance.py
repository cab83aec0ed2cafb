"""After a kill, the next model request is balanced and keeps every earlier tool call (C4)."""

from __future__ import annotations

from harness.checks.base import Findings, check, failure_item, result
from harness.checks.calls import known_at
from harness.checks.facts import dropped_call_fact, undurable_call_fact
from harness.checks.views import (
    balance_problems,
    event_calls,
    first_request_after,
    parsed,
    refused,
    refused_records,
    request_item,
    request_number,
    sent_messages,
    tool_answer,
    unbalanced,
)
from harness.model import AgentFailure, CheckResult, DecidedBy, Observation, Outcome, SessionLog
from harness.model.events import AssistantMessage, ToolCall

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG


@check("C4")
def next_request_is_balanced(obs: Observation) -> CheckResult:
    """After a kill, the next model request is balanced and drops no earlier tool call.

    Black-box: the strict fake server refuses an unbalanced history (its 400 record names the
    unanswered call), and the first request after each kill is diffed against what the agent
    demonstrably knew at the kill — every call carried in an earlier request or in the
    response that opened a bash window must still be there, each with exactly one tool result.
    Log: the log left by the kill adds the calls only it shows. What the results *say* is C14's.
    """
    found = Findings("C4")
    if obs.failure is not None and _refused_unbalanced(obs.failure):
        found.fail(BOX, f"the run ended because {obs.failure.what}", failure_item(obs.failure))
    if not obs.kills:
        if found.failed:
            return found.result("")
        return result("C4", Outcome.SKIPPED, "the agent was never killed")
    for n, kill in enumerate(obs.kills, start=1):
        req = first_request_after(obs, kill.mono_ns)
        if req is None:
            if not found.failed:
                found.cannot(f"no model request followed kill {n} (pid {kill.pid} at {kill.at}), so the next "
                             "request could not be judged", kill=n)
            continue
        if refused(req) and (unbalanced(req) or not parsed(req)):
            found.fail(BOX, f"the server refused request {req.request}, the first after kill {n}: {req.error}",
                       request_item(req))
            continue
        at_kill = known_at(obs, kill)
        problems_before = len(found.problems)
        for problem in balance_problems(sent_messages(req)):
            found.fail(BOX, f"request {req.request}: {problem}", request_item(req))
        for call_id, known in at_kill.calls.items():
            made, answer = tool_answer(sent_messages(req), call_id)
            half = BOX if known.box else LOG
            if made is None:
                found.fail(half, f"request {req.request}: tool call {call_id}, known at kill {n} ({known.how}), is "
                           "missing from the history (dropped)", request_item(req), call_id=call_id,
                           fact=dropped_call_fact(request_number(req), call_id))
                if at_kill.log is not None and call_id not in _recorded_calls(at_kill.log):
                    found.fail(half, f"the dropped tool call {call_id} had no record in the store left by kill {n}",
                               kill=n, call_id=call_id, fact=undurable_call_fact(n, call_id))
            elif answer is None:
                found.fail(half, f"request {req.request}: tool call {call_id} has no tool result", request_item(req),
                           call_id=call_id)
        if len(found.problems) == problems_before:
            found.ok(BOX, request_item(req, note=f"the first request after kill {n} (pid {kill.pid} at {kill.at})"),
                     calls={cid: k.known.value for cid, k in at_kill.calls.items()})
            if at_kill.log is not None:
                found.ok(LOG, kill=n, note="the log left by the kill refined which calls the agent knew",
                         logged_calls=sorted(cid for cid, k in at_kill.calls.items() if k.by_log))
            elif at_kill.log_note:
                found.note(kill=n, note=at_kill.log_note)
    return found.result(f"the first request after each of {len(obs.kills)} kill(s) was balanced and kept every "
                        "earlier tool call")


def _recorded_calls(log: SessionLog) -> set[str]:
    """The calls a store records: its tool_call events and the calls of its assistant messages."""
    return ({str(e.call_id) for e in log.events_of(ToolCall)}
            | {c.id for e in log.events_of(AssistantMessage) for c in event_calls(e) if c.id})


def _refused_unbalanced(failure: AgentFailure) -> bool:
    """The run ended on the server refusing the agent's history as unbalanced."""
    return any(unbalanced(r) for r in refused_records(failure.records)) or "unbalanced" in failure.what
