"""Tool calls close and their processes die: on Stop (C3) and, advisory, when the agent
itself is killed (A2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.checks.base import Findings, Item, NoLog, check, event_item, log_half, result, turn_at, wants_reader
from harness.checks.views import (
    first_request_after,
    parsed,
    request_item,
    sent_messages,
    tool_answer,
    window_call,
    windows_open_at,
    windows_opened,
)
from harness.model import (
    Capability,
    CheckResult,
    DecidedBy,
    Observation,
    Outcome,
    SessionLog,
    StopDelivery,
    WindowObservation,
)
from harness.model.drivers import DRIVERS
from harness.model.events import StopRequested, ToolCall, ToolResult, TurnEnded

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG

# A tree still alive this long after Stop was waited for (SIGTERM and a grace period), not
# killed: "a Stop that waits for the current tool to finish isn't really a Stop". The
# reference figure for the whole tree kill is 148 ms; this leaves room for a loaded host.
STOP_KILL_DEADLINE_NS = 1_000_000_000


@check("C3")
def pending_tool_calls_close(obs: Observation) -> CheckResult:
    """Every tool call gets a result; a stopped one ``aborted: true``, its whole tree gone.

    Black-box: after a Stop inside a bash window, every PID the window reported (including the
    setsid escapee and the SIGTERM-ignorer) is gone, promptly, and the next model request
    carries a result for the stopped call; no window's process outlives its turn unless the
    agent itself was killed (that is A2); over ACP, a call running at Stop is reported
    ``failed``, never ``completed``. Log: every call of a settled turn has a result, and
    a call running when Stop or a timeout was requested has ``aborted: true``. A Stop whose
    window never opened proves nothing about trees, and is never a pass.
    """
    tool_stops = [s for s in obs.stops if s.exercised and s.phase == "tool"]
    found = Findings("C3")
    log = log_half(obs, found, Capability.TOOL_STARTS, Capability.TOOL_ABORTS, Capability.MONO_TIMES)
    opened = windows_opened(obs)
    for problem in _outliving_windows(obs, {s.window for s in tool_stops if s.window}):
        found.fail(BOX, problem.pop("note"), problem)
    for stop in tool_stops:
        _judge_stop(obs, stop, log, found)
    if isinstance(log, SessionLog):
        _unclosed_calls(log, found)
        _timeouts(obs, log, tool_stops, found)
    if not opened and not found.failed:
        if tool_stops:
            return result("C3", Outcome.UNKNOWN, "Stop arrived during a tool, but no bash window opened, so no tool's "
                          "process tree was observed", found.undecided + found.evidence)
        return result("C3", Outcome.SKIPPED, "no tool ran in a bash window", found.evidence)
    trees = sum(1 for item in found.evidence if "gone_after_ms" in item)
    aborted = sum(1 for item in found.evidence if "aborted_call" in item)
    sent = sum(1 for item in found.evidence if "carries the result" in str(item.get("note", "")))
    return found.result(f"{len(tool_stops)} Stop(s) in a tool: {trees} stopped window tree(s) seen gone, {sent} "
                        f"stopped call(s) answered in the next request, {aborted} call(s) running at a Stop "
                        "reported aborted in the log",
                        nothing="no tool was stopped, and no log shows how the tools that ran closed")


def _judge_stop(obs: Observation, stop: StopDelivery, log: SessionLog | NoLog, found: Findings) -> None:
    """One Stop inside a tool: the window's tree is gone, promptly; the stopped call has a
    result — in the next request (black-box) or ``aborted: true`` in the log."""
    window = _stopped_window(obs, stop)
    if window is None:
        found.cannot(f"Stop ({stop.how}) arrived during a tool, but no window observation shows its tree",
                     stop=stop.how, window=stop.window)
        return
    if window.gone_ns is None and not window.survivors:
        found.cannot(f"window {window.window}'s tree was gone by the end, but when it died after Stop was not "
                     "observed", window=window.window)
    else:
        _tree(window, stop, found)
    _, call_id = window_call(obs, window.window)
    logged = isinstance(log, SessionLog) and _aborted_results(obs, log, _acted_at(log, stop), window.window,
                                                              stop.how, found)
    boxed = _result_sent(obs, stop, window.window, call_id, found)
    _reported_stopped(obs, stop, found)
    if not (logged or boxed or found.failed):
        why = "no model request followed the Stop" if first_request_after(obs, stop.mono_ns) is None \
            else f"which call ran in window {window.window} is not known"
        found.cannot(f"whether the stopped call got a result is not known: {why}"
                     + (f", and {log.note}" if isinstance(log, NoLog) else ""),
                     needs_reader=wants_reader(log), window=window.window)


def _acted_at(log: SessionLog, stop: StopDelivery) -> int:
    """The moment the log half judges a Stop at: which calls were still running then.

    A Stop the harness delivered happened when it was delivered. The agent's own ``--timeout``
    the harness only knows fell due at start + T by its clock, read just before the spawn; the
    agent counts T from its own start (the kernel's, in clock ticks) and may act a few
    milliseconds either side of that, so the calls it stopped may have their results before the
    harness's moment. Its ``stop_requested`` with source ``timeout`` says when it acted.
    """
    if stop.by != "agent-timeout":
        return stop.mono_ns
    turn = turn_at(log, stop.mono_ns)
    acted = [e.mono_ns for e in log.events_of(StopRequested)
             if e.source == "timeout" and e.turn == turn and e.mono_ns is not None]
    return acted[0] if acted else stop.mono_ns


def _stopped_window(obs: Observation, stop: StopDelivery) -> WindowObservation | None:
    if stop.window is not None:
        return next((w for w in obs.windows if w.window == stop.window), None)
    open_now = windows_open_at(obs, stop.mono_ns)
    return next((w for w in obs.windows if open_now and w.window == open_now[-1]), None)


def _tree(window: WindowObservation, stop: StopDelivery, found: Findings) -> None:
    """The stopped window's whole tree must be gone, and promptly."""
    pids = [p.get("pid") for p in window.pids]
    if window.survivors or window.gone_ns is None:
        found.fail(BOX, f"{len(window.survivors)} process(es) of window {window.window} outlived Stop: "
                   f"{_describe(window.survivors)}", window=window.window,
                   survivors=[dict(p) for p in window.survivors], tree=pids)
        return
    delay_ns = window.gone_ns - stop.mono_ns
    if delay_ns > STOP_KILL_DEADLINE_NS:
        found.fail(BOX, f"window {window.window}'s tree took {delay_ns / 1e9:.2f} s to die after Stop (limit "
                   f"{STOP_KILL_DEADLINE_NS / 1e9:.1f} s): it was waited for, not killed",
                   window=window.window, tree=pids, gone_after_ms=round(delay_ns / 1e6, 1))
        return
    found.ok(BOX, window=window.window, tree=pids, gone_after_ms=round(delay_ns / 1e6, 1))


def _result_sent(obs: Observation, stop: StopDelivery, window: str, call_id: str | None, found: Findings) -> bool:
    """The next model request after Stop carries a tool result for the stopped call."""
    req = first_request_after(obs, stop.mono_ns)
    if req is None or call_id is None or not parsed(req):
        return False
    _, answer = tool_answer(sent_messages(req), call_id)
    if answer is None:
        found.fail(BOX, f"request {req.request}, the first after Stop ({stop.how}), carries no result for call "
                   f"{call_id}, which ran in window {window}", request_item(req), call_id=call_id)
        return False
    found.ok(BOX, request_item(req, note=f"carries the result of the stopped call {call_id}"), window=window)
    return True


def _reported_stopped(obs: Observation, stop: StopDelivery, found: Findings) -> None:
    """Over ACP: each tool call still pending or in progress at Stop is reported ``failed``
    afterwards (the protocol's word for a call that did not complete), never ``completed``."""
    before = [u for u in obs.updates if u.kind == "tool_call" and u.mono_ns < stop.mono_ns]
    running = {u.call_id: u.turn for u in before if u.status in ("pending", "in_progress")}
    running = {c: t for c, t in running.items()
               if not any(u.call_id == c and u.status in ("completed", "failed") for u in before)}
    for call_id, turn in running.items():
        after = [u for u in obs.updates if u.kind == "tool_call" and u.call_id == call_id and u.mono_ns >= stop.mono_ns]
        item = {"call_id": call_id, "turn": turn, "statuses": [u.status for u in after],
                "seen_in": DRIVERS[obs.driver].transcript}
        if any(u.status == "completed" for u in after):
            found.fail(BOX, f"tool call {call_id}, running at Stop ({stop.how}), was reported completed", item)
        elif after and after[-1].status == "failed":
            found.ok(BOX, item, note=f"tool call {call_id}, running at Stop, was reported failed")
        else:
            found.note(item, note=f"tool call {call_id}, running at Stop, was never reported ended")


def _outliving_windows(obs: Observation, stopped: set[str]) -> list[Item]:
    """Windows whose processes are still alive at the end, though the agent was never killed
    while they ran (after a kill, the orphans are A2's business; a stopped window's, the Stop's)."""
    at_kills = {w for k in obs.kills for w in windows_open_at(obs, k.mono_ns)}
    return [{"window": w.window, "survivors": [dict(p) for p in w.survivors],
             "note": f"{len(w.survivors)} process(es) of window {w.window} outlived the turn that started them: "
                     f"{_describe(w.survivors)}"}
            for w in obs.windows if w.survivors and w.window not in at_kills | stopped]


def _describe(processes: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(f"{p.get('pid')} ({p.get('role')})" for p in processes)


def _unclosed_calls(log: SessionLog, found: Findings) -> None:
    """Tool calls of turns that settled in the store but have no tool result."""
    settled = {e.turn for e in log.events_of(TurnEnded)}
    results = {e.call_id for e in log.events_of(ToolResult)}
    calls = log.events_of(ToolCall)
    for event in calls:
        if event.turn in settled and event.call_id not in results:
            found.fail(LOG, f"tool call {event.get('call_id')} of settled turn {event.turn} has no tool_result",
                       event_item(event))
    closed = [e for e in calls if e.call_id in results]
    if closed:
        found.ok(LOG, calls_closed=len(closed), note=f"{len(closed)} tool call(s) in the log have a result")


def _timeouts(obs: Observation, log: SessionLog, tool_stops: list[StopDelivery], found: Findings) -> None:
    """Stops the harness did not deliver in a tool (the agent's own timeout, a Stop that found a
    tool running): the calls running then report ``aborted: true``."""
    if not obs.has(Capability.STOP_REQUESTS):
        return
    delivered = {turn_at(log, s.mono_ns) for s in tool_stops}
    for event in log.events_of(StopRequested):
        if event.mono_ns is None or event.turn in delivered:
            continue
        _aborted_results(obs, log, event.mono_ns, None, f"stop_requested ({event.get('source')}) at line {event.line}",
                         found)


def _aborted_results(obs: Observation, log: SessionLog, at_ns: int, window: str | None, how: str,
                     found: Findings) -> bool:
    """The calls running at a Stop (started, no result yet) report ``aborted: true``; True when
    at least one was judged and every one was."""
    turn = turn_at(log, at_ns)
    finished_before = {e.call_id for e in log.events_of(ToolResult) if (e.mono_ns or 0) < at_ns}
    running = [e for e in log.events_of(ToolCall)
               if e.turn == turn and (e.mono_ns or 0) < at_ns and e.call_id not in finished_before]
    window_call_id = window_call(obs, window)[1] if window else None
    if window_call_id and window_call_id not in {e.call_id for e in running}:
        found.fail(LOG, f"window {window} ran call {window_call_id}, which has no tool_call in turn {turn} before "
                   f"Stop ({how})", window=window, call_id=window_call_id)
        return False
    ok = bool(running)
    for call_event in running:
        call_id = call_event.call_id
        judged = [e for e in found.evidence if e.get("aborted_call") == call_id]
        if judged:
            continue
        end = next((e for e in log.events_of(ToolResult) if e.call_id == call_id), None)
        if end is None:
            found.fail(LOG, f"tool call {call_id} running at Stop ({how}) has no tool_result", event_item(call_event))
            ok = False
        elif end.aborted is not True:
            found.fail(LOG, f"tool call {call_id} was stopped ({how}) but its result says "
                       f"aborted={end.get('aborted')!r}", event_item(end))
            ok = False
        else:
            found.ok(LOG, event_item(end), aborted_call=call_id)
    return ok


@check("A2")
def tools_die_with_the_agent(obs: Observation) -> CheckResult:
    """When the agent is SIGKILLed, its tool processes die with it, or at least the restarted
    agent reaps them: an orphaned tool holding a port after a crash is a real failure."""
    found = Findings("A2")
    exercised = 0
    for kill in obs.kills:
        restart_ns = next((r.mono_ns for r in obs.restarts if r.mono_ns > kill.mono_ns), None)
        open_now = set(windows_open_at(obs, kill.mono_ns))
        for window in (w for w in obs.windows if w.window in open_now
                       and (w.gone_ns is None or w.gone_ns > kill.mono_ns)):  # not one already gone
            exercised += 1
            pids = [p.get("pid") for p in window.pids]
            if window.survivors:
                found.fail(BOX, f"{len(window.survivors)} process(es) of window {window.window} outlived the killed "
                           f"agent {kill.pid}" + (" and its restart" if restart_ns else ""),
                           window=window.window, agent_pid=kill.pid, survivors=[dict(p) for p in window.survivors])
            else:
                when = ("by the end of the task" if window.gone_ns is None
                        else "with the agent" if restart_ns is None or window.gone_ns < restart_ns
                        else "after the restart")
                found.ok(BOX, window=window.window, tree=pids, agent_pid=kill.pid, died=when)
    return found.result(f"the tool trees of {exercised} window(s) open at a kill are gone",
                        nothing="the agent was never killed while a tool ran")
