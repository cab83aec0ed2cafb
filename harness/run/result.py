"""A task run's result: its checks, status and evidence, assembled from what it observed.

What a profile author or a reviewer needs to act on a run goes into its evidence here — each
process with its command line and output tails, the server's records outlined, the ACP
transcript or the terminal's screens, the containment's findings (forged window records,
escaped processes) and the command that runs it again — and the one place the run's key is
taken out of it (``redacted``). The runner (``harness.run.runner``) decides what happened;
this module only writes it down.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fake_server.record_store import Records
from fake_server.records import Error, Window
from fake_server.server import BEACON_PATH
from harness.containment import Containment, EndReport
from harness.containment.procs import ProcRef
from harness.drivers import Driver
from harness.model import CheckResult, LogCapture, Observation, ProcessExit, RunStatus, TaskResult, redaction, skipped
from harness.profiles import BUILTIN_DIR, Profile
from harness.run.planning import WorkItem
from harness.run.timeline import timeline

TAIL_CHARS = 1500
# The fields that identify a record in the evidence's outline of what the server saw.
OUTLINED = ("request", "chunk", "window", "status", "problem", "error")


def all_checks(item: WorkItem, verdict: Callable[[str, str], CheckResult], summary: str) -> tuple[CheckResult, ...]:
    return tuple(dataclasses.replace(verdict(c, summary), tier=tier) for c, tier in item.task.checks.items())


def not_run_result(profile: Profile, item: WorkItem) -> TaskResult:
    reason = item.not_run or ""
    return TaskResult(task=item.variant, agent=profile.name, adapter=item.adapter, repeat=item.repeat,
                      driver=item.driver, checks=all_checks(item, skipped, f"not run: {reason}"),
                      status=RunStatus.NOT_RUN, reason=reason, mutant=item.mutant)


def task_result(profile: Profile, item: WorkItem, started: str, t0_ns: int, checks: tuple[CheckResult, ...],
            status: RunStatus, reason: str | None, obs: Observation | None, final: LogCapture | None,
            containment: dict[str, Any] | None = None) -> TaskResult:
    evidence: dict[str, object] = {"reproduce": reproducer(profile, item)}
    if obs is not None:
        evidence = _evidence(profile, item, obs, final, t0_ns)
    if containment is not None:
        evidence["containment"] = containment
    return TaskResult(
        task=item.variant, agent=profile.name, adapter=item.adapter, repeat=item.repeat, driver=item.driver,
        checks=checks, started=started, duration_s=round((time.monotonic_ns() - t0_ns) / 1e9, 3),
        status=status, reason=reason, mutant=item.mutant,
        timeline=timeline(obs, t0_ns) if obs is not None else (),
        evidence=evidence,
    )


def containment_report(containment: Containment, outlived: EndReport | None, forged: list[dict[str, Any]],
               escaped: list[dict[str, Any]]) -> dict[str, Any]:
    """Which containment held the run, what it found still alive after the agent and its
    tools were ended (each with how it was found): daemons no PID led to; the window records
    that named processes not the run's, or were refused for want of its token; and the
    processes that had left the run's cgroup."""
    report: dict[str, Any] = {"kind": containment.kind, "why": containment.why}
    if outlived is not None:
        report["outlived"] = [m.to_json() for m in outlived.found]
    if forged:
        report["forged"] = forged
    if escaped:
        report["escaped"] = escaped
    return report


def forged_windows(server_records: Records, containment: Containment) -> tuple[list[dict[str, Any]], set[ProcRef]]:
    """Forged evidence, and the processes it named that the harness must leave alone.

    A window record's process that is alive but not a member of the run's containment is
    not the run's, whatever the record says (the harness itself, a stranger's process): it is
    listed, with its command line, and never ended. A window record the server refused for
    want of the run's beacon token is listed as refused (with the window it claimed, if one)."""
    named = [(r, ProcRef(p.pid, p.create_time, p.role)) for r in server_records
             if isinstance(r, Window) for p in r.pids]
    strangers = set(containment.strangers([ref for _, ref in named]))
    forged: list[dict[str, Any]] = []
    for record, ref in named:
        if ref in strangers:
            process = ref.process()
            cmdline = process.cmdline() if process is not None else []
            forged.append({"window": record.window, "index": record.index, "source": record.source,
                           **ref.to_json(), "cmdline": cmdline})
    forged += [{"window": r.window, "index": r.index, "refused": True, "problem": r.problem} for r in server_records
               if isinstance(r, Error) and r.status == 403 and r.path is not None and r.path.endswith(BEACON_PATH)]
    return forged, strangers


def reproducer(profile: Profile, item: WorkItem) -> str:
    """The one command that runs this task run again."""
    agent = profile.name if Path(profile.path).parent == BUILTIN_DIR else profile.path
    command = f"stopbench run --agent {agent} --task {item.task.name} --driver {item.driver} --adapter {item.adapter}"
    return command + (f" --mutants --failpoint {item.mutant}" if item.mutant else "")


def _evidence(profile: Profile, item: WorkItem, obs: Observation, final: LogCapture | None,
              t0_ns: int) -> dict[str, object]:
    """What a profile author needs to act on a run: each process with its command line and
    output tails, the server's records outlined, and why the run ended early, if it did."""

    def process(e: ProcessExit) -> dict[str, object]:
        return {"pid": e.pid, "role": e.role, "argv": list(e.argv), "returncode": e.returncode, "signal": e.signal,
                "stdout_tail": e.stdout_tail[-TAIL_CHARS:], "stderr_tail": e.stderr_tail[-TAIL_CHARS:]}

    records = [{"index": r.index, "kind": r.kind, **{k: getattr(r, k) for k in OUTLINED
                                                    if getattr(r, k, None) is not None}} for r in obs.records]
    evidence: dict[str, object] = {"processes": [process(e) for e in obs.exits], "records": records,
                                   "log_path": obs.log_path, "reproduce": reproducer(profile, item),
                                   "start_ns": t0_ns}
    if final is not None and final.error:
        evidence["log_error"] = final.error
    if obs.failure is not None:
        f = obs.failure
        evidence["agent_failure"] = {"step": f.step, "awaited": f.awaited, "what": f.what,
                                     "exit": process(f.exit) if f.exit else None}
    return evidence


def with_what_was_seen(result: TaskResult, driver: Driver | None) -> TaskResult:
    """``result`` with what the driver saw on every path a run ends by: the session the
    profile's rules named (and which rule), a terminal's rendered screens, the ACP transcript,
    and whether the profile fit the agent (``profile_fit``)."""
    if driver is None:
        return result
    seen: dict[str, object] = {"profile_fit": driver.fit_record()}
    if driver.session_id is not None:
        seen["session"] = {"id": driver.session_id, "found_by": driver.session_found_by}
    if screens := driver.screens():
        seen["screens"] = screens
    if (protocol := driver.protocol()) is not None:
        seen["acp"] = protocol
    return dataclasses.replace(result, evidence={**result.evidence, **seen})


def redacted(result: TaskResult, api_key: str) -> TaskResult:
    """The one place a run's key leaves its result: everything after this is safe to write."""
    return TaskResult.from_json(redaction.redact(result.to_json(), [api_key]))
