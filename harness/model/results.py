"""What a run produced, as the results JSON holds it: check outcomes with their evidence,
latency samples, task runs with their status, timeline and evidence, and the verdict levels
the contract defines. Renderers and the gate read these values and nothing else."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.contract import LATENCY_IDS, Verdict
from harness.model.sharding import work_key

RESULTS_FORMAT = "stopbench-results"
RESULTS_VERSION = 2
READABLE_RESULTS_VERSIONS = (1, 2)  # a version-1 file reads as a run whose every task ran


class Outcome(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"
    SKIPPED = "skipped"


class Tier(enum.StrEnum):
    """How much a check counts: mandatory checks decide conformance."""

    MANDATORY = "mandatory"
    ADVISORY = "advisory"
    INFORMATIONAL = "informational"


# ---------------------------------------------------------------------------
# Check results


@dataclass(frozen=True)
class Evidence:
    """Why a check decided as it did: a sentence, plus the items that show it."""

    summary: str
    items: tuple[Mapping[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"summary": self.summary, "items": [dict(i) for i in self.items]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evidence:
        return cls(summary=data["summary"], items=tuple(data.get("items", ())))


class DecidedBy(enum.StrEnum):
    """Which half of a check decided it."""

    BLACK_BOX = "black-box"
    LOG = "log"
    BOTH = "both"


@dataclass(frozen=True)
class CheckResult:
    check: str  # contract ID, e.g. "C3"
    outcome: Outcome
    evidence: Evidence
    tier: Tier = Tier.MANDATORY
    name: str = ""  # the checker's function name, e.g. "pending_tool_calls_close"
    decided_by: DecidedBy | None = None
    # Why the check could not be decided, when that is only for want of a log reader: a
    # black-box agent is then "conformant (black-box)", not "incomplete".
    needs_reader: bool = False
    # A pass under a convention that differs from the contract's letter while keeping its
    # meaning (C8: exit 130 after Stop): shown, never a failure; the verdict says non-strict.
    non_strict: bool = False
    # A failure that rests only on facts an earlier check (in the contract's order) of the same
    # task run failed on: shown and linked to that check, not counted again (one defect, one failure).
    consequence_of: str | None = None

    @property
    def facts(self) -> tuple[str, ...]:
        """The observed facts this result rests on: the ``fact`` of each evidence item that
        names one (a failure's items are its problems)."""
        return tuple(dict.fromkeys(str(i["fact"]) for i in self.evidence.items if i.get("fact")))

    @property
    def counts_as_failure(self) -> bool:
        """A failure of its own: failed, and not the consequence of another check's failure."""
        return self.outcome is Outcome.FAIL and self.consequence_of is None

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "name": self.name,
            "outcome": self.outcome.value,
            "tier": self.tier.value,
            "decided_by": self.decided_by.value if self.decided_by else None,
            "needs_reader": self.needs_reader,
            **({"non_strict": True} if self.non_strict else {}),
            **({"consequence_of": self.consequence_of} if self.consequence_of else {}),
            "evidence": self.evidence.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CheckResult:
        decided = data.get("decided_by")
        return cls(
            check=data["check"],
            name=data.get("name", ""),
            outcome=Outcome(data["outcome"]),
            tier=Tier(data["tier"]),
            decided_by=DecidedBy(decided) if decided else None,
            needs_reader=bool(data.get("needs_reader", False)),
            non_strict=bool(data.get("non_strict", False)),
            consequence_of=data.get("consequence_of"),
            evidence=Evidence.from_json(data["evidence"]),
        )


def passed(check: str, summary: str, *items: Mapping[str, Any]) -> CheckResult:
    return CheckResult(check, Outcome.PASS, Evidence(summary, tuple(items)))


def failed(check: str, summary: str, *items: Mapping[str, Any]) -> CheckResult:
    return CheckResult(check, Outcome.FAIL, Evidence(summary, tuple(items)))


def unknown(check: str, summary: str, *items: Mapping[str, Any]) -> CheckResult:
    return CheckResult(check, Outcome.UNKNOWN, Evidence(summary, tuple(items)))


def skipped(check: str, summary: str, *items: Mapping[str, Any]) -> CheckResult:
    return CheckResult(check, Outcome.SKIPPED, Evidence(summary, tuple(items)))


@dataclass(frozen=True)
class LatencySample:
    """One measured latency. ``value_ns`` may be negative only for L4 (early exit)."""

    latency: str  # one of contract.LATENCY_IDS
    value_ns: int
    agent: str
    adapter: str
    task: str
    repeat: int = 0
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"detail": dict(self.detail)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LatencySample:
        if data["latency"] not in LATENCY_IDS:
            raise ValueError(f"unknown latency {data['latency']!r} (known: {', '.join(LATENCY_IDS)})")
        return cls(**{k: data[k] for k in ("latency", "value_ns", "agent", "adapter", "task")},
                   repeat=data.get("repeat", 0), detail=data.get("detail", {}))


class RunStatus(enum.StrEnum):
    """What became of one work item."""

    RAN = "ran"  # the task played; its checks are verdicts
    NOT_RUN = "not run"  # the task does not apply to this agent (no driver, reader cannot damage, …)
    NOT_EXERCISED = "not exercised"  # a race: the moment the task meant to interrupt never came
    ERRORED = "errored"  # the harness itself failed; nothing about the agent is known
    # The profile does not fit the agent (a session it cannot name after a kill, a screen
    # pattern that never matches): what to fix is the profile's; nothing about the agent is known.
    PROFILE_PROBLEM = "profile problem"


@dataclass(frozen=True)
class Attempt:
    """An earlier try of a work item that did not exercise what it meant to, and why."""

    reason: str
    duration_s: float


@dataclass(frozen=True)
class TimelineMark:
    """One moment (or span) of a task run on one lane, in ms from the task's start."""

    lane: str  # "harness", "model", "agent", "window w1", …
    kind: str  # "input", "request", "chunk", "stream-end", "stop", "kill", "restart", "settled", "exit", …
    at_ms: float
    label: str
    end_ms: float | None = None  # a span: a request's stream, a process's life
    ref: str | None = None  # what evidence may point at: "request 3", "pid 4242", "window w1"

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TimelineMark:
        return cls(lane=data["lane"], kind=data["kind"], at_ms=data["at_ms"], label=data["label"],
                   end_ms=data.get("end_ms"), ref=data.get("ref"))


def task_of(variant: str, driver: str) -> str:
    """The task a result is of, without the driver its name carries when the task has several
    (``interrupt-cancel[terminal]`` on the terminal driver: ``interrupt-cancel``). Results are
    compared by task and driver apart, so a task that gains a driver, which renames its results,
    still lines up with a run from before."""
    suffix = f"[{driver}]"
    return variant[: -len(suffix)] if driver and variant.endswith(suffix) else variant


@dataclass(frozen=True)
class TaskResult:
    """One task run once (one repeat) for one agent on one adapter."""

    task: str
    agent: str
    adapter: str
    repeat: int
    checks: tuple[CheckResult, ...]
    started: str = ""
    duration_s: float = 0.0
    status: RunStatus = RunStatus.RAN
    reason: str | None = None  # why it was not run, not exercised or errored; what the agent did wrong
    driver: str = ""
    mutant: str | None = None  # failpoint enabled in the agent, if any
    attempts: tuple[Attempt, ...] = ()  # earlier tries that were not exercised (retried)
    timeline: tuple[TimelineMark, ...] = ()
    evidence: Mapping[str, Any] = field(default_factory=dict)  # processes, records outline, run folder

    @property
    def error(self) -> str | None:
        """The harness's own failure, if that is what ended the run."""
        return self.reason if self.status is RunStatus.ERRORED else None

    @property
    def key(self) -> str:
        """The work item this is the result of (``WorkItem.key``: one format, ``work_key``)."""
        return work_key(self.task, self.adapter, self.repeat, self.mutant)

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "agent": self.agent,
            "adapter": self.adapter,
            "driver": self.driver,
            "repeat": self.repeat,
            "mutant": self.mutant,
            "started": self.started,
            "duration_s": self.duration_s,
            "status": self.status.value,
            "reason": self.reason,
            "attempts": [dataclasses.asdict(a) for a in self.attempts],
            "checks": [c.to_json() for c in self.checks],
            "timeline": [m.to_json() for m in self.timeline],
            "evidence": dict(self.evidence),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskResult:
        if "status" in data:
            status, reason = RunStatus(data["status"]), data.get("reason")
        else:  # version 1: an error meant the harness failed; a run with every check skipped "not run"
            status, reason = (RunStatus.ERRORED, data["error"]) if data.get("error") else (RunStatus.RAN, None)
        return cls(
            task=data["task"],
            agent=data["agent"],
            adapter=data["adapter"],
            driver=data.get("driver", ""),
            repeat=data["repeat"],
            mutant=data.get("mutant"),
            started=data.get("started", ""),
            duration_s=data.get("duration_s", 0.0),
            status=status,
            reason=reason,
            attempts=tuple(Attempt(**a) for a in data.get("attempts", ())),
            checks=tuple(CheckResult.from_json(c) for c in data["checks"]),
            timeline=tuple(TimelineMark.from_json(m) for m in data.get("timeline", ())),
            evidence=data.get("evidence", {}),
        )


def task_verdict(result: TaskResult) -> Verdict | None:
    """The contract's verdict for one task run; None when it did not run (not counted)."""
    if result.status is RunStatus.NOT_RUN:
        return None
    if result.status is not RunStatus.RAN:
        return Verdict.INCOMPLETE
    return verdict_of(result.checks, agent_failure=result.reason)


def verdict_of(checks: tuple[CheckResult, ...] | list[CheckResult], *, agent_failure: str | None = None) -> Verdict:
    """The verdict levels exactly as the contract defines them, over mandatory checks. A
    failure that is another's consequence fails with it (its cause is in the same run)."""
    mandatory = [c for c in checks if c.tier is Tier.MANDATORY]
    if any(c.outcome is Outcome.FAIL for c in mandatory):
        return Verdict.NOT_CONFORMANT
    undecided = [c for c in mandatory if c.outcome is Outcome.UNKNOWN]
    if agent_failure is not None or any(not c.needs_reader for c in undecided):
        return Verdict.INCOMPLETE
    if any(c.non_strict and c.outcome is Outcome.PASS for c in mandatory):
        return Verdict.CONFORMANT_NON_STRICT
    return Verdict.CONFORMANT_BLACK_BOX if undecided else Verdict.CONFORMANT


# The verdict levels, worst first: an agent's score over many task runs is the worst of any run.
VERDICT_ORDER = (Verdict.NOT_CONFORMANT, Verdict.INCOMPLETE, Verdict.CONFORMANT_NON_STRICT,
                 Verdict.CONFORMANT_BLACK_BOX, Verdict.CONFORMANT)


def combine_verdicts(verdicts: list[Verdict]) -> Verdict:
    """An agent's score over many task runs: the worst level of any run."""
    return next((v for v in VERDICT_ORDER if v in verdicts), Verdict.INCOMPLETE)


@dataclass(frozen=True)
class RunResult:
    """Everything one ``stopbench run`` produced: what the results JSON holds."""

    run: Mapping[str, Any]  # agent, version, profile and hash, host, python, start, end, shard, incomplete
    tasks: tuple[TaskResult, ...]
    latencies: tuple[LatencySample, ...]
    # Samples timed while another task run worked (``--jobs``; harness.timing.alone): kept apart, so
    # that no table, board or gate built from ``latencies`` can count them by mistake.
    concurrent: tuple[LatencySample, ...] = ()

    @property
    def verdict(self) -> Verdict:
        """Not conformant on any failure; incomplete if a run errored, was not exercised after
        its retries, or if the run itself was cut short."""
        verdicts = [v for t in self.tasks if t.mutant is None and (v := task_verdict(t)) is not None]
        if self.run.get("incomplete"):
            verdicts.append(Verdict.INCOMPLETE)
        return combine_verdicts(verdicts)

    @property
    def conformant(self) -> bool:
        return self.verdict.ok

    def head_json(self) -> dict[str, Any]:
        """Everything but the task runs and the latency samples, in the file's order."""
        return {"format": RESULTS_FORMAT, "version": RESULTS_VERSION, "run": dict(self.run),
                "verdict": self.verdict.value}

    def to_json(self) -> dict[str, Any]:
        return {
            **self.head_json(),
            "tasks": [t.to_json() for t in self.tasks],
            "latencies": [s.to_json() for s in self.latencies],
            **({"concurrent_latencies": [s.to_json() for s in self.concurrent]} if self.concurrent else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunResult:
        if data.get("format") != RESULTS_FORMAT:
            raise ValueError(f"not a stopbench results file (format={data.get('format')!r})")
        if data.get("version") not in READABLE_RESULTS_VERSIONS:
            raise ValueError(f"results version {data.get('version')!r} is not supported "
                             f"(readable: {', '.join(map(str, READABLE_RESULTS_VERSIONS))})")
        return cls(
            run=data["run"],
            tasks=tuple(TaskResult.from_json(t) for t in data["tasks"]),
            latencies=tuple(LatencySample.from_json(s) for s in data["latencies"]),
            concurrent=tuple(LatencySample.from_json(s) for s in data.get("concurrent_latencies", ())),
        )
