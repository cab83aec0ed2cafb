"""How turns end: exactly once (C1), repaired in memory only after a crash (C2), and a Stop
the agent carried out itself is never an error (C12)."""

from __future__ import annotations

from harness.checks.base import (
    Findings,
    Item,
    NoLog,
    check,
    event_item,
    first_changed_event,
    log_half,
    log_or_verdict,
    result,
    stops_seen,
    turn_at,
    wants_reader,
)
from harness.checks.calls import is_repair
from harness.checks.facts import exit_fact
from harness.checks.process import died_of_stop
from harness.contract import (
    ABORT_SOURCES,
    EXIT_CODE_FOR_REASON,
    REASON_FOR_EXPECTATION,
    STOPPED_REASONS,
    TURN_END_REASONS,
)
from harness.model import (
    Capability,
    CheckResult,
    DecidedBy,
    Observation,
    Outcome,
    ProcessExit,
    SessionEvent,
    SessionLog,
    Settlement,
    StopDelivery,
)
from harness.model.drivers import DRIVERS
from harness.model.events import ToolResult, TurnEnded, TurnStarted

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG


@check("C1")
def turn_ends_exactly_once(obs: Observation) -> CheckResult:
    """Every turn ends exactly once, with a reason from the closed set.

    A turn may stay open in the store only when the agent was killed while it ran (the honest
    record of a crash) — by the harness's SIGKILL or by any signal it died of, such as a Stop
    delivered as SIGINT that it left to the default action (how its exit tells that is C8's);
    a second turn end, a turn started while another is open in the same process, or a turn
    left open while the process lived on are violations. Needs a store that records turn ends;
    telling whether a death fell inside an open turn needs its events' monotonic times. Over
    ACP, without such a store, the prompts' answers decide (``_prompts_answered``).
    """
    log = log_or_verdict(obs, "C1", Capability.TURN_ENDS)
    if isinstance(log, CheckResult):
        answered = DRIVERS[obs.driver].answers_each_turn and log.outcome is not Outcome.FAIL
        return _prompts_answered(obs) if answered else log
    starts = log.events_of(TurnStarted)
    if not starts:
        return result("C1", Outcome.SKIPPED, "the log has no turn")
    timed = obs.has(Capability.MONO_TIMES)
    kill_times = sorted([k.mono_ns for k in obs.kills] + [e.ended_ns for e in obs.exits if e.signal is not None])
    problems: list[tuple[str, SessionEvent]] = []
    untimed: list[SessionEvent] = []
    open_turn: TurnStarted | None = None
    ended: dict[int | None, SessionEvent] = {}

    def killed_while_open(start: TurnStarted, next_start: TurnStarted | None) -> bool | None:
        if not kill_times:
            return False
        if _open_in_a_kill_capture(obs, start) or _last_turn_of_a_process_that_died(obs, start):
            return True
        if not timed or start.mono_ns is None:
            return None  # a kill happened, but when relative to this turn is not known
        end = next_start.mono_ns if next_start is not None else None
        return any(t > (start.mono_ns or 0) and (end is None or t < end) for t in kill_times)

    def left_open(start: TurnStarted, next_start: TurnStarted | None) -> None:
        killed = killed_while_open(start, next_start)
        if killed is None:
            untimed.append(start)
        elif not killed:
            problems.append((f"turn {next_start.turn} started while turn {start.turn} was still open and the agent "
                             "had not been killed" if next_start else
                             f"turn {start.turn} never ended, and the agent was not killed while it ran", start))

    for event in log.events:
        if isinstance(event, TurnStarted):
            if open_turn is not None:
                left_open(open_turn, event)
            open_turn = event
        elif event.type == "turn_ended":
            if event.turn in ended:
                problems.append((f"turn {event.turn} ended a second time (first at line {ended[event.turn].line})",
                                 event))
            elif open_turn is None or event.turn != open_turn.turn:
                problems.append((f"turn_ended for turn {event.turn}, which is not the open turn", event))
            ended.setdefault(event.turn, event)
            problems.extend((p, event) for p in _reason_problems(event))
            if open_turn is not None and event.turn == open_turn.turn:
                open_turn = None
    if open_turn is not None:
        left_open(open_turn, None)
    if problems:
        return result("C1", Outcome.FAIL, problems[0][0], [event_item(e, note=p) for p, e in problems])
    if untimed:
        return result("C1", Outcome.UNKNOWN, f"turn {untimed[0].turn} was left open and the agent was killed, but "
                      f"the {obs.log_format.name if obs.log_format else ''} store does not record "
                      f"{Capability.MONO_TIMES.value}, so whether the kill fell inside it cannot be told",
                      [event_item(e) for e in untimed], needs_reader=True)
    return result("C1", Outcome.PASS, f"{len(starts)} turn(s); each ended once with a valid reason, or was open when "
                  "the agent was killed", [event_item(e) for e in log.events_of(TurnEnded)])


