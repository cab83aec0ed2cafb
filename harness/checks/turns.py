"""How turns end: exactly once (C1), repaired in memory only after a crash (C2), and a
Stop the agent carried out itself is never an error (C12)."""

from __future__ import annotations

from harness.checks.base import check, event_item, log_or_verdict
from harness.checks.views import stops_seen, turn_at
from harness.contract import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN, ABORT_SOURCES, TURN_END_REASONS
from harness.model import (
    CheckResult,
    Observation,
    SessionEvent,
    SessionLog,
    StopDelivery,
    failed,
    passed,
    skipped,
)
from harness.readers.contract_v1 import LogDamaged, read_contract_v1


@check("C1", "L")
def turn_ends_exactly_once(obs: Observation) -> CheckResult:
    """Every turn ends exactly once, with a reason from the closed set.

    A turn may stay open on disk only when the agent was killed while it ran (the honest
    record of a crash); a second ``turn_ended``, a turn started while another is open in the
    same process, or a turn left open with no kill are violations.
    """
    log = log_or_verdict(obs, "C1")
    if isinstance(log, CheckResult):
        return log
    starts = log.of_type("turn_started")
    if not starts:
        return skipped("C1", "the log has no turn")
    kill_times = sorted(k.mono_ns for k in obs.kills)
    problems: list[tuple[str, SessionEvent]] = []
    open_turn: SessionEvent | None = None
    ended: dict[int, SessionEvent] = {}
    for event in log.events:
        if event.type == "turn_started":
            if open_turn is not None and not _killed_between(kill_times, open_turn, event):
                problems.append((f"turn {event.turn} started while turn {open_turn.turn} was still open "
                                 "and the agent had not been killed", open_turn))
            open_turn = event
        elif event.type == "turn_ended":
            if event.turn in ended:
                problems.append((f"turn {event.turn} ended a second time (first at line "
                                 f"{ended[event.turn].line})", event))
            elif open_turn is None or event.turn != open_turn.turn:
                problems.append((f"turn_ended for turn {event.turn}, which is not the open turn", event))
            ended.setdefault(event.turn, event)
            problems.extend((p, event) for p in _reason_problems(event))
            if open_turn is not None and event.turn == open_turn.turn:
                open_turn = None
    if open_turn is not None and not _killed_between(kill_times, open_turn, None):
        problems.append((f"turn {open_turn.turn} never ended, and the agent was not killed while it ran", open_turn))
    if problems:
        return failed("C1", problems[0][0], *(event_item(e, note=p) for p, e in problems))
    return passed("C1", f"{len(starts)} turn(s); each ended once with a valid reason, or was open when the agent "
                  f"was killed", *(event_item(e) for e in log.of_type("turn_ended")))


def _killed_between(kill_times: list[int], start: SessionEvent, next_start: SessionEvent | None) -> bool:
    begin = start.mono_ns or 0
    end = next_start.mono_ns if next_start is not None and next_start.mono_ns is not None else None
    return any(t > begin and (end is None or t < end) for t in kill_times)


def _reason_problems(event: SessionEvent) -> list[str]:
    reason = event.get("reason")
    if reason not in TURN_END_REASONS:
        return [f"turn {event.turn} ended with reason {reason!r}, not one of {sorted(TURN_END_REASONS)}"]
    if reason == "aborted" and event.get("source") not in ABORT_SOURCES:
        return [f"turn {event.turn} aborted with source {event.get('source')!r}, not one of {sorted(ABORT_SOURCES)}"]
    return []


# What a reloaded agent may write first: the record of a cut torn tail, or new user activity.
FIRST_WRITES_AFTER_LOAD = frozenset({"torn_tail_dropped", "turn_started", "inbox_queued", "inbox_canceled"})


@check("C2", "L")
def reload_repairs_in_memory_only(obs: Observation) -> CheckResult:
    """Reloading after a crash repairs the open turn in memory; the disk is not rewritten.

    Loading leaves the file byte for byte as it was; the turn open at the crash stays
    without ``turn_ended`` on disk, and no synthesized repair result
    (``TOOL_OUTCOME_UNKNOWN`` / ``TOOL_NOT_STARTED``) is ever written.
    """
    if not obs.restarts:
        return skipped("C2", "the agent was never restarted on an existing session")
    log = log_or_verdict(obs, "C2")
    if isinstance(log, CheckResult):
        return log
    problems: list[dict] = []
    checked: list[dict] = []
    for number, restart in enumerate(obs.restarts, start=1):
        if restart.bytes_before is not None and restart.bytes_after_load is not None:
            if restart.bytes_before != restart.bytes_after_load:
                problems.append(_first_difference(number, restart.bytes_before, restart.bytes_after_load))
            else:
                checked.append({"restart": number, "note": f"file unchanged by loading ({len(restart.bytes_before)} bytes)"})
        elif restart.bytes_after_load is None:
            checked.append({"restart": number, "note": "the file after loading was not observable; judged by "
                            "the final log alone"})
        first = next((e for e in log.events if (e.mono_ns or 0) > restart.mono_ns), None)
        if first is not None and first.type not in FIRST_WRITES_AFTER_LOAD:
            problems.append(event_item(first, note=f"the first event written after restart {number} is "
                                       f"{first.type}, which only a repair on load would write"))
        open_turns = _open_turns(restart.bytes_before)
        written = [e for e in log.of_type("turn_ended") if e.turn in open_turns and (e.mono_ns or 0) > restart.mono_ns]
        problems.extend(event_item(e, note=f"turn {e.turn} was open when restart {number} loaded the log; its end "
                                   "was written to disk instead of synthesized in memory") for e in written)
        if open_turns and not written:
            checked.append({"restart": number, "open_turns": sorted(open_turns),
                            "note": "the turn(s) open at the crash still have no turn_ended on disk"})
    for event in log.of_type("tool_result"):
        output = str(event.get("output", ""))
        if output.startswith((TOOL_OUTCOME_UNKNOWN, TOOL_NOT_STARTED)):
            problems.append(event_item(event, note="a crash-repair result was written to disk"))
    if problems:
        return failed("C2", "reloading wrote its repair to the log instead of keeping it in memory", *problems)
    return passed("C2", f"{len(obs.restarts)} reload(s) left the file as it was and wrote no repair", *checked)


