"""The checker registry, the safe wrapper, and what every checker shares: the log (or why
there is none), the findings of a check's two halves, and evidence items.

A checker is a plain function ``Observation -> CheckResult`` registered with ``@check("C4")``:
its name, what it observes (``B`` black-box, ``L`` log, ``B+L``) and its default tier come
from the contract's one table (``harness.contract.CHECKS``), and the function must carry the
name the table gives. The wrapper is the only caller: it stamps the checker's name and the
task's tier on the result and turns a crash into ``unknown`` — a checker that fails to decide
must never read as a pass.

No checker reads an agent's store itself. The log half of a check works on parsed logs
(``obs.log`` and the captures of kills and restarts) and asks the profile's reader
(``obs.log_format``) to compare snapshots and to apply the format's own rules. With no reader
a log half answers ``unknown`` with ``needs_reader``; so does a store that does not record
what the check needs (``obs.has(Capability.X)``), naming the capability.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.checks.facts import exit_fact, link_consequences, refusal_fact
from harness.checks.views import clip, record_item
from harness.contract import Observes, check_info, check_order
from harness.model import (
    AgentFailure,
    Capability,
    CheckResult,
    DecidedBy,
    Evidence,
    LogCapture,
    Observation,
    Outcome,
    SessionEvent,
    SessionLog,
    StopDelivery,
    Tier,
    unknown,
)
from harness.model.events import StopRequested, TurnStarted
from harness.model.tracebacks import frame_lines

Checker = Callable[[Observation], CheckResult]
Item = dict[str, Any]


@dataclass(frozen=True)
class CheckSpec:
    id: str  # "C1" … "C14", "A1" …
    name: str  # the function's name: the invariant, in words
    observes: Observes
    tier: Tier  # default tier; a task may set another
    fn: Checker


class Registry(Mapping[str, CheckSpec]):
    """Registered checkers by contract ID, always iterated in the contract's order."""

    def __init__(self) -> None:
        self._specs: dict[str, CheckSpec] = {}

    def add(self, spec: CheckSpec) -> None:
        if spec.id in self._specs:
            raise ValueError(f"check {spec.id} registered twice ({self._specs[spec.id].name}, {spec.name})")
        self._specs[spec.id] = spec

    def __getitem__(self, key: str) -> CheckSpec:
        return self._specs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._specs, key=check_order))

    def __len__(self) -> int:
        return len(self._specs)


REGISTRY = Registry()


def check(check_id: str) -> Callable[[Checker], Checker]:
    """Register a checker under its contract ID, as the contract's table describes it."""
    info = check_info(check_id)

    def register(fn: Checker) -> Checker:
        if fn.__name__ != info.name:
            raise ValueError(f"the checker for {check_id} must be named {info.name}, not {fn.__name__}")
        tier = Tier.ADVISORY if info.advisory else Tier.MANDATORY
        REGISTRY.add(CheckSpec(check_id, info.name, info.observes, tier, fn))
        return fn

    return register


def get_check(key: str) -> CheckSpec:
    """A checker by contract ID (``"C3"``) or by name (``"pending_tool_calls_close"``)."""
    if key in REGISTRY:
        return REGISTRY[key]
    for spec in REGISTRY.values():
        if spec.name == key:
            return spec
    raise KeyError(f"unknown check {key!r} (known: {', '.join(REGISTRY)})")


# A check that observes one way is decided that way; a B+L checker says which half decided.
_DEFAULT_DECIDER = {Observes.BLACK_BOX: DecidedBy.BLACK_BOX, Observes.LOG: DecidedBy.LOG}


def run_check(key: str | CheckSpec, obs: Observation, tier: Tier | None = None) -> CheckResult:
    """Run one checker safely: its result, stamped with name and tier; ``unknown`` if it raised."""
    spec = key if isinstance(key, CheckSpec) else get_check(key)
    try:
        result = spec.fn(obs)
        if not isinstance(result, CheckResult):
            raise TypeError(f"returned {type(result).__name__}, not a CheckResult")
    except Exception as err:  # a crashing checker decides nothing
        result = unknown(spec.id, f"checker {spec.name} raised {type(err).__name__}: {err}",
                         {"traceback": frame_lines(err, source=True)})
    decided = result.decided_by
    if decided is None and result.outcome in (Outcome.PASS, Outcome.FAIL):
        decided = _DEFAULT_DECIDER.get(spec.observes)
    return dataclasses.replace(result, check=spec.id, name=spec.name, tier=tier or spec.tier, decided_by=decided)


def run_checks(obs: Observation, selection: Mapping[str, Tier] | None = None) -> tuple[CheckResult, ...]:
    """Run the selected checks (ID or name → tier), or every registered one at its default tier;
    a failure that rests only on facts an earlier check failed on is marked its consequence."""
    if selection is None:
        return link_consequences([run_check(spec, obs) for spec in REGISTRY.values()])
    return link_consequences([run_check(key, obs, tier) for key, tier in selection.items()])


# --- results ----------------------------------------------------------------------------


