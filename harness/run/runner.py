"""The runner: one work item → a task run → an Observation → checks → a TaskResult.

One task run owns a fresh run folder (HOME, sessions, working folder), a network namespace
where only its fake server answers (``harness.offline``), a fake server, a driver, a recorded
history and a unique canary API key. Its steps play under their budgets
(``harness.run.steps``); whatever happens, every process it learned of (agent, tool windows)
is ended by PID and verified gone, and the run folder is removed. What ended the run
decides its status: the agent's own failure still yields check verdicts, a race that did
not happen is retried, and only the harness's own faults are errors.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import datetime as dt
import re
import shutil
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from fake_server import FakeServer
from fake_server.record_store import Records
from fake_server.records import Error, Window
from fake_server.server import BEACON_PATH
from harness.checks import run_checks
from harness.containment import Containment, EndReport
from harness.containment.procs import ProcRef, SpawnError, kill_all, leftovers
from harness.containment.stale import owner_tag
from harness.drivers import Driver, ProfileMisfit, Unsupported, make_driver
from harness.model import (
    AgentFailure,
    Attempt,
    CheckResult,
    LatencySample,
    LogCapture,
    Observation,
    ProcessExit,
    RunStatus,
    TaskResult,
    redaction,
    skipped,
)
from harness.model.drivers import DRIVERS
from harness.model.fit import note_store
from harness.model.history import History
from harness.model.tracebacks import frame_lines
from harness.offline import HostNetwork, open_network
from harness.profiles import BUILTIN_DIR, Profile
from harness.readers import ACP_REPLAY, get_reader
from harness.run.measure import timed_latencies
from harness.run.observe import observe
from harness.run.planning import WorkItem
from harness.run.rundir import RunDirs, agent_context, canary_key
from harness.run.steps import AgentFailed, NotExercised, play
from harness.run.taskrun import TaskRun
from harness.run.timeline import timeline
from harness.timing.alone import CLEANING_UP_FOR, Member, Stopwatch

T = TypeVar("T")
DEFAULT_RETRIES = 2
# Each try after a race that did not happen gives a task's turn timeouts this many times more:
# a turn timeout T is there to fall while the agent works, and an agent the machine slows
# down (``import openai`` alone takes seconds under load) may not have started working by T.
RETRY_TIMEOUT_FACTOR = 3.0
TAIL_CHARS = 1500
# The fields that identify a record in the evidence's outline of what the server saw.
OUTLINED = ("request", "chunk", "window", "status", "problem", "error")
CONTAIN_BUDGET_S = 10.0  # failsafe: ending a frozen cgroup takes milliseconds


class HarnessError(Exception):
    """The harness itself failed (e.g. could not end a process): the run cannot be trusted."""


@dataclass
class ItemOutcome:
    result: TaskResult
    latencies: list[LatencySample]  # timed alone
    observation: Observation | None
    concurrent: list[LatencySample] = dataclasses.field(default_factory=list)  # timed beside other runs


async def run_item(profile: Profile, item: WorkItem, *, retries: int = DEFAULT_RETRIES,
                   keep: Path | None = None, stopwatch: Stopwatch | None = None) -> ItemOutcome:
    """Run one work item start to finish, again while the race it meant to run did not
    happen (each earlier try is kept in ``attempts``); never leaves a process, nor a folder
    unless ``keep`` names where each try's run folder stays (its evidence says which)."""
    if item.not_run is not None:
        return ItemOutcome(_not_run(profile, item), [], None)
    attempts: list[Attempt] = []
    while True:
        root = kept_dir(keep, item, len(attempts) + 1) if keep is not None else None
        outcome = await run_once(profile, item, run_root=root, stopwatch=stopwatch,
                                 timeout_factor=RETRY_TIMEOUT_FACTOR ** len(attempts))
        if root is not None:
            outcome.result = dataclasses.replace(outcome.result,
                                                 evidence={**outcome.result.evidence, "run_dir": str(root)})
        if outcome.result.status is not RunStatus.NOT_EXERCISED or len(attempts) >= retries:
            outcome.result = dataclasses.replace(outcome.result, attempts=tuple(attempts))
            return outcome
        attempts.append(Attempt(reason=outcome.result.reason or "", duration_s=outcome.result.duration_s))