def _open_turns(data: bytes | None) -> set[int]:
    """Turns started but not ended in a log's bytes (unreadable bytes: none known)."""
    if data is None:
        return set()
    try:
        log = read_contract_v1(data)
    except LogDamaged:
        return set()
    return {e.turn for e in log.of_type("turn_started")} - {e.turn for e in log.of_type("turn_ended")}


def _first_difference(number: int, before: bytes, after: bytes) -> dict:
    offset = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after)))
    line = before.count(b"\n", 0, offset) + 1
    return {"restart": number, "line": line, "offset": offset, "bytes_before": len(before),
            "bytes_after_load": len(after),
            "note": f"loading changed the file from line {line} (byte {offset}): "
                    f"{after[offset:offset + 80]!r}"}


@check("C12", "B+L")
def own_cancel_is_not_an_error(obs: Observation) -> CheckResult:
    """A turn the agent cancelled itself on Stop settles ``aborted`` (or ``interrupted`` on a
    timeout), never ``error`` — even when the cancelled HTTP stream surfaced as a read error.

    Log: the stopped turn has ``stop_requested`` and a ``turn_ended`` with the matching
    reason and source. Black-box: a headless process stopped this way exits 3.
    """
    stops = stops_seen(obs)
    if not stops:
        return skipped("C12", "no Stop reached a running turn")
    problems: list[dict] = []
    evidence: list[dict] = []
    for exit_ in obs.exits:
        if exit_.expect in ("stopped", "timeout") and exit_.returncode != 3:
            problems.append({"pid": exit_.pid, "returncode": exit_.returncode, "signal": exit_.signal,
                             "note": f"the {exit_.expect} run should exit 3 (aborted/interrupted)"})
    log = log_or_verdict(obs, "C12")
    if isinstance(log, CheckResult):
        if problems:
            return failed("C12", "a process that was stopped did not exit 3", *problems)
        stopped_exits = [e for e in obs.exits if e.expect in ("stopped", "timeout")]
        if stopped_exits and obs.log is None and not obs.log_error:
            return passed("C12", "every stopped run exited 3 (no log reader: the settlement itself was not read)",
                          *({"pid": e.pid, "returncode": e.returncode} for e in stopped_exits))
        return log
    for stop in stops:
        problems.extend(_stop_settlement_problems(log, stop, evidence))
    if problems:
        return failed("C12", problems[0]["note"], *problems)
    return passed("C12", f"{len(stops)} Stop(s) settled as aborted/interrupted, not error", *evidence)


def _stop_settlement_problems(log: SessionLog, stop: StopDelivery, evidence: list[dict]) -> list[dict]:
    """The turn running at Stop recorded the request and settled as an abort."""
    turn = turn_at(log, stop.mono_ns)
    if turn is None:
        return [{"stop_ns": stop.mono_ns, "note": "no turn had started when Stop was delivered"}]
    expected_reason = "interrupted" if stop.source == "timeout" else "aborted"
    requested = [e for e in log.turn_events(turn) if e.type == "stop_requested"]
    ends = [e for e in log.turn_events(turn) if e.type == "turn_ended"]
    problems: list[dict] = []
    if not any(e.get("source") == stop.source for e in requested):
        problems.append({"turn": turn, "stop": stop.how,
                         "note": f"turn {turn} has no stop_requested with source {stop.source!r}"})
    if not ends:
        return problems + [{"turn": turn, "note": f"turn {turn} never settled after Stop"}]
    end = ends[0]
    want_source = None if stop.source == "timeout" else stop.source
    if end.get("reason") != expected_reason or (want_source and end.get("source") != want_source):
        wanted = f"{expected_reason} ({want_source})" if want_source else expected_reason
        got = f"{end.get('reason')} ({end.get('source')})" + (f": {end.get('error')}" if end.get("error") else "")
        problems.append(event_item(end, note=f"Stop ({stop.how}, source {stop.source}) should settle {wanted}, "
                                   f"not {got}"))
    else:
        evidence.append(event_item(end))
    return problems