def result(check_id: str, outcome: Outcome, summary: str, items: list[Item] | tuple[Item, ...] = (), *,
           decided_by: DecidedBy | None = None, needs_reader: bool = False) -> CheckResult:
    return CheckResult(check_id, outcome, Evidence(summary, tuple(items)), decided_by=decided_by,
                       needs_reader=needs_reader)


class Findings:
    """What a check found, half by half: problems (a fail), parts it could not decide (and
    whether only for want of a reader), and evidence of each part that held.

    ``result`` turns them into the verdict: any problem fails; else any undecided part makes
    it ``unknown``; else it passes — on the evidence of each thing it claims, never on none
    (with no evidence at all it is ``skipped`` with the reason the checker gives).
    """

    def __init__(self, check_id: str):
        self.check_id = check_id
        self.problems: list[Item] = []
        self.evidence: list[Item] = []
        self.undecided: list[Item] = []
        self._failed: set[DecidedBy] = set()
        self._judged: set[DecidedBy] = set()
        self._for_want_of_reader: list[bool] = []

    def fail(self, half: DecidedBy, note: str, item: Mapping[str, Any] | None = None, **fields: Any) -> None:
        self.problems.append({**(item or {}), **fields, "note": note})
        self._failed.add(half)

    def ok(self, half: DecidedBy, item: Mapping[str, Any] | None = None, **fields: Any) -> None:
        self.evidence.append({**(item or {}), **fields})
        self._judged.add(half)

    def cannot(self, note: str, *, needs_reader: bool = False, item: Mapping[str, Any] | None = None,
               **fields: Any) -> None:
        """A part of the check that could not be decided; ``needs_reader``: only for want of
        a reader (or of a capability the agent's store lacks)."""
        self.undecided.append({**(item or {}), **fields, "note": note})
        self._for_want_of_reader.append(needs_reader)

    def note(self, item: Mapping[str, Any] | None = None, **fields: Any) -> None:
        """Evidence that decides nothing (what was left to another check, what was not needed)."""
        self.evidence.append({**(item or {}), **fields})

    @property
    def failed(self) -> bool:
        return bool(self.problems)

    def result(self, pass_summary: str, nothing: str = "nothing this check judges happened") -> CheckResult:
        if self.problems:
            return result(self.check_id, Outcome.FAIL, self.problems[0]["note"], self.problems,
                          decided_by=_decider(self._failed))
        if self.undecided:
            return result(self.check_id, Outcome.UNKNOWN, self.undecided[0]["note"], self.undecided + self.evidence,
                          needs_reader=all(self._for_want_of_reader))
        if not self._judged:
            return result(self.check_id, Outcome.SKIPPED, nothing, self.evidence)
        return result(self.check_id, Outcome.PASS, pass_summary, self.evidence, decided_by=_decider(self._judged))


def _decider(halves: set[DecidedBy]) -> DecidedBy:
    if len(halves) == 1:
        return next(iter(halves))
    return DecidedBy.BOTH


# --- the log, or why there is none ------------------------------------------------------


@dataclass(frozen=True)
class NoLog:
    """Why a check's log half has no log to judge."""

    note: str
    needs_reader: bool = False  # no reader, or the store lacks a capability the check needs
    refused: bool = False  # the reader refused the final store: the log half fails
    deliberate: bool = False  # the task damaged the store mid-file on purpose (C10 judges the refusal)
    reader: str | None = None


def store_log(obs: Observation, *needs: Capability) -> SessionLog | NoLog:
    """The final parsed log, if the reader gave one and the store records what is needed."""
    if obs.log_format is None:
        return NoLog("no log reader for this agent, so its log cannot be read", needs_reader=True)
    missing = [c.value for c in needs if not obs.has(c)]
    if missing:
        return NoLog(f"the {obs.log_format.name} store does not record {', '.join(missing)}", needs_reader=True)
    if obs.log is not None:
        return obs.log
    if obs.log_error:
        if obs.log_version_unknown:
            return NoLog(f"the {obs.log_format.name} reader cannot read this store: {obs.log_error}",
                         reader=obs.log_error)
        if any(r.damage == "mid-file" for r in obs.restarts):
            return NoLog("the task damaged the log mid-file on purpose, so it is unreadable by design "
                         "(its refusal is judged by C10)", deliberate=True, reader=obs.log_error)
        return NoLog(f"the session log could not be read: {obs.log_error}", refused=True, reader=obs.log_error)
    return NoLog(f"the agent left no session store{' at ' + obs.log_path if obs.log_path else ''}")


def no_log_result(check_id: str, why: NoLog) -> CheckResult:
    """What a log check answers when it has no log."""
    items: list[Item] = [{"reader": why.reader}] if why.reader else []
    if why.refused:
        items = [{"reader": why.reader, "fact": refusal_fact(why.reader)}]
        return result(check_id, Outcome.FAIL, why.note, items, decided_by=DecidedBy.LOG)
    if why.deliberate:
        return result(check_id, Outcome.SKIPPED, why.note, items)
    return result(check_id, Outcome.UNKNOWN, why.note, items, needs_reader=why.needs_reader)


