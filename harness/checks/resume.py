"""A restarted agent continues the same session (C7) and, advisory, tells the model it
resumed (A1)."""

from __future__ import annotations

from collections.abc import Callable

from fake_server.records import Request
from harness.checks.base import (
    Findings,
    captures,
    check,
    event_item,
    failure_item,
    log_half,
)
from harness.checks.checkpoints import checkpoint_carried
from harness.checks.facts import left_nothing, no_store_fact
from harness.checks.log_format import AT_THE_END
from harness.checks.views import (
    clip,
    first_request_after,
    last_request_before,
    parsed,
    request_item,
    sent_messages,
    squeeze,
)
from harness.model import CheckResult, DecidedBy, LogCapture, Observation, Restart, SessionLog
from harness.model.events import SessionResumed, TurnStarted

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG


@check("C7")
def resume_continues_the_session(obs: Observation) -> CheckResult:
    """A follow-up after a restart is an ordinary turn of the same session, never a fork.

    Black-box: the first request after each restart carries every earlier user input and what
    a kill at a checkpoint had made durable (the user's message of a request killed as it
    arrived, the call of a window killed as it ran); an agent that cannot resume at all
    ("No conversation found") fails, with its exit code and stderr. Log: the same session,
    every earlier record kept as it was (the reader's ``lost`` from the store before the restart
    to every later capture and the final store: what the store holds as written, never a
    comparison of events a reader derives), and a new turn appended after the old ones.
    """
    found = Findings("C7")
    if obs.failure is not None and obs.failure.after_restart:
        found.fail(BOX, f"the agent did not resume the session: {obs.failure.what}", failure_item(obs.failure))
        _nothing_to_resume(obs, found)
    restarts = [(n, r) for n, r in enumerate(obs.restarts, start=1) if r.damage != "mid-file"]
    if not restarts:
        return found.result("", nothing="the agent was never restarted on a readable session")
    log = log_half(obs, found)
    for number, restart in restarts:
        req = first_request_after(obs, restart.mono_ns)
        if req is None or not parsed(req):
            if not found.failed:
                found.cannot(f"no readable model request followed restart {number}"
                             + (f" (request {req.request} was refused: C4 judges it)" if req else ""), restart=number)
            continue
        _carries_history(obs, number, restart, req, found)
        if isinstance(log, SessionLog):
            _log_continues(obs, log, restart, number, found)
    return found.result(f"{len(restarts)} restart(s) continued the same session with its history")


def _nothing_to_resume(obs: Observation, found: Findings) -> None:
    """A resume refused after a kill that left nothing of the session on disk (no store, or one
    with no record), still so when the agent was started again: the refusal rests on that (C11's
    fact) as much as on the exit."""
    restart = obs.restarts[-1] if obs.restarts else None
    kills = [(n, k) for n, k in enumerate(obs.kills, start=1) if restart and k.mono_ns < restart.mono_ns]
    if restart is None or not kills:
        return
    number, kill = kills[-1]
    if kill.log is not None and left_nothing(kill.log) and (restart.before is None or left_nothing(restart.before)):
        where = kill.log.snapshot.path if kill.log.snapshot else kill.log.absent_from
        found.fail(LOG, f"kill {number} had left nothing of the session at {where}: there was no session to resume",
                   kill=number, fact=no_store_fact(number))


def _carries_history(obs: Observation, number: int, restart: Restart, req: Request, found: Findings) -> None:
    users = [m.text for m in sent_messages(req) if m.role == "user"]
    problems = 0
    previous = [r.mono_ns for r in obs.restarts if r.mono_ns < restart.mono_ns]
    kill = next((k for k in reversed(obs.kills)
                 if k.mono_ns < restart.mono_ns and (not previous or k.mono_ns > previous[-1])), None)
    # A kill that left nothing of the session on disk is what a blank resume rests on (C11's fact).
    nothing = ({"fact": no_store_fact(obs.kills.index(kill) + 1)}
               if kill is not None and kill.log is not None and left_nothing(kill.log) else {})
    for item in obs.inputs:
        if item.mono_ns < restart.mono_ns and not item.queued and not any(item.text in t for t in users):
            found.fail(BOX, f"request {req.request} after restart {number} lacks the earlier user input "
                       f"{clip(item.text, 60)!r}: a blank fork", request_item(req) | nothing)
            problems += 1
    if kill is not None:
        for problem in checkpoint_carried(obs, kill, req):
            found.fail(BOX, problem.pop("note"), problem | nothing)
            problems += 1
    if not problems:
        found.ok(BOX, request_item(req, note=f"the first request after restart {number} carries the earlier history"))


