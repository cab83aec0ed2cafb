"""Partial assistant work is kept: committed as interrupted and sent again (C5)."""

from __future__ import annotations

import re

from fake_server.records import Request
from harness.checks.base import Findings, check, event_item, log_half, result, turn_at
from harness.checks.views import (
    clip,
    first_request_after,
    last_request_before,
    parsed,
    request_item,
    request_number,
    response_to,
    sent_messages,
    squeeze,
    streamed_text,
    window_call,
)
from harness.model import Capability, CheckResult, DecidedBy, Observation, Outcome, SessionLog, StopDelivery
from harness.model.events import AssistantMessage

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG

# What may follow the kept text: the agent's own note that it was cut off ("[interrupted]",
# "(stopped by the user)", "— cancelled"). Anything else the model never sent is not "kept".
MARKER = re.compile(r"interrupt|stopp|cancel|abort|cut off|\[[^\]]*\]|\([^)]*\)|<[^>]*>", re.I)


@check("C5")
def partial_work_is_kept(obs: Observation) -> CheckResult:
    """Text streamed before an interruption is kept ("you keep what you read").

    Black-box: the next model request carries what the agent surely received before Stop —
    the text it showed (``text_seen``), or the first ``chunks_seen`` chunks the server flushed
    — as an ordinary assistant message (not the last message, which would ask the provider
    to continue it), optionally followed by the agent's own interruption marker. After a Stop
    in a tool, the text the step streamed before the tool call. Log: the cut-off message is
    committed with ``interrupted: true``, holding at least what was seen, and no more than the
    model sent. With no later request, or nothing known to have been received, it is
    ``unknown``: nothing shows the text was kept.
    """
    stops = [s for s in obs.stops if s.exercised and s.phase in ("stream", "tool")]
    if not stops:
        return result("C5", Outcome.SKIPPED, "no Stop arrived mid-stream or during a tool")
    found = Findings("C5")
    log = log_half(obs, found, Capability.INTERRUPTED_TEXT, Capability.MONO_TIMES)
    judged = 0
    for stop in stops:
        scripted, seen, complete = _expected_text(obs, stop)
        if not squeeze(seen):
            if complete:
                found.note(stop=stop.how, note="the step had streamed no text before its tool ran: nothing to keep")
                continue
            found.cannot(f"what the agent received before Stop ({stop.how}) is not known, so what it had to keep "
                         "cannot be told", stop=stop.how, request=stop.request)
            continue
        judged += 1
        req = first_request_after(obs, stop.mono_ns)
        if req is None:
            found.cannot(f"no model request followed Stop ({stop.how}), so nothing shows the text seen before it "
                         f"({clip(seen, 60)!r}) was kept", stop=stop.how)
        elif not parsed(req):
            found.cannot(f"request {req.request}, the first after Stop ({stop.how}), was refused before its history "
                         f"could be read ({req.error}), so whether it kept {clip(seen, 60)!r} is not known",
                         item=request_item(req))
        else:
            _carried(req, stop, scripted, seen, found)
        if isinstance(log, SessionLog):
            _committed(log, stop, scripted, seen, complete, found)
    if judged == 0 and not found.undecided:
        return result("C5", Outcome.SKIPPED, "no assistant text had been streamed before any Stop", found.evidence)
    return found.result(f"the text seen before {judged} Stop(s) was kept and sent again")


def _expected_text(obs: Observation, stop: StopDelivery) -> tuple[str, str, bool]:
    """(what the model sent in the step, what the agent surely received, whether the step's
    stream had completed — a Stop in a tool comes after the whole response)."""
    if stop.phase == "tool":
        number = window_call(obs, stop.window)[0] if stop.window else None
        text = _scripted(obs, number if number is not None else _previous_request(obs, stop.mono_ns))
        return text, text, True
    number = stop.request if stop.request is not None else _previous_request(obs, stop.mono_ns)
    scripted = _scripted(obs, number)
    if stop.text_seen is not None:
        return scripted, stop.text_seen, False
    if stop.chunks_seen is not None and number is not None:
        return scripted, streamed_text(obs, number, stop.chunks_seen), False
    return scripted, "", False