def _prompts_answered(obs: Observation) -> CheckResult:
    """Over ACP a turn is a ``session/prompt`` and its end is that request's one response, so
    the protocol shows what a store without turn ends cannot: each prompt was answered once,
    with a ``stopReason`` of the protocol's set (the driver's settlement), or was open when the
    agent was killed. A prompt never answered while the agent lived on fails."""
    prompts = [i for i in obs.inputs if not i.queued]
    if not prompts:
        return result("C1", Outcome.SKIPPED, "no prompt was sent")
    found = Findings("C1")
    # Killed, or dead of a signal of its own; not ended by the client once the steps were over.
    ends = sorted([k.mono_ns for k in obs.kills] + [e.ended_ns for e in obs.exits
                                                     if e.signal is not None and e.expect != "ended"])
    for number, prompt in enumerate(prompts, start=1):
        until = prompts[number].mono_ns if number < len(prompts) else None
        answers = [s for s in obs.settlements if s.mono_ns >= prompt.mono_ns and (until is None or s.mono_ns < until)]
        item = {"turn": number, "prompt": prompt.text, "seen_in": DRIVERS[obs.driver].transcript}
        if not answers:
            gone = next((t for t in ends if t > prompt.mono_ns and (until is None or t < until)), None)
            if gone is None:
                found.fail(BOX, f"turn {number} ({prompt.text!r}) never ended: its session/prompt was never answered "
                           "while the agent lived on", item)
            else:
                found.ok(BOX, item, note="open when the agent was killed")
            continue
        if len(answers) > 1:
            found.fail(BOX, f"turn {number} ended {len(answers)} times", item, ends=[a.how for a in answers])
        elif answers[0].reason not in TURN_END_REASONS:
            found.fail(BOX, f"turn {number} ended with no reason of the closed set ({answers[0].how})", item)
        else:
            found.ok(BOX, item, ended=answers[0].how, reason=answers[0].reason)
    return found.result(f"{len(prompts)} ACP prompt(s): each answered once with a stopReason of the protocol's set, "
                        "or open when the agent was killed")


def _open_in_a_kill_capture(obs: Observation, start: SessionEvent) -> bool:
    """The store captured right after a SIGKILL holds this turn's start and no end of it: the
    kill fell inside the turn, whatever times the store records."""
    for kill in obs.kills:
        captured = kill.log.log if kill.log is not None else None
        if captured is None:
            continue
        started = any(e.type == "turn_started" and e.turn == start.turn for e in captured.events)
        if started and not any(e.type == "turn_ended" and e.turn == start.turn for e in captured.events):
            return True
    return False


def _last_turn_of_a_process_that_died(obs: Observation, start: TurnStarted) -> bool:
    """The turn was started by the last input a process received, and that process died of a
    signal (a SIGKILL, or a Stop it left to the signal's default action): a turn never ended
    was open when it died, whatever times the store records."""
    said = start.input or ""
    for exit_ in obs.exits:
        if exit_.signal is None:
            continue
        received = [i for i in obs.inputs if not i.queued and exit_.started_ns <= i.mono_ns <= exit_.ended_ns]
        if received and received[-1].text and received[-1].text in said:
            return True
    return False


def _reason_problems(event: SessionEvent) -> list[str]:
    reason = event.get("reason")
    if reason not in TURN_END_REASONS:
        return [f"turn {event.turn} ended with reason {reason!r}, not one of {sorted(TURN_END_REASONS)}"]
    # A store that records no abort source (no ``source`` at all) is not failed for it here;
    # a format that requires one says so in its own rules (C10).
    if reason == "aborted" and "source" in event.data and event.get("source") not in ABORT_SOURCES:
        return [f"turn {event.turn} aborted with source {event.get('source')!r}, not one of {sorted(ABORT_SOURCES)}"]
    return []


# What a reloaded agent may write first: the record of a cut torn tail, or new user activity.
FIRST_WRITES_AFTER_LOAD = frozenset({"torn_tail_dropped", "turn_started", "inbox_queued", "inbox_canceled"})