def kept_dir(keep: Path, item: WorkItem, attempt: int) -> Path:
    """A new folder below ``keep`` for one try of ``item``, named after it (never reused)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{item.variant}-{item.adapter}-r{item.repeat}"
                  + (f"-{item.mutant}" if item.mutant else "") + f"-try{attempt}")
    path, n = keep / name, 1
    while path.exists():
        n += 1
        path = keep / f"{name}.{n}"
    return path


async def run_once(profile: Profile, item: WorkItem, *, run_root: Path | None = None,
                   timeout_factor: float = 1.0, stopwatch: Stopwatch | None = None) -> ItemOutcome:
    """One try of ``item``; its run folder is removed afterwards unless it is ``run_root``.
    Beside other task runs (``stopwatch`` shared with them) its harness work and its spans
    take turns with theirs (``harness.timing.alone``)."""
    pausable = _Pausable()
    member = (stopwatch or Stopwatch()).join(pausable.pause, pausable.resume)
    try:
        async with member.working():
            tag = owner_tag()
            network = await _open_network(tag, item)
            try:
                dirs = RunDirs.create(run_root)
                containment = await _open_containment(dirs, run_root, tag)
            except BaseException:
                network.unwatch()
                await _to_the_end(asyncio.to_thread(network.close))
                raise
        pausable.containment = containment
        start_ns = time.monotonic_ns()
        try:
            outcome = await _run_contained(profile, item, dirs, containment, member, pausable, run_root,
                                           timeout_factor, network)
        finally:  # the run's processes are ended by now: nothing is left in its namespace
            network.unwatch()
            await _to_the_end(asyncio.to_thread(network.close))
        run_start = outcome.result.evidence.get("start_ns")
        report = network.report(run_start if isinstance(run_start, int) else start_ns)
        outcome.result = dataclasses.replace(outcome.result, evidence={**outcome.result.evidence, "network": report})
        return outcome
    finally:
        await member.leave()


async def _open_network(tag: str, item: WorkItem) -> HostNetwork:
    """The run's network (``harness.offline``), opened in a thread. Cut short meanwhile, the
    opening is let finish and undone: a run cancelled before it began leaves no namespace."""
    opening = asyncio.ensure_future(asyncio.to_thread(open_network, tag, in_process=DRIVERS[item.driver].in_process))
    try:
        return await asyncio.shield(opening)
    except BaseException:
        await _to_the_end(asyncio.to_thread((await opening).close))
        raise


async def _open_containment(dirs: RunDirs, run_root: Path | None, tag: str) -> Containment:
    """The run's containment, opened in a thread. Cut short meanwhile (a signal cancels the
    run), the opening is let finish and undone, and the run folder removed: a run cancelled
    before it began leaves no cgroup and no empty folder."""
    opening = asyncio.ensure_future(asyncio.to_thread(Containment.open, dirs.root, tag))
    try:
        return await asyncio.shield(opening)
    except BaseException:
        try:
            (await opening).close()  # the thread cannot be stopped; what it made is removed
        except Exception:  # noqa: BLE001 - it failed to open: nothing of it to remove
            pass
        if run_root is None:
            shutil.rmtree(dirs.root, ignore_errors=True)
        raise


class _Pausable:
    """What of a task run another run's span pauses (harness.timing.alone): the processes in its
    containment (frozen) and its fake server's scripted time (held)."""

    def __init__(self) -> None:
        self.containment: Containment | None = None
        self.server: FakeServer | None = None

    def pause(self, deadline: float) -> bool:
        if self.server is not None:
            self.server.hold()
        return self.containment is not None and self.containment.pause(deadline)

    def resume(self) -> None:
        if self.containment is not None:
            self.containment.resume()
        if self.server is not None:
            self.server.release()


