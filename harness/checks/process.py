"""What a stopped agent does next, seen from outside: its exit code (C8; advisory, under its
own convention, A3) and that it starts nothing new (C9)."""

from __future__ import annotations

import dataclasses
import functools
import signal
from collections.abc import Mapping

from harness.checks.base import Findings, Item, check, event_item, failure_item, result, stops_seen
from harness.checks.facts import exit_fact
from harness.checks.views import request_item, request_number, requests_between, windows_opened
from harness.contract import (
    ERROR_REASONS,
    EXIT_CODE_FOR_REASON,
    EXPECTATION_WORDS,
    REASON_FOR_EXPECTATION,
    STOPPED_REASONS,
)
from harness.model import Capability, CheckResult, DecidedBy, Observation, Outcome, ProcessExit, StopDelivery
from harness.model.drivers import DRIVERS
from harness.model.events import TurnEnded

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

    Non-strict (a pass, shown as such): another code that tells the same truth — the one the
    agent's declared convention gives that outcome, when the convention tells completed, error
    and stopped apart (0 / 1 / 130), or, after a Stop delivered as a signal, death by that
    signal (or exit 128 + its number). A lie (0 after a Stop or an error), or a convention that
    cannot tell a Stop from an error, fails.
    """
    judged = [e for e in obs.exits if e.expect in REASON_FOR_EXPECTATION]
    settle_failed = obs.failure is not None and obs.failure.kind == "settle"
    hung = obs.failure if DRIVERS[obs.driver].process_per_turn and settle_failed else None
    if not judged and hung is None:
        return result("C8", Outcome.SKIPPED, "no headless run whose exit code the task could predict")
    found = Findings("C8")
    if hung is not None:  # a run that never exits tells nothing with an exit code
        found.fail(BOX, f"a headless run never exited: {hung.what}", failure_item(hung))
    loose: list[str] = []
    for recorded in judged:
        exit_ = _as_met(obs, recorded)
        item = _exit_item(exit_)
        if exit_ is not recorded:
            item["note"] = UNMET_NOTE
        settled, where = _settled(obs, exit_)
        if where is not None:
            item["settled"] = where
        reason = _true_reason(obs, exit_, settled)
        told = _how_told(obs, exit_, reason)
        note: str | None
        if told is None:
            note = _untruth(exit_, reason, settled, obs.conventions.exit_codes)
        elif settled is not None and _how_told(obs, exit_, settled) is None:
            note = (f"the {exit_.role} process exited {exit_.returncode} but its last turn settled {settled} "
                    f"(exit {EXIT_CODE_FOR_REASON.get(settled)})")
        else:
            note = _overshoot_problem(exit_, item)
        if told and note is None:
            loose.append(told)
            item["non_strict"] = told
        if note:
            found.fail(BOX, note, item, fact=exit_fact(exit_))
        else:
            found.ok(BOX, item)
    verdict = found.result(f"{len(judged)} headless exit code(s) matched the outcome")
    if verdict.outcome is Outcome.PASS and loose:
        summary = f"{len(judged)} headless exit code(s) told the outcome, {len(loose)} non-strictly: {loose[0]}"
        return dataclasses.replace(verdict, non_strict=True, evidence=dataclasses.replace(verdict.evidence,
                                                                                          summary=summary))
    return verdict


# Said of a run judged as not stopped: the Stop or timeout the task meant for it came too late.
UNMET_NOTE = "it ended before its Stop or timeout arrived: judged as a turn that was not stopped"


def _as_met(obs: Observation, exit_: ProcessExit) -> ProcessExit:
    """The run as the task met it: one the task meant to stop (or time out with CI's
    watchdog) that exited before any Stop reached it was never stopped, so its exit is judged
    as a turn's that ran to its end — exit 0 after finishing early is no lie about a timeout
    that never came (that it ended too early is the run's agent failure). An agent's own
    ``--timeout`` is not: it is judged against T, early or late."""
    if exit_.expect not in STOPPED or exit_.timeout_s is not None:
        return exit_
    if any(stop.exercised and exit_.started_ns <= stop.mono_ns <= exit_.ended_ns for stop in obs.stops):
        return exit_
    return dataclasses.replace(exit_, expect="completed")


def _true_reason(obs: Observation, exit_: ProcessExit, settled: str | None) -> str:
    """The settlement reason the run's exit must tell: what the task did to it, or — for a run
    expected to complete — how it really ended: the model ended it (``max_tokens``), or the
    agent failed it (it refused to resume, crashed) and said so with a non-zero exit, which
    is then judged as the error it is (whether the agent should have failed is another
    check's: C7 for a refused resume)."""
    if exit_.expect == "completed" and settled in MODEL_ENDINGS:
        return settled
    failure = obs.failure
    if exit_.expect == "completed" and failure is not None and failure.exit is not None \
            and failure.exit.pid == exit_.pid and exit_.returncode != obs.conventions.exit_codes.get("completed", 0):
        return "error"
    return REASON_FOR_EXPECTATION[exit_.expect]


def convention_problem(declared: Mapping[str, int]) -> str | None:
    """Why a declared exit-code convention cannot tell completed, error and stopped apart, if
    it cannot (an undeclared class counts as not told)."""
    completed = declared.get("completed")
    errors = {declared[r] for r in ERROR_REASONS if r in declared}
    stops = {declared[r] for r in STOPPED_REASONS if r in declared}
    if completed is None or not errors or not stops:
        return "it does not declare a code for each of completed, error and stopped"
    if completed in errors | stops:
        return f"it exits {completed} both when completed and when {'stopped' if completed in stops else 'failed'}"
    if errors & stops:
        return f"it exits {sorted(errors & stops)[0]} both on an error and on a Stop"
    return None


def _how_told(obs: Observation, exit_: ProcessExit, reason: str) -> str | None:
    """How the exit tells ``reason``: ``""`` by the contract's code; a note saying how when
    it tells it non-strictly — death by the signal a Stop was delivered as, or the agent's
    declared code for it under a convention that tells the outcomes apart; None if it does not."""
    if exit_.returncode == EXIT_CODE_FOR_REASON.get(reason):
        return ""
    if reason in STOPPED_REASONS:
        for stop in obs.stops:
            if (told := died_of_stop(exit_, stop)) is not None:
                return told
    declared = obs.conventions.exit_codes
    code = declared.get(reason)
    if code is not None and exit_.returncode == code and convention_problem(declared) is None:
        return f"exit {code}, the agent's declared code for {reason}"
    return None


def died_of_stop(exit_: ProcessExit, stop: StopDelivery) -> str | None:
    """How a process says it was stopped by a Stop delivered to it as a signal, if it does: it
    died by that signal (as a program that leaves SIGINT to its default action does), or
    exited 128 + its number (as a shell reports that death)."""
    name = stop.how.partition(":")[2]
    if name not in signal.Signals.__members__ or not stop.exercised \
            or not exit_.started_ns <= stop.mono_ns <= exit_.ended_ns:
        return None
    sig = signal.Signals[name]
    if exit_.signal == sig:
        return f"died by {sig.name}, the signal its Stop was delivered as"
    if exit_.returncode == 128 + sig:
        return f"exit {exit_.returncode} (128 + {sig.name}), after a Stop delivered as that signal"
    return None


def _untruth(exit_: ProcessExit, reason: str, settled: str | None, declared: Mapping[str, int]) -> str:
    """Why this exit does not tell the truth about what the task did to the run."""
    expected = EXIT_CODE_FOR_REASON[reason]
    how = f"exit {exit_.returncode}" if exit_.returncode is not None else f"death by signal {exit_.signal}"
    words = EXPECTATION_WORDS[exit_.expect] if reason == REASON_FOR_EXPECTATION[exit_.expect] \
        else f"its turn settled {settled}" if reason == settled else "the agent failed the run"
    note = f"the {exit_.role} process (pid {exit_.pid}) should exit {expected} ({words}), not {how}"
    if exit_.returncode == declared.get("completed", 0) and reason != "completed":
        return note + ", which says it completed"
    if declared and (problem := convention_problem(declared)) is not None:
        return note + f"; its declared exit codes cannot count instead: {problem}"
    if declared and declared.get(reason) is not None:
        return note + f", nor its declared {declared[reason]}"
    return note


def _overshoot_problem(exit_: ProcessExit, item: Item) -> str | None:
    """Why a timed run's exit came too early or too late after its timeout, if it did."""
    if exit_.expect != "timeout" or exit_.timeout_s is None:
        return None
    overshoot = exit_.ended_ns - exit_.started_ns - int(exit_.timeout_s * 1e9)
    item["overshoot_ms"] = round(overshoot / 1e6, 1)
    if overshoot < 0:
        return f"exit {exit_.returncode} {-overshoot / 1e9:.2f} s before the {exit_.timeout_s} s timeout"
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
    ends = [e for e in obs.log.events_of(TurnEnded) if exit_.started_ns <= (e.mono_ns or 0) <= exit_.ended_ns]
    if not ends:
        return None, None
    return str(ends[-1].reason), event_item(ends[-1])


@check("C9")
def stop_means_stop(obs: Observation) -> CheckResult:
    """After Stop, no new model request reaches the server and no new tool process starts
    until the next user input; over ACP, nothing more is sent for the stopped turn once its
    prompt was answered (a ``session/update`` after the answer)."""
    stops = stops_seen(obs)
    if not stops:
        return result("C9", Outcome.SKIPPED, "no Stop reached a running turn")
    found = Findings("C9")
    for stop in stops:
        resume_ns = next((i.mono_ns for i in obs.inputs if not i.queued and i.mono_ns > stop.mono_ns), None)
        until = "the next user input" if resume_ns else "the end of the run"
        quiet = True
        for req in requests_between(obs, stop.mono_ns, resume_ns):
            if request_number(req) != stop.request:
                quiet = False
                found.fail(BOX, f"request {req.request} was sent {(req.mono_ns - stop.mono_ns) / 1e6:.1f} ms after "
                           f"Stop ({stop.how}), before {until}", request_item(req))
        for window in windows_opened(obs):
            if window.mono_ns > stop.mono_ns and (resume_ns is None or window.mono_ns < resume_ns):
                quiet = False
                found.fail(BOX, f"tool window {window.window} started {(window.mono_ns - stop.mono_ns) / 1e6:.1f} ms "
                           f"after Stop, before {until}", window=window.window, pids=[p.pid for p in window.pids])
        for late in [u for u in obs.updates if u.after_end and u.mono_ns > stop.mono_ns
                     and (resume_ns is None or u.mono_ns < resume_ns)]:
            quiet = False
            found.fail(BOX, f"the agent went on with the stopped turn {late.turn} after it had ended: {late.how}",
                       turn=late.turn, update=late.kind, seen_in=DRIVERS[obs.driver].transcript)
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
    judged = [e for e in map(functools.partial(_as_met, obs), obs.exits) if e.expect in STOPPED + FAILED]
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
                       f"exited {completed}, like a completed run", item, fact=exit_fact(exit_))
        elif exit_.expect in FAILED and exit_.returncode == 0:
            found.fail(BOX, f"the {exit_.role} process (pid {exit_.pid}): {EXPECTATION_WORDS[exit_.expect]}, but it "
                       "exited 0", item, fact=exit_fact(exit_))
        else:
            matches = exit_.returncode == convention.get(reason)
            found.ok(BOX, item, note=f"exit {exit_.returncode}" + (f", {whose} code for {reason}" if matches else
                                                                     f", not {whose} code for {reason} (C8's)"))
    return found.result(f"{len(judged)} stopped or failed run(s) exited unlike a completed one, under {whose} "
                        "convention")