@check("C2")
def reload_repairs_in_memory_only(obs: Observation) -> CheckResult:
    """Reloading after a crash repairs the open turn in memory; the store is not rewritten.

    The reader compares the store before each restart with the store once the agent had loaded
    it (``changed``: loading never writes). What the restarted agent wrote first is new
    activity, never a repair; a turn open at the crash gets no turn end in the store; and no
    synthesized repair result (``TOOL_OUTCOME_UNKNOWN`` / ``TOOL_NOT_STARTED``, or the agent's
    declared wording) is ever written. A restart on a store damaged mid-file is C10's.
    """
    restarts = [(n, r) for n, r in enumerate(obs.restarts, start=1) if r.damage != "mid-file"]
    if not restarts:
        return result("C2", Outcome.SKIPPED, "the agent was never restarted on a readable session")
    log = log_or_verdict(obs, "C2")
    if isinstance(log, CheckResult):
        return log
    assert obs.log_format is not None  # log_or_verdict answered for a missing reader
    found = Findings("C2")
    for number, restart in restarts:
        before = restart.before
        if before is None or before.snapshot is None:
            found.cannot(f"restart {number}: the store was not captured before the restart", restart=number)
            continue
        after = restart.after_load
        if after is not None and after.snapshot is not None:
            change = obs.log_format.changed(before.snapshot, after.snapshot)
            if change is not None:
                found.fail(LOG, f"loading changed the store at restart {number}: {change.where}: {change.detail}",
                           restart=number, where=change.where, line=change.line)
            else:
                found.ok(LOG, restart=number, note=f"the store was unchanged by loading ({before.moment} and "
                         f"{after.moment} are the same)")
        else:
            found.note(restart=number, note="the store once loaded was not captured; judged by what the agent "
                       "wrote after loading")
        if before.log is None:
            found.cannot(f"restart {number}: the store before the restart could not be read: {before.error}",
                         restart=number)
            continue
        _writes_after_load(obs, found, number, before.log, log)
    for event in log.events_of(ToolResult):
        if is_repair(str(event.get("output", "")), obs.conventions):
            found.fail(LOG, "a crash-repair result was written to the store", event_item(event))
    return found.result(f"{len(restarts)} reload(s) left the store as it was and wrote no repair")


def _writes_after_load(obs: Observation, found: Findings, number: int, before: SessionLog, final: SessionLog) -> None:
    """What the restarted agent wrote first, and that the turn open at the crash stayed open."""
    if first_changed_event(before, final) is not None:
        found.note(restart=number, note="the store lost or changed earlier events (judged by C7 and C10), so what "
                   "was written after loading is not told apart")
        return
    written = final.events[len(before.events):]
    if written and written[0].type not in FIRST_WRITES_AFTER_LOAD:
        found.fail(LOG, f"the first event written after restart {number} is {written[0].type}, which only a "
                   "repair on load would write", event_item(written[0]))
    elif written:
        found.ok(LOG, event_item(written[0], note=f"the first event written after restart {number}"))
    else:
        found.ok(LOG, restart=number, note="nothing was written after loading")
    if not obs.has(Capability.TURN_ENDS):
        return
    open_turns = {e.turn for e in before.events_of(TurnStarted)} - {e.turn for e in before.events_of(TurnEnded)}
    ends = [e for e in written if e.type == "turn_ended" and e.turn in open_turns]
    for end in ends:
        found.fail(LOG, f"turn {end.turn} was open when restart {number} loaded the log; its end was written to the "
                   "store instead of synthesized in memory", event_item(end))
    if open_turns and not ends:
        found.ok(LOG, restart=number, open_turns=sorted(t for t in open_turns if t is not None),
                 note="the turn(s) open at the crash still have no turn end in the store")


@check("C12")
def own_cancel_is_not_an_error(obs: Observation) -> CheckResult:
    """A turn the agent cancelled itself on Stop settles ``aborted`` (``interrupted`` on a
    timeout), never ``error`` — even when the cancelled HTTP stream surfaced as a read error.

    Black-box: how the driver saw the turn end (the terminal's turn-ended line, the API's
    settled event), or a headless run's exit, which says aborted/interrupted under the
    contract (exit 3) or the agent's declared convention. An exit code that tells something
    else is C8's to fail, not counted again here. Log: the stopped turn records the Stop
    (where the store records Stops) and ends with the matching reason and source.
    """
    stops = stops_seen(obs)
    if not stops:
        return result("C12", Outcome.SKIPPED, "no Stop reached a running turn")
    found = Findings("C12")
    log = log_half(obs, found, Capability.TURN_ENDS, Capability.MONO_TIMES)
    for stop in stops:
        if stop.missed:  # the harness's signal never reached the part of the agent that streams
            found.note(stop=stop.how, missed=stop.missed)
        boxed = _settled_from_outside(obs, stop, found)
        logged = isinstance(log, SessionLog) and _settled_in_log(obs, log, stop, found)
        if not (boxed or logged or found.failed):
            found.cannot(f"how the turn stopped by {stop.how} settled was not seen: no settlement from the driver, "
                         "no exit that tells it" + (f", and {log.note}" if isinstance(log, NoLog) else ""),
                         needs_reader=wants_reader(log), stop=stop.how)
    return found.result(f"{len(stops)} Stop(s) settled as aborted/interrupted, not error")