def _log_continues(obs: Observation, log: SessionLog, restart: Restart, number: int, found: Findings) -> None:
    """Same session, nothing earlier lost, a new turn after the old ones."""
    before = restart.before
    if before is None or before.snapshot is None or before.log is None:
        found.note(restart=number, note="the store before the restart was not captured or not readable; the log "
                   "half judges nothing of this restart")
        return
    problems = 0
    if log.header.session_id != before.log.header.session_id:
        found.fail(LOG, f"after restart {number} the store is session {log.header.session_id!r}, not "
                   f"{before.log.header.session_id!r}: a fork", restart=number)
        problems += 1
    assert obs.log_format is not None
    later = [c for c in captures(obs) if c.snapshot and c.snapshot.mono_ns > before.snapshot.mono_ns]
    if obs.log_snapshot is not None:
        later.append(LogCapture(moment=AT_THE_END, snapshot=obs.log_snapshot))
    for capture in later:
        assert capture.snapshot is not None
        change = obs.log_format.lost(before.snapshot, capture.snapshot)
        if change is not None:
            found.fail(LOG, f"the store {capture.moment} lost what it held {before.moment}: {change.where}: "
                       f"{change.detail}", where=change.where, line=change.line, restart=number)
            return
    last_turn = max((e.turn or 0 for e in before.log.events_of(TurnStarted)), default=0)
    new_turns = [e for e in log.events[len(before.log.events):] if e.type == "turn_started"]
    if not new_turns:
        found.fail(LOG, f"no turn was appended to the session after restart {number}", restart=number)
    elif (new_turns[0].turn or 0) <= last_turn:
        found.fail(LOG, f"the turn after restart {number} is numbered {new_turns[0].turn}, not after turn "
                   f"{last_turn}", event_item(new_turns[0]))
    elif not problems:
        found.ok(LOG, event_item(new_turns[0], note=f"restart {number} continued session {log.header.session_id}"))


@check("A1")
def resume_note_is_sent(obs: Observation) -> CheckResult:
    """The first request after a resume tells the model the session resumed and files may
    have changed (the log's ``session_resumed`` note when there is one): one more message
    carries it than in the request before the restart."""
    found = Findings("A1")
    for number, restart in enumerate(obs.restarts, start=1):
        if restart.damage == "mid-file":
            continue
        req = first_request_after(obs, restart.mono_ns)
        if req is None:
            continue
        note = _resume_note(obs.log, restart.mono_ns)
        half = LOG if note else BOX
        previous = last_request_before(obs, restart.mono_ns)
        wanted = f"the session_resumed note {clip(note, 60)!r}" if note else "a note that the session resumed"
        carries = _mentions(note)
        if _count(req, carries) > (_count(previous, carries) if previous else 0):
            found.ok(half, request_item(req, note=f"request {req.request} carries {wanted}"))
            if half is LOG:
                found.ok(BOX, restart=number)
        else:
            found.fail(half, f"request {req.request} lacks {wanted}", request_item(req))
    return found.result("every resumed session told the model it had resumed",
                        nothing="no model request followed a restart")


def _mentions(note: str | None) -> Callable[[str], bool]:
    """What marks a message as the resume note: the log's own note, else any mention of resuming."""
    if note is None:
        return lambda text: "resum" in text.lower()
    compact = squeeze(note)
    return lambda text: compact in squeeze(text)


def _count(req: Request, carries: Callable[[str], bool]) -> int:
    """How many messages of a request carry the note: a new resume adds one more."""
    return sum(1 for m in sent_messages(req) if carries(m.text))


def _resume_note(log: SessionLog | None, after_ns: int) -> str | None:
    if log is None:
        return None
    resumed = [e for e in log.events_of(SessionResumed) if (e.mono_ns or 0) > after_ns]
    return str(resumed[0].note) if resumed else None
