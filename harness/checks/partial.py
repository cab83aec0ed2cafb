"""Partial assistant work is kept: committed as interrupted and sent again (C5)."""

from __future__ import annotations

from typing import Any, Mapping

from harness.checks.base import check, clip, event_item, log_or_verdict, request_item
from harness.checks.views import (
    first_request_after,
    last_request_before,
    messages,
    response_to,
    same_text,
    starts_with,
    streamed_text,
    turn_at,
    window_call,
)
from harness.model import CheckResult, Observation, SessionLog, StopDelivery, failed, passed, skipped


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
        if not seen.strip():
            continue  # nothing had been shown, so nothing had to be kept
        committed = None
        if log is not None:
            committed, found = _committed_text(log, stop, scripted, seen, complete)
            problems.extend(found)
        next_request = first_request_after(obs, stop.mono_ns)
        if next_request is not None:
            problems.extend(_carried_problems(next_request, scripted, seen, committed))
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
    return previous["request"] if previous else None


def _scripted(obs: Observation, number: int | None) -> str:
    response = response_to(obs, number) if number is not None else None
    return str((response or {}).get("text") or "")


def _committed_text(log: SessionLog, stop: StopDelivery, scripted: str, seen: str,
                    complete: bool) -> tuple[str | None, list[dict]]:
    """The text the log committed for the stopped step, and what is wrong with it."""
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


def _carried_problems(request: Mapping[str, Any], scripted: str, seen: str, committed: str | None) -> list[dict]:
    """The next request carries the kept text as an ordinary (not last) assistant message."""
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