def _expected(stop: StopDelivery) -> tuple[str, str | None]:
    return ("interrupted", None) if stop.source == "timeout" else ("aborted", stop.source)


def _settled_from_outside(obs: Observation, stop: StopDelivery, found: Findings) -> bool:
    """The driver's settlement of the stopped turn, or the exit of the stopped run: True if it
    shows the turn settled as an abort (a mismatch is recorded as a problem)."""
    reason, source = _expected(stop)
    until = next((i.mono_ns for i in obs.inputs if not i.queued and i.mono_ns > stop.mono_ns), None)
    settlement = next((s for s in obs.settlements if s.mono_ns >= stop.mono_ns and s.reason is not None
                       and (until is None or s.mono_ns < until)), None)
    if settlement is not None and settlement.reason is not None:
        item = _settlement_item(settlement)
        if transcript := DRIVERS[obs.driver].transcript:  # the prompt's stopReason, as the transcript holds it
            item["seen_in"] = transcript
        exited = _exit_behind(obs, settlement)
        if exited is not None:  # a headless run's settlement is its exit code read by the profile's convention
            item["fact"] = exit_fact(exited)
        if settlement.reason != reason or (source and settlement.source and settlement.source != source):
            wanted = f"{reason} ({source})" if source else reason
            found.fail(BOX, f"Stop ({stop.how}, source {stop.source}) should settle {wanted}, not "
                       f"{settlement.reason}" + (f" ({settlement.source})" if settlement.source else "")
                       + f" as the driver saw it ({settlement.how})", item)
            return False
        found.ok(BOX, item, stop=stop.how)
        return True
    exit_ = next((e for e in obs.exits if e.started_ns <= stop.mono_ns <= e.ended_ns), None)
    if exit_ is None:
        return False
    item = {"pid": exit_.pid, "returncode": exit_.returncode, "stop": stop.how}
    if (died := died_of_stop(exit_, stop)) is not None:
        found.ok(BOX, item, note=f"it {died}: stopped, not failed")
        return True
    if exit_.returncode is None:
        return False
    convention = dict(obs.conventions.exit_codes) or EXIT_CODE_FOR_REASON
    told = {r for r, code in convention.items() if code == exit_.returncode}
    if told and told <= STOPPED_REASONS:
        found.ok(BOX, item, note=f"exit {exit_.returncode} says {' or '.join(sorted(told))}")
        return True
    if _judged_by_c8(exit_):
        found.note(item, note=f"exit {exit_.returncode} does not say aborted; that exit code is C8's to judge")
    return False


def _exit_behind(obs: Observation, settlement: Settlement) -> ProcessExit | None:
    """The process exit a settlement was read off (the subprocess driver's ``exit N``), if any."""
    if settlement.pid is None or not settlement.how.startswith(("exit ", "signal ")):
        return None
    return next((e for e in obs.exits if e.pid == settlement.pid), None)


def _judged_by_c8(exit_: ProcessExit) -> bool:
    return exit_.expect in REASON_FOR_EXPECTATION


def _settlement_item(settlement: Settlement) -> Item:
    item: Item = {"settlement": settlement.how, "reason": settlement.reason}
    if settlement.source:
        item["source"] = settlement.source
    if settlement.pid is not None:
        item["pid"] = settlement.pid
    return item


def _settled_in_log(obs: Observation, log: SessionLog, stop: StopDelivery, found: Findings) -> bool:
    """The turn running at Stop recorded the request (where the store records Stops) and
    settled as an abort."""
    turn = turn_at(log, stop.mono_ns)
    if turn is None:
        found.fail(LOG, f"no turn had started in the log when Stop ({stop.how}) was delivered", stop_ns=stop.mono_ns)
        return False
    reason, source = _expected(stop)
    events = log.turn_events(turn)
    judged = True
    if obs.has(Capability.STOP_REQUESTS) and not any(
            e.type == "stop_requested" and e.get("source") == stop.source for e in events):
        found.fail(LOG, f"turn {turn} has no stop_requested with source {stop.source!r}", turn=turn, stop=stop.how)
        judged = False
    ends = [e for e in events if e.type == "turn_ended"]
    if not ends:
        found.fail(LOG, f"turn {turn} never settled after Stop ({stop.how})", turn=turn)
        return False
    end = ends[0]
    recorded = "source" in end.data  # a store that records no abort source is judged on the reason alone
    if end.get("reason") != reason or (source and recorded and end.get("source") != source):
        wanted = f"{reason} ({source})" if source else reason
        got = f"{end.get('reason')} ({end.get('source')})" + (f": {end.get('error')}" if end.get("error") else "")
        found.fail(LOG, f"Stop ({stop.how}, source {stop.source}) should settle {wanted}, not {got}", event_item(end))
        return False
    if judged:
        found.ok(LOG, event_item(end))
    return judged
