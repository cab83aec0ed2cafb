"""A restarted agent continues the same session (C7) and, advisory, tells the model it
resumed (A1)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from harness.checks.base import check, clip, event_item, log_or_verdict, request_item
from harness.checks.views import first_changed_event, first_request_after, last_request_before, messages
from harness.model import CheckResult, Observation, Restart, SessionEvent, SessionLog, Tier, failed, passed, skipped
from harness.readers.contract_v1 import LogDamaged, read_contract_v1


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
        note = _resume_note(obs.log, restart.mono_ns)
        previous = last_request_before(obs, restart.mono_ns)
        wanted = f"the session_resumed note {clip(note, 60)!r}" if note else "a note that the session resumed"
        carries = _mentions(note)
        ok = _count(request, carries) > (_count(previous, carries) if previous else 0)
        (evidence if ok else problems).append(request_item(
            request, note=f"request {request['request']} {'carries' if ok else 'lacks'} {wanted}"))
    if not problems and not evidence:
        return skipped("A1", "no model request followed a restart")
    if problems:
        return failed("A1", problems[0]["note"], *problems)
    return passed("A1", "every resumed session told the model it had resumed", *evidence)


def _mentions(note: str | None) -> Callable[[str], bool]:
    """What marks a message as the resume note: the log's own note, else any mention of resuming."""
    if note is None:
        return lambda text: "resum" in text.lower()
    compact = "".join(note.split())
    return lambda text: compact in "".join(text.split())


def _count(request: Mapping[str, Any], carries: Callable[[str], bool]) -> int:
    """How many messages of a request carry the note: a new resume adds one more."""
    return sum(1 for m in messages(request) if carries(str(m.get("text") or "")))


def _resume_note(log: SessionLog | None, after_ns: int) -> str | None:
    if log is None:
        return None
    resumed: list[SessionEvent] = [e for e in log.of_type("session_resumed") if (e.mono_ns or 0) > after_ns]
    return str(resumed[0].get("note")) if resumed else None
