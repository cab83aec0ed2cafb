"""Synthetic results for the report tests (results version 2): every outcome, tier, run
status and evidence kind, timelines, hostile text. The fixtures are in ``conftest.py``.

The runs are built from fixed seeds so renderings are byte-stable (golden files). Verdicts
and statuses depend on the work item only; timings on the seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from harness.model import (
    Attempt,
    CheckResult,
    DecidedBy,
    Evidence,
    LatencySample,
    Outcome,
    RunResult,
    RunStatus,
    TaskResult,
    Tier,
    TimelineMark,
)

TASKS = ("interrupt-cancel", "interrupt-timeout", "interrupt-restart")
ADAPTERS = ("inproc", "http")
# The order a task file might list them in: not the contract's (A1 before C1, C13 before C3).
CHECKS = ("A1", "C13", "C1", "C3", "C5", "C8", "C9")
CANARY = "sk-stopbench-canary-0123456789abcdef"
HOSTILE = '<script>alert("x")</script> & \x1b[31mred\x1b[0m | pipe'
START_NS = 5_000_000_000_000  # the task's start on the monotonic clock, in every synthetic run
NOT_RUN_TASK = "interrupt-cancel[terminal]"  # a variant the synthetic agent has no driver for
NO_READER = "no log reader for this agent, so this log check cannot be decided"

# Which latencies each task measures, their typical size in ns per adapter, and samples per repeat.
LATENCY_SCALE = {
    ("interrupt-cancel", "L1"): ({"inproc": 300_000}, 4),
    ("interrupt-cancel", "L2"): ({"http": 1_600_000}, 4),
    ("interrupt-cancel", "L3"): ({"inproc": 148_000_000, "http": 150_000_000}, 4),
    ("interrupt-timeout", "L4"): ({"inproc": 40_000_000, "http": 45_000_000}, 1),  # n < 5: dots, not a plot
    ("interrupt-restart", "L7"): ({"inproc": 210_000_000, "http": 260_000_000}, 1),
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


def _pid(adapter: str, repeat: int) -> int:
    return 4100 + 10 * ADAPTERS.index(adapter) + repeat if adapter in ADAPTERS else 4190 + repeat


def _timeline(task: str, adapter: str, repeat: int, broken: bool, agent_failed: bool,
              rng: random.Random) -> tuple[TimelineMark, ...]:
    """The marks a runner would record: inputs, requests with chunks, the agent's process,
    a window, a Stop (or a kill and a restart), settlements, exits."""
    jitter = round(rng.uniform(0, 3), 3)
    pid = _pid(adapter, repeat)
    survived = broken and task == "interrupt-cancel" and adapter == "http"
    marks = [
        TimelineMark("harness", "input", 12.0 + jitter, f"run the sleeper {HOSTILE}"),
        TimelineMark("probes", "probe", 8.0 + jitter, "GET /v1/models → 404: a path the server does not serve "
                     "(harmless)"),
        TimelineMark("model", "request", 15.0 + jitter, "request 1", end_ms=60.5 + jitter, ref="request 1"),
        *(TimelineMark("model", "chunk", 20.0 + 5 * k + jitter, f"chunk {k} of request 1: 'part {k}'",
                       ref="request 1") for k in range(3)),
        TimelineMark("model", "request", 62.0 + jitter, "request 2", end_ms=90.0 + jitter, ref="request 2"),
        TimelineMark("window w1", "window", 80.0 + jitter, "window w1: 4240 bash, 4241 node, 4242 sleeper"
                     + ("; 1 survived" if survived else ""), end_ms=None if survived else 330.0 + jitter,
                     ref="window w1"),
    ]
    if task == "interrupt-restart":
        marks += [
            TimelineMark("harness", "kill", 150.0 + jitter, f"SIGKILL 1 of pid {pid} at window-opened",
                         ref=f"pid {pid}"),
            TimelineMark("agent", "process", 5.0 + jitter, f"run pid {pid}: signal 9", end_ms=150.4 + jitter,
                         ref=f"pid {pid}"),
            TimelineMark("harness", "restart", 170.0 + jitter, "restart 1"),
        ]
        if agent_failed:
            marks.append(TimelineMark("agent", "process", 171.0 + jitter, f"resume pid {pid + 500}: exit 1",
                                      end_ms=236.0 + jitter, ref=f"pid {pid + 500}"))
        else:
            marks += [
                TimelineMark("agent", "process", 171.0 + jitter, f"resume pid {pid + 500}: exit 0",
                             end_ms=520.0 + jitter, ref=f"pid {pid + 500}"),
                TimelineMark("model", "request", 380.0 + jitter, "request 3", end_ms=420.0 + jitter, ref="request 3"),
                TimelineMark("agent", "settled", 500.0 + jitter, "settled: completed — exit 0"),
            ]
    else:
        marks += [
            TimelineMark("harness", "stop", 200.0 + jitter, "Stop (signal:SIGINT, user, tool)", ref="window w1"),
            TimelineMark("agent", "settled", 205.0 + jitter, "settled: aborted (user) — exit 3"),
            TimelineMark("agent", "process", 5.0 + jitter, f"run pid {pid}: exit 3", end_ms=450.0 + jitter,
                         ref=f"pid {pid}"),
            TimelineMark("model", "disconnect", 201.0 + jitter, "request 2: client closed after chunk 0",
                         ref="request 2"),
        ]
    return tuple(sorted(marks, key=lambda m: (m.at_ms, m.lane)))


def _run_evidence(task: str, adapter: str, repeat: int, agent_failure: bool, broken: bool) -> dict:
    """What the runner keeps of a run's processes and the server's records; a broken run's
    agent printed its key (the canary), which writing the results redacts."""
    pid = _pid(adapter, repeat)
    processes = [{"pid": pid, "role": "run", "argv": ["refagent", "run", "--timeout", "2", HOSTILE],
                  "returncode": 3, "signal": None, "stdout_tail": "turn 1 aborted\n",
                  "stderr_tail": f"warning: {HOSTILE}\n" + (f"key={CANARY}\n" if broken else "")}]
    if task == "interrupt-restart":
        processes[0].update(returncode=None, signal=9)
        processes.append({"pid": pid + 500, "role": "resume", "argv": ["refagent", "resume", "s-1"],
                          "returncode": 1 if agent_failure else 0, "signal": None, "stdout_tail": "",
                          "stderr_tail": "session s-1: cannot resume\n" if agent_failure else ""})
    records = [{"index": 0, "kind": "request", "request": 1, "status": 200},
               *({"index": 1 + k, "kind": "chunk", "request": 1, "chunk": k} for k in range(3)),
               {"index": 4, "kind": "request", "request": 2, "status": 200},
               {"index": 5, "kind": "window", "window": "w1"}]
    evidence: dict = {"start_ns": START_NS, "processes": processes, "records": records,
                      "log_path": f"/tmp/run/sessions/{task}.jsonl",
                      "reproduce": f"stopbench run --agent reference --task {task} --adapter {adapter}",
                      "containment": {"kind": "process-group", "why": "no cgroup v2 delegation here"}}
    if broken and task == "interrupt-cancel" and adapter == "http":
        evidence["containment"]["outlived"] = [{"pid": 4242, "ppid": 1, "create_time": 1764410401.25,
                                                "cmdline": ["sleep", "600"], "how": "env-tag"}]
    if agent_failure:
        evidence["agent_failure"] = {"step": "step 7 (wait: for='request', request=3)", "awaited": "request 3",
                                     "what": "the agent exited 1", "exit": processes[-1]}
    return evidence


def _checks(task: str, adapter: str, repeat: int, broken: bool) -> tuple[CheckResult, ...]:
    """Deterministic verdicts for one work item; ``broken`` plants the failures."""
    out = []
    for check in CHECKS:
        outcome, summary, items, decided = Outcome.PASS, f"{check} held", (), None
        tier = Tier.ADVISORY if check in ("C9", "A1") else Tier.MANDATORY
        if check == "C3":
            decided = DecidedBy.BOTH
        if check == "C3" and broken and task == "interrupt-cancel" and adapter == "http":
            outcome, decided = Outcome.FAIL, DecidedBy.BLACK_BOX
            summary = f"bash tree survived Stop: pid 4242 still alive {HOSTILE}"
            items = (
                {"kind": "request", "request": 2, "api": "chat", "path": "/v1/chat/completions",
                 "headers": {"Authorization": f"Bearer {CANARY}"}, "status": 200,
                 "messages": ["user: run the sleeper", f"assistant: {HOSTILE} calls=['call_1']"]},
                {"type": "tool_result", "seq": 9, "line": 10, "excerpt": '{"aborted": false}'},
                {"window": "w1", "stop_ns": START_NS + 200_000_000, "tree": [4240, 4241, 4242],
                 "survivors": [{"pid": 4242, "ppid": 1, "pgid": 4242, "sid": 4242, "create_time": 1764410401.25,
                                "role": "sleeper"}]},
                {"pid": 4242, "ppid": 1, "pgid": 4242, "sid": 4242, "role": "sleeper"},
            )
        elif check == "C13" and broken and task == "interrupt-restart" and repeat == 0:
            outcome = Outcome.UNKNOWN
            summary = "canary scan could not read the session file"
            items = ({"where": "session.jsonl", "line": 3, "excerpt": f"key={CANARY}"},)
        elif check == "C9" and broken and task == "interrupt-timeout":
            outcome, summary = Outcome.FAIL, "a model request followed Stop (advisory here)"
            items = ({"request": 2, "status": 200, "note": "sent 3 ms after Stop"},)
        elif check == "C5" and task == "interrupt-timeout":
            outcome, summary = Outcome.SKIPPED, "no text streamed before the timeout"
        elif check == "C1" and broken and task == "interrupt-restart" and adapter == "inproc" and repeat == 2:
            outcome, summary = Outcome.FAIL, "the resumed agent exited 1 before request 3"
            items = ({"pid": _pid(adapter, repeat) + 500, "returncode": 1,
                      "stderr_tail": "session s-1: cannot resume"},)
        out.append(CheckResult(check, outcome, Evidence(summary, items), tier, name=f"check_{check.lower()}",
                               decided_by=decided))
    return tuple(out)


def _status(task: str, adapter: str, rep: int, broken: bool) -> tuple[RunStatus, str | None, tuple[Attempt, ...]]:
    if task == NOT_RUN_TASK:
        return RunStatus.NOT_RUN, "the profile has no terminal driver", ()
    if broken and task == "interrupt-restart" and adapter == "http" and rep == 1:
        return RunStatus.ERRORED, "harness error: driver could not start the agent: exec format error", ()
    if broken and task == "interrupt-timeout" and adapter == "inproc" and rep == 2:
        tries = (Attempt("the turn had ended before Stop arrived", 1.204),
                 Attempt("the turn had ended before Stop arrived", 1.311))
        return RunStatus.NOT_EXERCISED, "the turn had ended before Stop arrived", tries
    if broken and task == "interrupt-restart" and adapter == "inproc" and rep == 2:
        return RunStatus.RAN, "the agent exited 1", ()
    return RunStatus.RAN, None, ()


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
        items = [(t, a, r) for t in (*TASKS, NOT_RUN_TASK) for a in ADAPTERS for r in range(repeat)]
    rng = random.Random(timing_seed)
    tasks, samples = [], []
    for task, adapter, rep in items:
        status, reason, attempts = _status(task, adapter, rep, broken)
        if status is RunStatus.RAN:
            checks = _checks(task, adapter, rep, broken)
        elif status is RunStatus.ERRORED:
            checks = ()
        else:
            word = "not run" if status is RunStatus.NOT_RUN else "not exercised"
            checks = tuple(CheckResult(c, Outcome.SKIPPED, Evidence(f"{word}: {reason}"),
                                       Tier.ADVISORY if c in ("C9", "A1") else Tier.MANDATORY,
                                       name=f"check_{c.lower()}") for c in CHECKS)
        ran = status is RunStatus.RAN
        tasks.append(TaskResult(
            task=task, agent=agent, adapter=adapter, repeat=rep, checks=checks,
            started="" if status is RunStatus.NOT_RUN else f"2026-11-29T10:{rng.randrange(60):02d}:00Z",
            duration_s=0.0 if status is RunStatus.NOT_RUN else round(rng.uniform(1, 9), 3),
            status=status, reason=reason, attempts=attempts,
            driver="terminal" if task == NOT_RUN_TASK else ("inproc" if adapter == "inproc" else "subprocess"),
            timeline=_timeline(task, adapter, rep, broken, reason is not None, rng) if ran else (),
            evidence=_run_evidence(task, adapter, rep, reason is not None, broken) if ran else {},
        ))
        if not ran:
            continue
        for (t, latency), (per_adapter, count) in LATENCY_SCALE.items():
            if t == task and adapter in per_adapter:
                for k in range(count):  # several samples per repeat, as a task stops several times
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


BLACK_BOX_CHECKS = ("C1", "C2", "C8", "C9", "C10", "C11", "C13")
LOG_CHECKS = ("C1", "C2", "C10", "C11")


def build_black_box_run(*, failure: bool = True, repeat: int = 4) -> RunResult:
    """An agent with no log reader: the log checks are ``unknown`` for want of one in every
    run; with ``failure``, one real failure (C8 in one run of interrupt-timeout)."""
    tasks = []
    for task in TASKS:
        for rep in range(repeat):
            checks = []
            for check in BLACK_BOX_CHECKS:
                if check in LOG_CHECKS:
                    result = CheckResult(check, Outcome.UNKNOWN, Evidence(NO_READER), name=f"check_{check.lower()}",
                                         needs_reader=True)
                elif failure and check == "C8" and task == "interrupt-timeout" and rep == 2:
                    result = CheckResult(check, Outcome.FAIL, Evidence(
                        "run --timeout 2 exited 0; the contract says 3",
                        ({"pid": 7002, "role": "run", "expect": "timeout", "returncode": 0},)),
                        name="check_c8", decided_by=DecidedBy.BLACK_BOX)
                else:
                    result = CheckResult(check, Outcome.PASS, Evidence(f"{check} held"), name=f"check_{check.lower()}",
                                         decided_by=DecidedBy.BLACK_BOX)
                checks.append(result)
            marks = (TimelineMark("harness", "input", 3.0, "hello"),
                     TimelineMark("model", "request", 8.0, "request 1", end_ms=2100.0, ref="request 1"),
                     TimelineMark("agent", "process", 1.0, f"run pid {7000 + rep}: exit 0", end_ms=2110.0,
                                  ref=f"pid {7000 + rep}"))
            tasks.append(TaskResult(
                task=task, agent="blackbox", adapter="http", repeat=rep, checks=tuple(checks),
                started="2026-11-29T11:00:00Z", duration_s=2.5, driver="subprocess", timeline=marks,
                evidence={"processes": [{"pid": 7000 + rep, "role": "run", "argv": ["blackbox", "-p", "hello"],
                                         "returncode": 0, "signal": None, "stdout_tail": "done\n",
                                         "stderr_tail": ""}], "records": []}))
    items = [(t.task, "http", t.repeat) for t in tasks]
    return RunResult(run=_run_info("blackbox", items, repeat, None, "ci-2", "2026-11-29T11:00:00Z",
                                   "2026-11-29T11:10:00Z"), tasks=tuple(tasks), latencies=())