def _previous_request(obs: Observation, before_ns: int) -> int | None:
    previous = last_request_before(obs, before_ns)
    return request_number(previous) if previous else None


def _scripted(obs: Observation, number: int | None) -> str:
    response = response_to(obs, number)
    return response.text if response else ""


def kept_problem(text: str, scripted: str, seen: str) -> str | None:
    """Why ``text`` does not keep ``seen`` (None when it does): it must start with what was seen
    and add nothing the model did not send, but an interruption marker."""
    got, want, sent = squeeze(text), squeeze(seen), squeeze(scripted)
    if not got.startswith(want):
        return f"lost what was seen before Stop: {clip(seen, 80)!r}"
    k = len(want)
    if sent.startswith(want):  # what was seen is what the model sent: the kept text may go on with it
        while k < len(got) and k < len(sent) and got[k] == sent[k]:
            k += 1
    rest = got[k:]
    if rest and not MARKER.search(rest):
        return f"adds {clip(rest, 60)!r}, which the model never sent"
    return None


def _carried(req: Request, stop: StopDelivery, scripted: str, seen: str, found: Findings) -> None:
    """The next request carries the kept text as an ordinary (not last) assistant message."""
    candidates = [(i, m) for i, m in enumerate(sent_messages(req)) if m.role == "assistant"]
    matching = [(i, m) for i, m in candidates if kept_problem(m.text, scripted, seen) is None]
    if not matching:
        near = next((m for _, m in candidates if squeeze(m.text).startswith(squeeze(seen))), None)
        why = kept_problem(near.text, scripted, seen) if near else None
        found.fail(BOX, f"request {req.request} after the Stop does not carry the kept text {clip(seen, 80)!r} as an "
                   "assistant message" + (f": its message {why}" if why else ""), request_item(req))
        return
    position, kept = matching[-1]
    if position == len(sent_messages(req)) - 1:
        found.fail(BOX, f"request {req.request} ends with the partial assistant text: it is sent as a continuation, "
                   "not as ordinary history", request_item(req))
        return
    found.ok(BOX, request_item(req, note=f"carries the text seen before Stop ({stop.how})"),
             seen=clip(seen, 80), kept=clip(kept.text, 80))


def _committed(log: SessionLog, stop: StopDelivery, scripted: str, seen: str, complete: bool,
               found: Findings) -> None:
    """The log commits the stopped step's text: the whole of it before a tool ran, or the
    part seen, flagged ``interrupted: true``, when the stream was cut off."""
    turn = turn_at(log, stop.mono_ns)
    in_turn = [e for e in log.events_of(AssistantMessage) if e.turn == turn]
    if complete:  # Stop in a tool: the step's message was written before the tool ran
        message = next((e for e in reversed(in_turn) if (e.mono_ns or 0) < stop.mono_ns), None)
    else:
        message = next((e for e in in_turn if (e.mono_ns or 0) > stop.mono_ns), None)
    if message is None:
        found.fail(LOG, f"turn {turn} has no assistant message keeping the text streamed before Stop", turn=turn,
                   seen=clip(seen, 80))
        return
    text = message.text or ""
    if complete:
        if squeeze(text) != squeeze(scripted):
            found.fail(LOG, f"the text streamed before the tool ran was not kept: expected {clip(scripted, 80)!r}",
                       event_item(message))
        else:
            found.ok(LOG, event_item(message))
        return
    problems = 0
    if message.interrupted is not True:
        found.fail(LOG, "the assistant message cut off by Stop is not marked interrupted: true", event_item(message))
        problems += 1
    why = kept_problem(text, scripted, seen)
    if why:
        found.fail(LOG, f"the committed text {why}", event_item(message))
        problems += 1
    if not problems:
        found.ok(LOG, event_item(message))
