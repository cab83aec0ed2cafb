"""C10: the store keeps its own format — the reader's format rules in the final store, its
continuation rules across each restart, nothing an earlier capture held lost later, and a store
damaged on purpose refused and left untouched. The checkpoints a SIGKILL must not lose (C11)
are ``harness.checks.checkpoints``."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from harness.checks.base import Findings, Item, captures, check, event_item, result
from harness.checks.facts import refusal_fact
from harness.checks.process import convention_problem
from harness.checks.views import clip
from harness.contract import expected_exit_code
from harness.model import Capability, CheckResult, DecidedBy, LogCapture, Observation, Outcome, Restart

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG
MAX_FORMAT_PROBLEMS = 10
AT_THE_END = "at the end"  # the moment of the final store, among the captures


@check("C10")
def log_format_holds(obs: Observation) -> CheckResult:
    """The store keeps its own format: the reader's format rules hold in the final store, and
    its continuation rules across each restart (contract-v1: a torn last line is cut and
    recorded, never appended onto). Every later capture, and the final store, keeps every
    durable record of each earlier one (the reader's ``lost`` on the snapshots: what the store
    holds as written, never a comparison of events a reader derives from the records around
    them). A store damaged mid-file on purpose is refused: the restart exits 2 naming the file
    and the place, and the store is left untouched (the reader's ``changed``). Non-strict: the
    agent's declared error code instead of 2, under a convention that tells the outcomes apart
    (as C8 takes it)."""
    verdict = _log_format(obs)
    own_code = any(i.get("non_strict") for i in verdict.evidence.items)
    return dataclasses.replace(verdict, non_strict=True) if own_code and verdict.outcome is Outcome.PASS else verdict


def _log_format(obs: Observation) -> CheckResult:
    if obs.log_format is None:
        return result("C10", Outcome.UNKNOWN, "no log reader for this agent, so the log format cannot be checked",
                      needs_reader=True)
    fmt = obs.log_format
    found = Findings("C10")
    damaged = [(n, r) for n, r in enumerate(obs.restarts, start=1) if r.damage == "mid-file"]
    for number, restart in damaged:
        _refusal(obs, number, restart, found)
    # From the first mid-file damage on, the store is damaged by the task itself: the capture
    # the damaged restart began with, and every later one, are not the agent's doing.
    first = damaged[0][1] if damaged else None
    damaged_ns = first.before.snapshot.mono_ns if first and first.before and first.before.snapshot else (
        first.mono_ns if first else None)
    kept = [c for c in captures(obs) if damaged_ns is None or (c.snapshot and c.snapshot.mono_ns < damaged_ns)]
    for capture in kept:
        if capture.version_unknown:
            found.cannot(f"the store {capture.moment} is of a version its reader does not know: {capture.error}",
                         moment=capture.moment)
        elif capture.error is not None:
            found.fail(LOG, f"the store {capture.moment} could not be read: {capture.error}", moment=capture.moment)
    final = [LogCapture(moment=AT_THE_END, snapshot=obs.log_snapshot)] if obs.log_snapshot and not damaged else []
    _nothing_lost(obs, [*kept, *final], found)
    log = obs.log
    if log is None:
        if obs.log_version_unknown:
            found.cannot(f"the final store is of a version its reader does not know: {obs.log_error}",
                         reader=obs.log_error)
        elif obs.log_error and not damaged:
            found.fail(LOG, f"the session log breaks the format: {obs.log_error}", reader=obs.log_error,
                       fact=refusal_fact(obs.log_error))
        elif not obs.log_error and not damaged:
            found.cannot(f"the agent left no session store{' at ' + obs.log_path if obs.log_path else ''}")
        return found.result(f"the {fmt.name} store keeps its format and its damage rules")
    if obs.has(Capability.FORMAT_RULES):
        problems = fmt.format_problems(log)
        for problem in problems[:MAX_FORMAT_PROBLEMS]:
            found.fail(LOG, problem.note, event_item(problem.event) if problem.event else {"line": problem.line})
        if not problems:
            found.ok(LOG, log=log.path, events=len(log.events), session_id=log.header.session_id,
                     note=f"the {fmt.name} format rules hold")
    else:
        found.cannot(f"the {fmt.name} store has no format rules its reader can check "
                     f"({Capability.FORMAT_RULES.value})", needs_reader=True)
    for number, restart in enumerate(obs.restarts, start=1):
        if restart.damage == "mid-file" or restart.before is None or restart.before.log is None:
            continue
        problems = fmt.continuation_problems(restart.before, log)
        for problem in problems:
            found.fail(LOG, problem.note, event_item(problem.event) if problem.event else {"restart": number})
        if not problems and restart.before.log.torn_tail is not None:
            found.ok(LOG, restart=number, note=f"restart {number} continued the store by its rules after a torn tail")
    return found.result(f"the {fmt.name} store keeps its format, its continuation and its damage rules")


def _nothing_lost(obs: Observation, kept: Sequence[LogCapture], found: Findings) -> None:
    """Every later capture keeps every durable record of each earlier one (the reader's ``lost``)."""
    assert obs.log_format is not None
    compared = 0
    for i, earlier in enumerate(kept):
        for later in kept[i + 1:]:
            if earlier.snapshot is None or later.snapshot is None:
                continue
            compared += 1
            change = obs.log_format.lost(earlier.snapshot, later.snapshot)
            if change is not None:
                found.fail(LOG, f"the store {later.moment} lost what it held {earlier.moment}: {change.where}: "
                           f"{change.detail}", where=change.where, line=change.line, earlier=earlier.moment,
                           later=later.moment)
                break
    if compared:
        found.ok(LOG, captures=[c.moment for c in kept], note="every later capture kept what earlier ones held")


def _refusal(obs: Observation, number: int, restart: Restart, found: Findings) -> None:
    """A restart on a store damaged mid-file must exit 2 naming file and place, writing nothing."""
    where = restart.damage_where or (f"line {restart.damage_line}" if restart.damage_line else "the middle")
    exit_ = next((e for e in obs.exits if e.started_ns >= restart.mono_ns), None)
    if exit_ is None:
        found.fail(BOX, f"the agent restarted on a log damaged at {where} and did not exit (it should refuse, exit "
                   f"{expected_exit_code('refused')})", restart=number, damage=where)
        return
    item: Item = {"pid": exit_.pid, "returncode": exit_.returncode, "stderr_tail": clip(exit_.stderr_tail[-300:], 300)}
    refused = True
    declared = obs.conventions.exit_codes
    if exit_.returncode == expected_exit_code("refused"):
        pass  # the contract's own code: a strict pass, whatever the agent also declares
    elif exit_.returncode is not None and exit_.returncode == declared.get("error") \
            and convention_problem(declared) is None:
        item["non_strict"] = f"exit {exit_.returncode}, the agent's declared code for error"
    else:
        how = (f"exited {exit_.returncode}" if exit_.returncode is not None
               else f"never exited on its own (it ran on until ended by signal {exit_.signal})")
        found.fail(BOX, f"the agent restarted on a log damaged at {where} {how}, not "
                   f"{expected_exit_code('refused')}", item)
        refused = False
    named = [str(restart.damage_line)] if restart.damage_line else [restart.damage_where] if restart.damage_where \
        else []
    if obs.log_path:
        named.append(os.path.basename(obs.log_path))
    missing = [n for n in named if n not in exit_.stderr_tail]
    if missing:
        found.fail(BOX, f"the refusal does not name {' and '.join(missing)} (the damaged file and place)", item)
        refused = False
    if refused:
        found.ok(BOX, item, note=f"refused the store damaged at {where}, naming it")
    before, after = restart.before, restart.after_load
    if before is None or before.snapshot is None or after is None or after.snapshot is None:
        found.cannot(f"restart {number}: the store after the refusal was not captured, so whether it was left "
                     "untouched is not known", restart=number)
        return
    assert obs.log_format is not None
    change = obs.log_format.changed(before.snapshot, after.snapshot)
    if change is not None:
        found.fail(LOG, f"refusing the damaged log changed the store: {change.where}: {change.detail}",
                   restart=number, where=change.where, line=change.line)
    else:
        found.ok(LOG, restart=number, note="the damaged store was left untouched")