async def _run_contained(profile: Profile, item: WorkItem, dirs: RunDirs, containment: Containment,
                         member: Member, pausable: _Pausable, run_root: Path | None,
                         timeout_factor: float, network: HostNetwork) -> ItemOutcome:
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    t0_ns = time.monotonic_ns()
    api_key = canary_key()
    history = History()
    # Over ACP the durable history is what a session/load replays, unless the profile reads the agent's own store.
    replay = item.driver == "acp" and profile.acp is not None and profile.acp.reader == ACP_REPLAY
    reader = get_reader(ACP_REPLAY if replay else profile.log_reader)
    outlived: EndReport | None = None
    driver: Driver | None = None
    window_refs: list[ProcRef] = []
    forged: list[dict[str, Any]] = []
    escaped: list[dict[str, Any]] = []
    try:
        async with FakeServer(scenario=profile.scenario_for(item.task.scenario), port=0,
                              sock=network.server_socket()) as server:
            pausable.server = server
            network.watch()
            ctx = agent_context(profile, item, dirs, server.url, server.base_url, api_key, env_extra=containment.env,
                                preexec=network.preexec(containment.preexec()), beacon_url=server.beacon_url)
            driver = make_driver(item.driver, ctx, history)
            run = TaskRun(profile=profile, driver=driver, server=server, history=history, reader=reader,
                          timeout_factor=timeout_factor, member=member, unread=network.unread_bytes)
            failure: AgentFailure | None = None
            try:
                await play(run, item.task.steps, profile.budgets)
            except AgentFailed as exc:
                failure = exc.failure
            finally:
                async with member.working():
                    window_refs = await run.record_windows()  # before the agent ends: what outlived its tools
                    # A record may name any process: only those shown to be the run's are ended.
                    forged, strangers = await asyncio.to_thread(forged_windows, server.records, containment)
                    window_refs = [r for r in window_refs if r not in strangers]
                    # Before the agent is ended: what left the run's cgroup (ended with the rest, and reported).
                    escaped = [m.to_json() for m in await asyncio.to_thread(containment.escapees, driver.processes())]
                    await driver.close()
                    await asyncio.to_thread(kill_all, window_refs)
                    # Whatever is still alive now no PID led to: daemons, escapees. Found, ended, reported.
                    outlived = await asyncio.to_thread(containment.end, CONTAIN_BUDGET_S)
            async with member.working():
                final = run.capture("final")
                note_store(driver.fit, profile.log_reader, final)
            records = tuple(server.records)  # typed as the server wrote them; plain JSON only in the results
        async with member.working():
            obs = observe(item, profile, history=history, records=records, reader=reader, final=final,
                          log_path=driver.log_path, transcript=driver.transcript(), api_key=api_key,
                          canary_hits=redaction.scan_files(api_key, dirs.root, dirs.profile_files), failure=failure)
            checks = run_checks(obs, dict(item.task.checks))
            result = _result(profile, item, started, t0_ns, checks, RunStatus.RAN,
                             failure.what if failure else None, obs, final,
                             _contained(containment, outlived, forged, escaped))
            alone: list[LatencySample] = []
            concurrent: list[LatencySample] = []
            for sample, start_ns in timed_latencies(item, profile.name, obs) if item.mutant is None else ():
                timed_alone = member.alone_between(start_ns, start_ns + abs(sample.value_ns))
                (alone if timed_alone else concurrent).append(sample)
            return ItemOutcome(_redacted(_seen(result, driver), api_key), alone, obs, concurrent)
    except NotExercised as exc:
        result = _result(profile, item, started, t0_ns, _all(item, skipped, f"not exercised: {exc}"),
                         RunStatus.NOT_EXERCISED, str(exc), None, None)
        return ItemOutcome(_redacted(_seen(result, driver), api_key), [], None)
    except ProfileMisfit as exc:
        result = _result(profile, item, started, t0_ns, _all(item, skipped, f"not judged: {exc}"),
                         RunStatus.PROFILE_PROBLEM, str(exc), None, None)
        if exc.screen is not None:
            result = dataclasses.replace(result, evidence={**result.evidence, "screen": exc.screen})
        return ItemOutcome(_redacted(_seen(result, driver), api_key), [], None)
    except Unsupported as exc:
        result = _result(profile, item, started, t0_ns, _all(item, skipped, f"not run: {exc}"),
                         RunStatus.NOT_RUN, str(exc), None, None)
        return ItemOutcome(_redacted(_seen(result, driver), api_key), [], None)
    except SpawnError as exc:
        reason = f"the profile's command could not be started: {exc}"
        result = _result(profile, item, started, t0_ns, (), RunStatus.ERRORED, reason, None, None)
        return ItemOutcome(_redacted(_seen(result, driver), api_key), [], None)
    except Exception as exc:  # the harness's own fault: say so, with where it happened
        where = "; ".join(frame_lines(exc))
        reason = f"harness error: {type(exc).__name__}: {exc} ({where})"
        result = _result(profile, item, started, t0_ns, (), RunStatus.ERRORED, reason, None, None)
        return ItemOutcome(_redacted(_seen(result, driver), api_key), [], None)
    finally:
        agent_refs = driver.processes() if driver is not None else []
        await _to_the_end(_clean_up(item, dirs, containment, member, agent_refs + window_refs, run_root))


