"""What a stopped agent does next, seen from outside: its exit code (C8) and that it starts
nothing new (C9)."""

from __future__ import annotations

from harness.checks.base import check, event_item, request_item
from harness.checks.views import of_kind, requests_between, stops_seen
from harness.model import CheckResult, Observation, ProcessExit, SessionLog, failed, passed, skipped

EXPECTED_EXIT = {"completed": 0, "stopped": 3, "timeout": 3, "refused": 2, "error": 2, "blocked": 2}
# What the task did to the run, in words, for the evidence.
EXPECTATION = {"completed": "its turn was expected to complete", "stopped": "it was stopped",
               "timeout": "it timed out", "refused": "its log was damaged mid-file",
               "error": "its turn was expected to fail", "blocked": "its turn was expected to be blocked"}
EXIT_FOR_REASON = {"completed": 0, "error": 2, "blocked": 2, "aborted": 3, "interrupted": 3}
# `run --timeout T` must exit "shortly after T". Measured from spawn, so start-up counts; the
# reference agent overshoots by well under 0.1 s, while waiting out a SIGTERM grace costs seconds.
TIMEOUT_OVERSHOOT_LIMIT_NS = 1_500_000_000


@check("C8", "B")
def exit_codes_tell_the_truth(obs: Observation) -> CheckResult:
    """Headless exit codes: 0 completed, 2 error/blocked, 3 aborted/interrupted; ``run
    --timeout T`` exits 3 shortly after T. When the log is readable, the code also matches
    how the process's last turn settled."""
    judged = [e for e in obs.exits if e.expect in EXPECTED_EXIT]
    if not judged:
        return skipped("C8", "no headless run whose exit code the task could predict")
    problems: list[dict] = []
    evidence: list[dict] = []
    for exit_ in judged:
        item = _exit_item(exit_)
        note = _exit_problem(exit_, item)
        if note is None and obs.log is not None:
            note = _settlement_mismatch(obs.log, exit_, item)
        (problems if note else evidence).append({**item, "note": note} if note else item)
    if problems:
        return failed("C8", problems[0]["note"], *problems)
    return passed("C8", f"{len(judged)} headless exit code(s) matched the outcome", *evidence)


def _exit_problem(exit_: ProcessExit, item: dict) -> str | None:
    """Why this exit does not tell the truth about what the task did to the run, if it does not."""
    expected = EXPECTED_EXIT[exit_.expect]
    if exit_.returncode != expected:
        how = f"exit {exit_.returncode}" if exit_.returncode is not None else f"death by signal {exit_.signal}"
        return (f"the {exit_.role} process (pid {exit_.pid}) should exit {expected} ({EXPECTATION[exit_.expect]}), "
                f"not {how}")
    if exit_.expect != "timeout" or exit_.timeout_s is None:
        return None
    overshoot = exit_.ended_ns - exit_.started_ns - int(exit_.timeout_s * 1e9)
    item["overshoot_ms"] = round(overshoot / 1e6, 1)
    if overshoot < 0:
        return f"exit 3 {-overshoot / 1e9:.2f} s before the {exit_.timeout_s} s timeout"
    if overshoot > TIMEOUT_OVERSHOOT_LIMIT_NS:
        return (f"exit {overshoot / 1e9:.2f} s after the {exit_.timeout_s} s timeout "
                f"(limit {TIMEOUT_OVERSHOOT_LIMIT_NS / 1e9:.1f} s)")
    return None


def _exit_item(exit_: ProcessExit) -> dict:
    item = {"pid": exit_.pid, "role": exit_.role, "expect": exit_.expect, "returncode": exit_.returncode}
    if exit_.signal is not None:
        item["signal"] = exit_.signal
    if exit_.stderr_tail:
        item["stderr_tail"] = exit_.stderr_tail[-200:]
    return item


def _settlement_mismatch(log: SessionLog, exit_: ProcessExit, item: dict) -> str | None:
    ends = [e for e in log.of_type("turn_ended") if exit_.started_ns <= (e.mono_ns or 0) <= exit_.ended_ns]
    if not ends:
        return None
    reason = ends[-1].get("reason")
    item["settled"] = event_item(ends[-1])
    if EXIT_FOR_REASON.get(reason) != exit_.returncode:
        return (f"the {exit_.role} process exited {exit_.returncode} but its last turn settled {reason} "
                f"(exit {EXIT_FOR_REASON.get(reason)})")
    return None


@check("C9", "B")
def stop_means_stop(obs: Observation) -> CheckResult:
    """After Stop, no new model request reaches the server and no new tool process starts
    until the next user input."""
    stops = stops_seen(obs)
    if not stops:
        return skipped("C9", "no Stop reached a running turn")
    problems: list[dict] = []
    evidence: list[dict] = []
    for stop in stops:
        resume_ns = next((i.mono_ns for i in obs.inputs if not i.queued and i.mono_ns > stop.mono_ns), None)
        until = "the next user input" if resume_ns else "the end of the run"
        for request in requests_between(obs, stop.mono_ns, resume_ns):
            if request.get("request") != stop.request:
                problems.append(request_item(request, note=f"request {request['request']} was sent "
                                             f"{(request['mono_ns'] - stop.mono_ns) / 1e6:.1f} ms after Stop "
                                             f"({stop.how}), before {until}"))
        for window in of_kind(obs, "window"):
            if window["mono_ns"] > stop.mono_ns and (resume_ns is None or window["mono_ns"] < resume_ns):
                problems.append({"window": window["window"], "pids": [p.get("pid") for p in window.get("pids", [])],
                                 "note": f"tool window {window['window']} started "
                                         f"{(window['mono_ns'] - stop.mono_ns) / 1e6:.1f} ms after Stop, before {until}"})
        evidence.append({"stop": stop.how, "phase": stop.phase, "quiet_until": until})
    if problems:
        return failed("C9", problems[0]["note"], *problems)
    return passed("C9", f"nothing new started after {len(stops)} Stop(s)", *evidence)
