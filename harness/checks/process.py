"""What a stopped agent does next, seen from outside: its exit code (C8; advisory, under its
own convention, A3) and that it starts nothing new (C9)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.checks.base import Findings, Item, check, event_item, failure_item, result, stops_seen
from harness.checks.views import request_item, requests_between, windows_opened
from harness.contract import (
    EXIT_CODE_FOR_REASON,
    EXPECTATION_WORDS,
    REASON_FOR_EXPECTATION,
    expected_exit_code,
)
from harness.model import Capability, CheckResult, DecidedBy, Observation, Outcome, ProcessExit

BOX = DecidedBy.BLACK_BOX
# `run --timeout T` must exit "shortly after T". Measured from spawn, so start-up counts; the
# reference agent overshoots by well under 0.1 s, while waiting out a SIGTERM grace costs seconds.
TIMEOUT_OVERSHOOT_LIMIT_NS = 1_500_000_000
# A turn the task expected to complete may also end because the model stopped it: that is
# the truth too, and its exit code is the one for how it settled.
MODEL_ENDINGS = frozenset({"completed", "max_tokens"})


@check("C8")
def exit_codes_tell_the_truth(obs: Observation) -> CheckResult:
    """Headless exit codes are the contract's: 0 completed, 2 error/blocked/max_tokens, 3
    aborted/interrupted; ``run --timeout T`` exits 3 shortly after T. Where the run's
    settlement is known (the driver's, or the log's last turn end in the process's lifetime),
    the code also matches it — a run expected to complete that settled ``max_tokens`` exits 2.
    """
    judged = [e for e in obs.exits if e.expect in REASON_FOR_EXPECTATION]
    hung = obs.failure if obs.driver == "subprocess" and obs.failure and obs.failure.kind == "settle" else None
    if not judged and hung is None:
        return result("C8", Outcome.SKIPPED, "no headless run whose exit code the task could predict")
    found = Findings("C8")
    if hung is not None:  # a run that never exits tells nothing with an exit code
        found.fail(BOX, f"a headless run never exited: {hung.what}", failure_item(hung))
    for exit_ in judged:
        item = _exit_item(exit_)
        settled, where = _settled(obs, exit_)
        if where is not None:
            item["settled"] = where
        note = _exit_problem(exit_, settled, item)
        if note is None and settled is not None and EXIT_CODE_FOR_REASON.get(settled) != exit_.returncode:
            note = (f"the {exit_.role} process exited {exit_.returncode} but its last turn settled {settled} "
                    f"(exit {EXIT_CODE_FOR_REASON.get(settled)})")
        if note:
            found.fail(BOX, note, item)
        else:
            found.ok(BOX, item)
    return found.result(f"{len(judged)} headless exit code(s) matched the outcome")


def _expected_code(exit_: ProcessExit, settled: str | None) -> int:
    if exit_.expect == "completed" and settled in MODEL_ENDINGS:
        return EXIT_CODE_FOR_REASON[settled]
    return expected_exit_code(exit_.expect)


def _exit_problem(exit_: ProcessExit, settled: str | None, item: Item) -> str | None:
    """Why this exit does not tell the truth about what the task did to the run, if it does not."""
    expected = _expected_code(exit_, settled)
    if exit_.returncode != expected:
        how = f"exit {exit_.returncode}" if exit_.returncode is not None else f"death by signal {exit_.signal}"
        words = EXPECTATION_WORDS[exit_.expect] if expected == expected_exit_code(exit_.expect) \
            else f"its turn settled {settled}"
        return f"the {exit_.role} process (pid {exit_.pid}) should exit {expected} ({words}), not {how}"
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


def _exit_item(exit_: ProcessExit) -> Item:
    item: Item = {"pid": exit_.pid, "role": exit_.role, "expect": exit_.expect, "returncode": exit_.returncode}
    if exit_.signal is not None:
        item["signal"] = exit_.signal
    if exit_.stderr_tail:
        item["stderr_tail"] = exit_.stderr_tail[-200:]
    return item


def _settled(obs: Observation, exit_: ProcessExit) -> tuple[str | None, Item | str | None]:
    """How the process's last turn settled, where that is known: the driver's settlement for
    that process, else the log's last turn end in its lifetime."""
    settlements = [s for s in obs.settlements if s.reason is not None
                   and (s.pid == exit_.pid or (s.pid is None and exit_.started_ns <= s.mono_ns <= exit_.ended_ns))]
    if settlements:
        return settlements[-1].reason, settlements[-1].how
    if obs.log is None or not (obs.has(Capability.TURN_ENDS) and obs.has(Capability.MONO_TIMES)):
        return None, None
    ends = [e for e in obs.log.of_type("turn_ended") if exit_.started_ns <= (e.mono_ns or 0) <= exit_.ended_ns]
    if not ends:
        return None, None
    return str(ends[-1].get("reason")), event_item(ends[-1])


@check("C9")
def stop_means_stop(obs: Observation) -> CheckResult:
    """After Stop, no new model request reaches the server and no new tool process starts
    until the next user input."""
    stops = stops_seen(obs)
    if not stops:
        return result("C9", Outcome.SKIPPED, "no Stop reached a running turn")
    found = Findings("C9")
    for stop in stops:
        resume_ns = next((i.mono_ns for i in obs.inputs if not i.queued and i.mono_ns > stop.mono_ns), None)
        until = "the next user input" if resume_ns else "the end of the run"
        quiet = True
        for req in requests_between(obs, stop.mono_ns, resume_ns):
            if req.number != stop.request:
                quiet = False
                found.fail(BOX, f"request {req.number} was sent {(req.mono_ns - stop.mono_ns) / 1e6:.1f} ms after "
                           f"Stop ({stop.how}), before {until}", request_item(req))
        for window in windows_opened(obs):
            if window.mono_ns > stop.mono_ns and (resume_ns is None or window.mono_ns < resume_ns):
                quiet = False
                found.fail(BOX, f"tool window {window.window} started {(window.mono_ns - stop.mono_ns) / 1e6:.1f} ms "
                           f"after Stop, before {until}", window=window.window, pids=list(window.pids))
        if quiet:
            found.ok(BOX, stop=stop.how, phase=stop.phase, quiet_until=until)
    return found.result(f"nothing new started after {len(stops)} Stop(s)")


# Expectations whose run must not exit like a completed one, and those that must not exit 0.
STOPPED = ("stopped", "timeout")
FAILED = ("error", "refused", "blocked")


@check("A3")
def exit_codes_tell_outcomes_apart(obs: Observation) -> CheckResult:
    """Under the agent's own declared exit-code convention (the contract's when it declares
    none), a stopped or timed-out run never exits like a completed one, and a failed run never
    exits 0. C8 judges the contract's codes; this tells an agent that lies (exit 0 after Stop)
    from one that keeps another convention (130 after Stop)."""
    declared: Mapping[str, int] = obs.conventions.exit_codes
    convention = dict(declared) or EXIT_CODE_FOR_REASON
    judged = [e for e in obs.exits if e.expect in STOPPED + FAILED]
    if not any(e.expect in STOPPED for e in judged) and not declared:
        return result("A3", Outcome.SKIPPED, "no stopped run, and the profile declares no exit-code convention")
    if not judged:
        return result("A3", Outcome.SKIPPED, "no stopped, timed-out or failed headless run")
    found = Findings("A3")
    completed = convention.get("completed", 0)
    whose = "the agent's declared" if declared else "the contract's"
    for exit_ in judged:
        item = _exit_item(exit_)
        reason = REASON_FOR_EXPECTATION[exit_.expect]
        item["convention"] = {reason: convention.get(reason), "completed": completed}
        if exit_.expect in STOPPED and convention.get(reason) == completed:
            found.fail(BOX, f"{whose} convention exits {reason} like completed ({completed}), so a stopped run "
                       "cannot be told from a completed one", item)
        elif exit_.expect in STOPPED and exit_.returncode == completed:
            found.fail(BOX, f"the {exit_.role} process (pid {exit_.pid}) {EXPECTATION_WORDS[exit_.expect]}, but "
                       f"exited {completed}, like a completed run", item)
        elif exit_.expect in FAILED and exit_.returncode == 0:
            found.fail(BOX, f"the {exit_.role} process (pid {exit_.pid}): {EXPECTATION_WORDS[exit_.expect]}, but it "
                       "exited 0", item)
        else:
            matches = exit_.returncode == convention.get(reason)
            found.ok(BOX, item, note=f"exit {exit_.returncode}" + (f", {whose} code for {reason}" if matches else
                                                                     f", not {whose} code for {reason} (C8's)"))
    return found.result(f"{len(judged)} stopped or failed run(s) exited unlike a completed one, under {whose} "
                        "convention")
