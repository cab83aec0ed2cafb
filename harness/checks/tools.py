"""Tool calls close and their processes die: on Stop (C3) and, advisory, when the agent
itself is killed (A2)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from harness.checks.base import check, event_item, log_or_verdict
from harness.checks.views import of_kind, turn_at, window_call
from harness.model import (
    CheckResult,
    Observation,
    SessionLog,
    StopDelivery,
    Tier,
    WindowObservation,
    failed,
    passed,
    skipped,
    unknown,
)

# A tree still alive this long after Stop was waited for (SIGTERM and a grace period), not
# killed: "a Stop that waits for the current tool to finish isn't really a Stop". The
# reference figure for the whole tree kill is 148 ms; this leaves room for a loaded host.
STOP_KILL_DEADLINE_NS = 1_000_000_000


@check("C3", "B+L")
def pending_tool_calls_close(obs: Observation) -> CheckResult:
    """Every tool call gets a result; a stopped one ``aborted: true``, its whole tree gone.

    Process table: after a Stop inside a bash window, every PID the window reported
    (including the setsid escapee and the SIGTERM-ignorer) is gone, promptly; and no window's
    process outlives its turn unless the agent itself was killed (that is A2). Log: every
    ``tool_call`` of a settled turn has a ``tool_result``, and a call running when Stop or a
    timeout was requested has ``aborted: true``. Without a log reader only processes are judged.
    """
    tool_stops = [s for s in obs.stops if s.exercised and s.phase == "tool"]
    problems: list[dict] = []
    evidence: list[dict] = []
    unobserved: list[dict] = []
    for stop in tool_stops:
        window = _window_for(obs, stop)
        if window is None:
            unobserved.append({"stop": stop.how, "window": stop.window,
                               "note": "Stop arrived during a tool, but no window observation shows its tree"})
        elif window.gone_ns is None and not window.survivors:
            unobserved.append({"stop": stop.how, "window": window.window,
                               "note": f"window {window.window}'s tree was gone by the end, but when it died "
                                       "after Stop was not observed"})
        else:
            problems.extend(_tree_problems(window, stop, evidence))
    problems.extend(_outliving_windows(obs, {p.get("window") for p in problems}))
    log = log_or_verdict(obs, "C3")
    if isinstance(log, CheckResult):
        if problems:
            return failed("C3", problems[0]["note"], *problems)
        if obs.windows and obs.log is None and not obs.log_error:
            return unknown("C3", "every tool process tree died, but without a log reader the tool results "
                           "cannot be checked", *evidence)
        return log if obs.windows or tool_stops else skipped("C3", "no tool ran")
    calls = log.of_type("tool_call")
    if not calls and not tool_stops and not obs.windows:
        return skipped("C3", "no tool ran")
    problems.extend(_unclosed_calls(log))
    moments = [(s.mono_ns, s.window, s.how) for s in tool_stops]
    moments += [(e.mono_ns, None, f"stop_requested ({e.get('source')}) at line {e.line}")
                for e in log.of_type("stop_requested") if e.mono_ns is not None]
    judged: set[str] = set()
    for at_ns, window, how in sorted(moments, key=lambda m: m[0]):
        problems.extend(_aborted_result_problems(obs, log, at_ns, window, how, judged, evidence))
    if problems:
        return failed("C3", problems[0]["note"], *problems)
    if unobserved:
        return unknown("C3", unobserved[0]["note"], *unobserved, *evidence)
    trees = sum(1 for item in evidence if "gone_after_ms" in item)
    return passed("C3", f"{len(calls)} tool call(s) closed; {len(judged)} call(s) running at a Stop reported "
                  f"aborted; {trees} stopped window tree(s) seen gone", *evidence)


def _outliving_windows(obs: Observation, reported: set) -> list[dict]:
    """Windows whose processes are still alive at the end, though the agent was never killed
    while they ran (after a kill, the orphans are A2's business)."""
    at_kills = {w.window for k in obs.kills for w in _windows_open_at(obs, k.mono_ns)}
    return [{"window": w.window, "survivors": [dict(p) for p in w.survivors],
             "note": f"{len(w.survivors)} process(es) of window {w.window} outlived the turn that started them: "
                     f"{_describe(w.survivors)}"}
            for w in obs.windows if w.survivors and w.window not in at_kills | reported]


def _window_for(obs: Observation, stop: StopDelivery) -> WindowObservation | None:
    if stop.window is not None:
        return next((w for w in obs.windows if w.window == stop.window), None)
    done = {r["window"] for r in of_kind(obs, "window_done") if r["mono_ns"] < stop.mono_ns}
    opened = [r["window"] for r in of_kind(obs, "window") if r["mono_ns"] < stop.mono_ns and r["window"] not in done]
    return next((w for w in obs.windows if opened and w.window == opened[-1]), None)


def _tree_problems(window: WindowObservation, stop: StopDelivery, evidence: list[dict]) -> list[dict]:
    """The stopped window's whole tree must be gone, and promptly."""
    pids = [p.get("pid") for p in window.pids]
    if window.survivors or window.gone_ns is None:
        return [{"window": window.window, "survivors": [dict(p) for p in window.survivors], "tree": pids,
                 "note": f"{len(window.survivors)} process(es) of window {window.window} outlived Stop: "
                         f"{_describe(window.survivors)}"}]
    delay_ns = window.gone_ns - stop.mono_ns
    if delay_ns > STOP_KILL_DEADLINE_NS:
        return [{"window": window.window, "tree": pids, "gone_after_ms": round(delay_ns / 1e6, 1),
                 "note": f"window {window.window}'s tree took {delay_ns / 1e9:.2f} s to die after Stop "
                         f"(limit {STOP_KILL_DEADLINE_NS / 1e9:.1f} s): it was waited for, not killed"}]
    evidence.append({"window": window.window, "tree": pids, "gone_after_ms": round(delay_ns / 1e6, 1)})
    return []


def _describe(processes: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(f"{p.get('pid')} ({p.get('role')})" for p in processes)


def _unclosed_calls(log: SessionLog) -> list[dict]:
    """Tool calls of turns that settled on disk but have no tool result."""
    settled = {e.turn for e in log.of_type("turn_ended")}
    results = {e.get("call_id") for e in log.of_type("tool_result")}
    return [event_item(e, note=f"tool call {e.get('call_id')} of settled turn {e.turn} has no tool_result")
            for e in log.of_type("tool_call") if e.turn in settled and e.get("call_id") not in results]


def _aborted_result_problems(obs: Observation, log: SessionLog, at_ns: int, window: str | None, how: str,
                             judged: set[str], evidence: list[dict]) -> list[dict]:
    """The calls running at a Stop (started, no result yet) must report ``aborted: true``."""
    turn = turn_at(log, at_ns)
    finished_before = {e.get("call_id") for e in log.of_type("tool_result") if (e.mono_ns or 0) < at_ns}
    running = [e for e in log.of_type("tool_call")
               if e.turn == turn and (e.mono_ns or 0) < at_ns and e.get("call_id") not in finished_before]
    window_call_id = window_call(obs, window)[1] if window else None
    if window_call_id and window_call_id not in {e.get("call_id") for e in running}:
        return [{"window": window, "call_id": window_call_id,
                 "note": f"window {window} ran call {window_call_id}, which has no tool_call in turn {turn} "
                         f"before Stop ({how})"}]
    problems = []
    for call_event in running:
        call_id = call_event.get("call_id")
        if call_id in judged:
            continue
        judged.add(call_id)
        result = next((e for e in log.of_type("tool_result") if e.get("call_id") == call_id), None)
        if result is None:
            problems.append(event_item(call_event, note=f"tool call {call_id} running at Stop ({how}) has no tool_result"))
        elif result.get("aborted") is not True:
            problems.append(event_item(result, note=f"tool call {call_id} was stopped ({how}) but its result says "
                                       f"aborted={result.get('aborted')!r}"))
        else:
            evidence.append(event_item(result))
    return problems


@check("A2", "B", tier=Tier.ADVISORY)
def tools_die_with_the_agent(obs: Observation) -> CheckResult:
    """When the agent is SIGKILLed, its tool processes die with it, or at least the restarted
    agent reaps them: an orphaned tool holding a port after a crash is a real failure."""
    problems: list[dict] = []
    evidence: list[dict] = []
    exercised = 0
    for kill in obs.kills:
        restart_ns = next((r.mono_ns for r in obs.restarts if r.mono_ns > kill.mono_ns), None)
        for window in _windows_open_at(obs, kill.mono_ns):
            exercised += 1
            pids = [p.get("pid") for p in window.pids]
            if window.survivors:
                problems.append({"window": window.window, "agent_pid": kill.pid,
                                 "survivors": [dict(p) for p in window.survivors],
                                 "note": f"{len(window.survivors)} process(es) of window {window.window} outlived "
                                         f"the killed agent {kill.pid}"
                                         + (" and its restart" if restart_ns else "")})
            else:
                when = ("by the end of the task" if window.gone_ns is None
                        else "with the agent" if restart_ns is None or window.gone_ns < restart_ns
                        else "after the restart")
                evidence.append({"window": window.window, "tree": pids, "agent_pid": kill.pid, "died": when})
    if not exercised:
        return skipped("A2", "the agent was never killed while a tool ran")
    if problems:
        return failed("A2", problems[0]["note"], *problems)
    return passed("A2", f"the tool trees of {exercised} window(s) open at a kill are gone", *evidence)


def _windows_open_at(obs: Observation, ns: int) -> list[WindowObservation]:
    done = {r["window"] for r in of_kind(obs, "window_done") if r["mono_ns"] < ns}
    opened = {r["window"] for r in of_kind(obs, "window") if r["mono_ns"] < ns} - done
    return [w for w in obs.windows if w.window in opened]