def log_or_verdict(obs: Observation, check_id: str, *needs: Capability) -> SessionLog | CheckResult:
    """The final session log, or the verdict a log check gives without one."""
    log = store_log(obs, *needs)
    return no_log_result(check_id, log) if isinstance(log, NoLog) else log


def log_half(obs: Observation, found: Findings, *needs: Capability) -> SessionLog | NoLog:
    """The final log for a check's log half. When there is none the reason goes into
    ``found`` — a store the reader refused fails the half; no reader, or a capability the
    store lacks, is noted — and is returned, so the checker can say whether a part its black-box
    half could not decide is undecided only for want of a reader (``NoLog.needs_reader``)."""
    log = store_log(obs, *needs)
    if isinstance(log, NoLog):
        if log.refused:
            found.fail(DecidedBy.LOG, log.note, reader=log.reader, fact=refusal_fact(log.reader))
        elif not log.deliberate:
            found.note(log_half="not judged", why=log.note)
    return log


def wants_reader(log: SessionLog | NoLog) -> bool:
    """Whether a reader (or a store recording more) would have decided what is undecided."""
    return isinstance(log, NoLog) and log.needs_reader


def captures(obs: Observation) -> list[LogCapture]:
    """Every capture of the store with a snapshot (after kills, before and after restarts), in
    the order they were taken."""
    found = [k.log for k in obs.kills] + [c for r in obs.restarts for c in (r.before, r.after_load)]
    taken = [c for c in found if c is not None and c.snapshot is not None]
    return sorted(taken, key=lambda c: c.snapshot.mono_ns if c.snapshot else 0)


def turn_at(log: SessionLog, ns: int) -> int | None:
    """The number of the last turn started before ``ns``."""
    started = [e for e in log.events_of(TurnStarted) if e.mono_ns is not None and e.mono_ns < ns]
    return started[-1].turn if started else None


def first_changed_event(before: SessionLog, after: SessionLog) -> SessionEvent | None:
    """The first event of ``before`` that ``after`` does not hold unchanged at the same place.

    Returns the event of ``after`` at that place, or the missing event of ``before`` when
    ``after`` is shorter; None when ``after`` starts with every event of ``before``. Canonical
    events, so this holds for any reader's store. Each event is compared as its record holds
    it (``data``), never on what a reader derived from other records (``derived``): a later
    record may change what the reader concludes about an earlier one that was never touched.
    """
    for old, new in zip(before.events, after.events, strict=False):
        if (old.seq, old.type, dict(old.data)) != (new.seq, new.type, dict(new.data)):
            return new
    if len(after.events) < len(before.events):
        return before.events[len(after.events)]
    return None


def stops_seen(obs: Observation) -> list[StopDelivery]:
    """Every Stop that reached a running turn: the harness's deliveries, plus the timeouts the
    agent fired itself (a ``stop_requested`` with source ``timeout`` in its log), which no
    driver delivers."""
    stops = [s for s in obs.stops if s.exercised]
    if obs.log is not None and obs.has(Capability.STOP_REQUESTS) and not any(s.source == "timeout" for s in stops):
        for event in obs.log.events_of(StopRequested):
            if event.source == "timeout" and event.mono_ns is not None:
                stops.append(StopDelivery(mono_ns=event.mono_ns, source="timeout", how="timeout (agent's own)",
                                          phase="other", exercised=True, by="agent-timeout"))
    return sorted(stops, key=lambda s: s.mono_ns)


# --- evidence items ---------------------------------------------------------------------


def event_item(event: SessionEvent, note: str | None = None) -> Item:
    """A log event as evidence: where it is, and what it says (trimmed)."""
    fields = {k: v for k, v in event.data.items() if k not in ("seq", "type", "time", "mono_ns", "turn")}
    item: Item = {"line": event.line, "seq": event.seq, "type": event.type}
    if event.where:
        item["where"] = event.where
    if event.turn is not None:
        item["turn"] = event.turn
    item["excerpt"] = clip(fields)
    if note:
        item["note"] = note
    return item


def failure_item(failure: AgentFailure) -> Item:
    """What the agent did instead of what the task waited for: exit code, stderr, the server's
    last records."""
    item: Item = {"step": failure.step, "awaited": failure.awaited, "what": failure.what}
    if failure.exit is not None:
        item |= {"pid": failure.exit.pid, "role": failure.exit.role, "returncode": failure.exit.returncode}
        if failure.exit.signal is not None:
            item["signal"] = failure.exit.signal
        if failure.exit.stderr_tail:
            item["stderr_tail"] = clip(failure.exit.stderr_tail[-300:], 300)
        item["fact"] = exit_fact(failure.exit)
    if failure.records:
        item["records"] = [record_item(r) for r in failure.records[-5:]]
    return item


__all__ = ["REGISTRY", "CheckSpec", "Findings", "NoLog", "captures", "check", "event_item",
           "failure_item", "first_changed_event", "get_check", "log_half", "log_or_verdict", "no_log_result",
           "result", "run_check", "run_checks", "stops_seen", "store_log", "turn_at", "wants_reader"]
