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
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from fake_server import FakeServer
from harness.checks import run_checks
from harness.containment import Containment, EndReport
from harness.containment.procs import ProcRef, SpawnError, kill_all, leftovers
from harness.containment.stale import owner_tag
from harness.drivers import Driver, ProfileMisfit, Unsupported, make_driver
from harness.model import (
    AgentFailure,
    Attempt,
    LatencySample,
    Observation,
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
from harness.profiles import Profile
from harness.readers import ACP_REPLAY, get_reader
from harness.run.measure import timed_latencies
from harness.run.observe import observe
from harness.run.planning import WorkItem
from harness.run.result import (
    all_checks,
    containment_report,
    forged_windows,
    not_run_result,
    redacted,
    task_result,
    with_what_was_seen,
)
from harness.run.rundir import RunDirs, agent_context, canary_key
from harness.run.steps import AgentFailed, NotExercised, play
from harness.run.taskrun import TaskRun
from harness.timing.alone import CLEANING_UP_FOR, Member, Stopwatch

T = TypeVar("T")
DEFAULT_RETRIES = 2
# Each try after a race that did not happen gives a task's turn timeouts this many times more:
# a turn timeout T is there to fall while the agent works, and an agent the machine slows
# down (``import openai`` alone takes seconds under load) may not have started working by T.
RETRY_TIMEOUT_FACTOR = 3.0
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
        return ItemOutcome(not_run_result(profile, item), [], None)
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
    replay = DRIVERS[item.driver].section == "acp" and profile.acp is not None and profile.acp.reader == ACP_REPLAY
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
            result = task_result(profile, item, started, t0_ns, checks, RunStatus.RAN,
                             failure.what if failure else None, obs, final,
                             containment_report(containment, outlived, forged, escaped))
            alone: list[LatencySample] = []
            concurrent: list[LatencySample] = []
            for sample, start_ns in timed_latencies(obs, item.repeat) if item.mutant is None else ():
                timed_alone = member.alone_between(start_ns, start_ns + abs(sample.value_ns))
                (alone if timed_alone else concurrent).append(sample)
            return ItemOutcome(redacted(with_what_was_seen(result, driver), api_key), alone, obs, concurrent)
    except NotExercised as exc:
        result = task_result(profile, item, started, t0_ns, all_checks(item, skipped, f"not exercised: {exc}"),
                         RunStatus.NOT_EXERCISED, str(exc), None, None)
        return ItemOutcome(redacted(with_what_was_seen(result, driver), api_key), [], None)
    except ProfileMisfit as exc:
        result = task_result(profile, item, started, t0_ns, all_checks(item, skipped, f"not judged: {exc}"),
                         RunStatus.PROFILE_PROBLEM, str(exc), None, None)
        if exc.screen is not None:
            result = dataclasses.replace(result, evidence={**result.evidence, "screen": exc.screen})
        return ItemOutcome(redacted(with_what_was_seen(result, driver), api_key), [], None)
    except Unsupported as exc:
        result = task_result(profile, item, started, t0_ns, all_checks(item, skipped, f"not run: {exc}"),
                         RunStatus.NOT_RUN, str(exc), None, None)
        return ItemOutcome(redacted(with_what_was_seen(result, driver), api_key), [], None)
    except SpawnError as exc:
        reason = f"the profile's command could not be started: {exc}"
        result = task_result(profile, item, started, t0_ns, (), RunStatus.ERRORED, reason, None, None)
        return ItemOutcome(redacted(with_what_was_seen(result, driver), api_key), [], None)
    except Exception as exc:  # the harness's own fault: say so, with where it happened
        where = "; ".join(frame_lines(exc))
        reason = f"harness error: {type(exc).__name__}: {exc} ({where})"
        result = task_result(profile, item, started, t0_ns, (), RunStatus.ERRORED, reason, None, None)
        return ItemOutcome(redacted(with_what_was_seen(result, driver), api_key), [], None)
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