async def _clean_up(item: WorkItem, dirs: RunDirs, containment: Containment, member: Member,
                    refs: list[ProcRef], run_root: Path | None) -> None:
    """End everything the run started, remove its folder (unless kept) and its cgroup; a
    process that survives SIGKILL is the harness's own failure."""
    async with member.working():
        last = await asyncio.to_thread(containment.end, CONTAIN_BUDGET_S)  # on every path, before the folder goes
        if run_root is None:
            shutil.rmtree(dirs.root, ignore_errors=True)
        left = await asyncio.to_thread(leftovers, refs)
        if last.survivors or (left and await asyncio.to_thread(kill_all, left)):
            survivors = [m.to_json() for m in last.survivors] + [r.to_json() for r in left]
            raise HarnessError(f"{item.key}: processes survived SIGKILL: {survivors}")
        containment.close()
    # At once, in this task: a run whose containment is closed can no longer be paused, and a
    # span begun meanwhile would count it as working beside it.
    await member.leave()


async def _to_the_end(work: Coroutine[Any, Any, T]) -> T:
    """``work`` run to its end even when this task is cancelled meanwhile (a signal cuts the
    run short just as it ends): a cleanup cut half-way would leave the run's cgroup and
    folder. The cancellation is raised once the work is done (its own error first). The work
    runs in a task of its own that knows whom it cleans up for (``alone.CLEANING_UP_FOR``): a
    run being cancelled ends its processes without waiting on another run's stopwatch."""
    context = contextvars.copy_context()
    context.run(CLEANING_UP_FOR.set, asyncio.current_task())
    task = asyncio.get_running_loop().create_task(work, context=context)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = cancelled or not task.done()
    result = task.result()
    if cancelled:
        raise asyncio.CancelledError
    return result


def _all(item: WorkItem, verdict: Callable[[str, str], CheckResult], summary: str) -> tuple[CheckResult, ...]:
    return tuple(dataclasses.replace(verdict(c, summary), tier=tier) for c, tier in item.task.checks.items())


def _not_run(profile: Profile, item: WorkItem) -> TaskResult:
    reason = item.not_run or ""
    return TaskResult(task=item.variant, agent=profile.name, adapter=item.adapter, repeat=item.repeat,
                      driver=item.driver, checks=_all(item, skipped, f"not run: {reason}"),
                      status=RunStatus.NOT_RUN, reason=reason, mutant=item.mutant)


def _result(profile: Profile, item: WorkItem, started: str, t0_ns: int, checks: tuple[CheckResult, ...],
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


def _contained(containment: Containment, outlived: EndReport | None, forged: list[dict[str, Any]],
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


def _seen(result: TaskResult, driver: Driver | None) -> TaskResult:
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


def _redacted(result: TaskResult, api_key: str) -> TaskResult:
    """The one place a run's key leaves its result: everything after this is safe to write."""
    return TaskResult.from_json(redaction.redact(result.to_json(), [api_key]))
