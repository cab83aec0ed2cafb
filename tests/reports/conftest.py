"""Synthetic results for the report tests: every outcome, tier and evidence kind, hostile text.

The runs are built from fixed seeds so renderings are byte-stable (golden files).
"""

from __future__ import annotations

import random
from typing import Callable, Sequence

import pytest

from harness.model import (
    CheckResult,
    Evidence,
    LatencySample,
    Outcome,
    RunResult,
    TaskResult,
    Tier,
)

TASKS = ("interrupt-cancel", "interrupt-timeout", "interrupt-restart")
ADAPTERS = ("inproc", "http")
CHECKS = ("C1", "C3", "C5", "C8", "C9", "C13")
CANARY = "sk-stopbench-canary-0123456789abcdef"
HOSTILE = '<script>alert("x")</script> & \x1b[31mred\x1b[0m | pipe'

# Which latencies each task measures, and their typical size in ns per adapter.
LATENCY_SCALE = {
    ("interrupt-cancel", "L1"): {"inproc": 300_000},
    ("interrupt-cancel", "L2"): {"http": 1_600_000},
    ("interrupt-cancel", "L3"): {"inproc": 148_000_000, "http": 150_000_000},
    ("interrupt-timeout", "L4"): {"inproc": 40_000_000, "http": 45_000_000},
}


def _run_info(agent: str, items: Sequence[tuple[str, str, int]], repeat: int, shard: str | None,
              host: str, started: str, ended: str) -> dict:
    """Like the runner's header: what this run (or shard) covered, as sorted lists."""
    argv = ["stopbench", "run", "--agent", agent, "--repeat", str(repeat)]
    if shard:
        argv += ["--shard", shard]
    return {
        "agent": agent, "agent_version": "0.1.0", "profile": agent, "stopbench_version": "0.1.0",
        "host": host, "python": "3.11.9", "started": started, "ended": ended,
        "adapters": sorted({a for _, a, _ in items}), "tasks": sorted({t for t, _, _ in items}),
        "repeat": repeat, "shard": shard, "argv": argv,
    }


def _checks(task: str, adapter: str, repeat: int, broken: bool) -> tuple[CheckResult, ...]:
    """Deterministic verdicts for one work item; ``broken`` plants the failures."""
    out = []
    for check in CHECKS:
        outcome, summary, items = Outcome.PASS, f"{check} held", ()
        tier = Tier.ADVISORY if check == "C9" else Tier.MANDATORY
        if check == "C3" and broken and task == "interrupt-cancel" and adapter == "http":
            outcome = Outcome.FAIL
            summary = f"bash tree survived Stop: pid 4242 still alive {HOSTILE}"
            items = (
                {"kind": "request", "request": 2, "api": "chat", "path": "/v1/chat/completions",
                 "headers": {"Authorization": f"Bearer {CANARY}"}, "status": 200},
                {"type": "tool_result", "seq": 9, "line": 10, "excerpt": '{"aborted": false}'},
                {"pid": 4242, "ppid": 1, "pgid": 4242, "sid": 4242, "role": "sleeper"},
            )
        elif check == "C13" and broken and task == "interrupt-restart" and repeat == 0:
            outcome = Outcome.UNKNOWN
            summary = "canary scan could not read the session file"
            items = ({"where": "session.jsonl", "line": 3, "excerpt": f"key={CANARY}"},)
        elif check == "C9" and broken and task == "interrupt-timeout":
            outcome, summary = Outcome.FAIL, "a model request followed Stop (advisory here)"
        elif check == "C5" and task == "interrupt-timeout":
            outcome, summary = Outcome.SKIPPED, "no text streamed before the timeout"
        out.append(CheckResult(check, outcome, Evidence(summary, items), tier, name=f"check_{check.lower()}"))
    return tuple(out)


def build_run(
    items: Sequence[tuple[str, str, int]] | None = None,
    *,
    agent: str = "reference",
    repeat: int = 3,
    broken: bool = True,
    shard: str | None = None,
    timing_seed: int = 1,
    scale: float = 1.0,
    host: str = "ci-1",
) -> RunResult:
    """A run over ``items`` (task, adapter, repeat); verdicts depend on the item only,
    timings on ``timing_seed`` (and ``scale`` multiplies every latency)."""
    if items is None:
        items = [(t, a, r) for t in TASKS for a in ADAPTERS for r in range(repeat)]
    rng = random.Random(timing_seed)
    tasks, samples = [], []
    for task, adapter, rep in items:
        error = "driver could not start the agent: exec format error" if (
            broken and task == "interrupt-restart" and adapter == "http" and rep == 1) else None
        tasks.append(TaskResult(
            task=task, agent=agent, adapter=adapter, repeat=rep,
            checks=() if error else _checks(task, adapter, rep, broken),
            started=f"2026-11-29T10:{rng.randrange(60):02d}:00Z", duration_s=round(rng.uniform(1, 9), 3),
            error=error,
        ))
        for (t, latency), per_adapter in LATENCY_SCALE.items():
            if t == task and adapter in per_adapter:
                for k in range(4):  # several samples per repeat, as a task stops several times
                    value = int(per_adapter[adapter] * scale * rng.lognormvariate(0, 0.25))
                    samples.append(LatencySample(latency, value, agent, adapter, task, rep,
                                                 {"stop": k, "stop_ns": rng.randrange(10**12)}))
    if broken and agent == "reference":
        for task, adapter, rep in items:
            if task == "interrupt-cancel" and rep == 0:
                for mutant in ("skip-tree-kill", "drop-partial-text"):
                    caught = mutant == "skip-tree-kill"
                    tasks.append(TaskResult(
                        task=task, agent=agent, adapter=adapter, repeat=rep, mutant=mutant,
                        checks=(CheckResult("C3", Outcome.FAIL if caught else Outcome.PASS,
                                            Evidence("tree survived" if caught else "tree gone"),
                                            name="check_c3"),),
                    ))
    return RunResult(
        run=_run_info(agent, items, repeat, shard, host, "2026-11-29T10:00:00Z", "2026-11-29T10:30:00Z"),
        tasks=tuple(tasks), latencies=tuple(samples),
    )


@pytest.fixture
def make_run() -> Callable[..., RunResult]:
    return build_run


@pytest.fixture
def canary() -> str:
    return CANARY


@pytest.fixture
def run() -> RunResult:
    """The broken reference run, with the failpoint targets a ``--mutants`` run records."""
    plain = build_run()
    mutation = {"mutants": {"skip-tree-kill": {"targets": ["C3"]}, "drop-partial-text": {"targets": ["C5"]}}}
    return RunResult({**plain.run, "mutation": mutation}, plain.tasks, plain.latencies)


@pytest.fixture
def rival() -> RunResult:
    """A second agent: conformant, slower on L3, measured on http only."""
    items = [(t, "http", r) for t in TASKS for r in range(2)]
    return build_run(items, agent="other-agent", repeat=2, broken=False, timing_seed=5, scale=1.5)
