"""What each step of a task does, under its budget: one executor per kind of step.

The steps' schema and validation are the task's (``harness.tasks.steps``); this module holds
what a kind does when a task run plays it, in ``EXECUTORS`` — a test holds it to the same
kinds as ``harness.tasks.steps.STEPS``. Each step runs under a budget from the agent's
profile (``[timeouts]``): an overrun names the step, the budget and what was last seen.

What can go wrong while steps play is told apart here, because it decides the verdict:

- ``AgentFailed`` — the agent did not do what the step waited for: it exited or settled
  early, or the server recorded an error the agent caused, or a budget ran out. The run's
  checks still run and the ones the missing behaviour belongs to fail.
- ``NotExercised`` — a race: the moment the task meant to interrupt never came (the agent's
  own timeout fell before the window opened, the turn ended before Stop arrived), or a
  budget ran out while the machine kept the agent waiting for a CPU (``harness.timing.starvation``).
  The run is retried.
- anything else (``DriverError`` included) is the harness's own fault.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from fake_server import records
from harness.model import AgentFailure, AgentKill, ProcessExit, Restart, StopDelivery
from harness.model.drivers import DRIVERS
from harness.profiles import Budgets
from harness.tasks.steps import STEPS, Step, beacon_name
from harness.timing.fault import StepWatch

if TYPE_CHECKING:
    from harness.run.taskrun import TaskRun

IDLE_GRACE_S = 1.0  # failsafe: a beacon posted just before the agent went idle may still be in flight
DRAIN_BUDGET_S = 2.0  # failsafe: how long a Stop mid-stream waits for the agent to read what was flushed
# Steps whose own work runs in the harness's loop (spawning, typing, reading the store): they
# wait while another task run times something (harness.timing.alone). A wait or a settle only listens.
HARNESS_WORK = ("send", "kill", "damage", "queue", "cancel-queued")


class AgentFailed(Exception):
    def __init__(self, failure: AgentFailure):
        super().__init__(failure.what)
        self.failure = failure


class NotExercised(Exception):
    """The race the task meant to run did not happen; the message gives the timing."""


async def _send(run: TaskRun, step: Step) -> None:
    timeout_s = step.get("timeout")
    if timeout_s is not None:  # a retry lengthens the T the agent is given, its profile's floor too
        timeout_s = max(float(timeout_s), run.profile.budgets.min_run_timeout) * run.timeout_factor
    own_timeout = timeout_s is not None and bool(run.headless_timeout_options)
    asked_ns = time.monotonic_ns()  # a headless agent counts its --timeout from its spawn, inside send
    await run.driver.send(step.get("text"), timeout_s=timeout_s if own_timeout else None,
                          expect=step.get("expect", "completed"))
    run.turn_started(asked_ns)
    if timeout_s is not None:
        run.arm_timeout(float(timeout_s), watchdog=not own_timeout)


def _beacon_predicate(step: Step, streams: bool) -> Callable[[records.Record], bool]:
    beacon, number = step.get("for"), step.get("request")
    if beacon == "request":
        return lambda r: isinstance(r, records.Request) and r.request == number
    if beacon == "chunk" and not streams:  # an agent that does not stream gets the answer whole
        return lambda r: isinstance(r, records.Response) and r.request == number
    if beacon == "chunk":
        return lambda r: isinstance(r, records.Chunk) and r.request == number and r.chunk == step.get("chunk")
    if beacon == "disconnect":
        return lambda r: isinstance(r, records.Disconnect) and r.request == number
    return lambda r: isinstance(r, records.Window) and r.window == step.get("window")


async def _wait(run: TaskRun, step: Step) -> None:
    """The beacon's record — or, as soon as the agent can no longer produce it (it settled or
    exited, or the server recorded an error it caused), the reason why not.

    When a kill follows, the agent is frozen (SIGSTOP) in the very call that stores the beacon's
    record, before the server answers or the harness moves on: the kill then lands at the
    beacon itself, so what the agent made durable is decided by what it did before the
    checkpoint — never by how soon the scheduler lets the harness send SIGKILL."""
    predicate = _beacon_predicate(step, run.profile.streams)
    at_once = (lambda _: run.freeze_for_kill()) if run.kill_follows else None
    waiting = run.server.records.wait_for(predicate, beacon_name(step), at_once=at_once)
    record = await run.race_agent(waiting, step, beacon_name(step))
    if isinstance(record, records.Window):
        run.watch_tree(record)
    run.last_beacon = (step.get("for"), record)


async def _stop(run: TaskRun, step: Step) -> None:
    phase, request, window = run.beacon_context()
    phase = step.get("phase", phase)
    chunks_seen = None
    if phase == "stream" and request is not None and not DRIVERS[run.driver.name].in_process:
        chunks_seen = await run.chunks_read_by_agent(request, DRAIN_BUDGET_S)
    await run.member.take()  # from Stop until the turn settled: L1, L2, L3 are timed alone
    delivery = await run.driver.stop(step.get("source", "user"), phase=phase, request=request, window=window,
                                     chunks_seen=chunks_seen)
    if not delivery.exercised:
        raise NotExercised(f"{step.describe()}: the turn had already ended when Stop arrived "
                           f"({delivery.how}, phase {phase})")
    if window:
        run.window_stops[window] = delivery.mono_ns


async def _settle(run: TaskRun, step: Step) -> None:
    settlement = await run.driver.settle()
    run.disarm_timeout()
    await run.end_span()
    exit_ = run.history.last(ProcessExit)
    if (exit_ is not None and exit_.timeout_s is not None and exit_.ended_ns == settlement.mono_ns
            and run.timeout_by_agent):
        # The run's own timeout is a Stop the harness asked for with the command line: it fell
        # due at start + T, and was exercised if the run was still going then.
        due_ns = exit_.started_ns + int(exit_.timeout_s * 1e9)
        phase, request, window = run.beacon_context()
        run.history.record(StopDelivery(mono_ns=due_ns, source="timeout", how="timeout", phase=phase,
                                        exercised=exit_.ended_ns > due_ns, request=request, window=window,
                                        by="agent-timeout"))


async def _kill(run: TaskRun, step: Step) -> None:
    assert run.last_beacon is not None
    beacon, record = run.last_beacon
    default_at = {"request": "request-received", "chunk": "chunk-flushed", "window": "window-opened"}
    kill_ns, pid = await run.driver.kill()
    # Frozen at the beacon, the agent did nothing more: that is the moment it was killed.
    kill_ns = run.take_frozen() or kill_ns
    run.history.record(AgentKill(
        mono_ns=kill_ns, pid=pid, at=step.get("at", default_at.get(beacon, "chunk-flushed")),
        request=getattr(record, "request", None), window=record.window if isinstance(record, records.Window) else None,
        log=run.capture(f"after kill {len(run.history.of(AgentKill)) + 1}"),
    ))


async def _damage(run: TaskRun, step: Step) -> None:
    run.damage_store(step.get("kind"))


async def _restart(run: TaskRun, step: Step) -> None:
    number = len(run.history.of(Restart)) + 1
    async with run.member.working():
        before = run.capture(f"before restart {number}")
    await run.member.take()  # from the restart until the agent's first request: L7 is timed alone
    restart_ns = time.monotonic_ns()
    run.end_span_at_next_request(restart_ns)
    run.restarted = True
    # No race with the killed agent's idleness here: it is the new process that must come up,
    # and a driver's restart ends on its own when that process exits instead.
    loaded = await run.driver.restart(expect=step.get("expect", "ready"), text=step.get("text", "Carry on."))
    refused = step.get("expect", "ready") == "refused"
    # Once it has loaded (its prompt is up), or once it has refused the store and exited.
    after = run.capture(f"after restart {number} {'refused' if refused else 'loaded'}") if loaded or refused else None
    damage = run.pending_damage
    run.pending_damage = None
    run.history.record(Restart(mono_ns=restart_ns, before=before, after_load=after,
                               damage=damage.kind if damage else None, damage_line=damage.line if damage else None,
                               damage_where=damage.where if damage else None))


async def _queue(run: TaskRun, step: Step) -> None:
    """Type an item while the turn runs. When a kill follows, the agent is frozen as soon as
    its acknowledgement is seen: an item the agent showed as queued is judged as it stood
    then, however long the harness takes to send SIGKILL."""
    item_id = await run.driver.queue(step.get("text"))
    if run.kill_follows:
        run.freeze_for_kill()
    run.queued[step.get("as", f"q{len(run.queued) + 1}")] = item_id


async def _cancel_queued(run: TaskRun, step: Step) -> None:
    await run.driver.cancel_queued(run.queued[step.get("item")])


Executor = Callable[["TaskRun", Step], Awaitable[None]]
EXECUTORS: dict[str, Executor] = {
    "send": _send, "wait": _wait, "stop": _stop, "settle": _settle, "kill": _kill, "damage": _damage,
    "restart": _restart, "queue": _queue, "cancel-queued": _cancel_queued,
}


async def play(run: TaskRun, steps: tuple[Step, ...], budgets: Budgets) -> None:
    """Each step in order, each under its budget; whatever span is open at the end is closed."""
    try:
        for step, after in zip(steps, (*steps[1:], None), strict=True):
            run.kill_follows = after is not None and after.do == "kill"
            await _play_step(run, step, budgets)
    finally:
        await run.end_span()


def _script_late_ns(run: TaskRun, after: int) -> int:
    """How late the fake server's script ran, at worst, in the records after the first ``after``
    (its ``late`` records; 0 when it kept time)."""
    return max((r.late_ns for r in list(run.server.records)[after:] if isinstance(r, records.Late)), default=0)


async def _play_step(run: TaskRun, step: Step, budgets: Budgets) -> None:
    from harness.drivers.base import DriverError  # here: loading a task (`stopbench list`) loads no driver

    budget: float = getattr(budgets, STEPS[step.do].budget)
    execute = EXECUTORS[step.do]
    watch = StepWatch.start(_agent_pids(run), run.member.paused_ns(), len(run.server.records))
    try:
        async with asyncio.timeout(budget):
            if step.do in HARNESS_WORK:
                async with run.member.working():
                    await execute(run, step)
            else:
                await execute(run, step)
    except DriverError as exc:
        # The driver could not do the step: the agent's fault when its process is gone
        # (it exited before its prompt, say), the harness's otherwise.
        exit_ = await run.driver.exited()
        if exit_ is None:
            raise
        raise AgentFailed(run.failure(step, _awaited(step), f"{exc} (the agent exited)", exit_)) from None
    except TimeoutError:
        overrun = watch.overrun(budget, _agent_pids(run))
        told = (f"the agent did not get there within the {budget:g} s budget of {step.do!r} steps "
                f"([timeouts] in its profile): {overrun.cpu.describe()}")
        why = overrun.machines_fault(run.member.paused_ns(), lambda after: _script_late_ns(run, after))
        if why is not None:
            raise NotExercised(f"step {step.index} ({step.do}): {told}; {why}") from None
        await _pattern_never_matched(run, step)
        raise AgentFailed(run.failure(step, _awaited(step), f"{told}; last seen: {run.last_seen()}")) from None


async def _pattern_never_matched(run: TaskRun, step: Step) -> None:
    """Raise ``ProfileMisfit`` when the step ran out waiting for a screen pattern of the profile
    while the agent was alive and had answered: its output since the input is on screen, and
    no model stream of it is still open. That is the profile not fitting the agent's UI. A
    queued input's acknowledgement is due while the turn still runs (a stream may well be
    open): there, an agent alive that took the typed input is enough. The misfit goes into
    the run's profile fit with the screen."""
    from harness.drivers.base import ProfileMisfit  # here: loading a task loads no driver

    awaiting = getattr(run.driver, "awaiting", None)
    if awaiting is None or await run.driver.exited() is not None:
        return
    if step.do != "queue":
        if not run.driver.text_since_input().strip():
            return
        seen = list(run.server.records)
        opened = {r.request for r in seen if isinstance(r, records.Request) and r.status == 200}
        closed = {r.request for r in seen if isinstance(r, (records.StreamEnd, records.Disconnect))}
        if opened - closed:
            return
    what, pattern = awaiting
    screen = run.driver.screen() if hasattr(run.driver, "screen") else run.driver.transcript()[-4000:]
    alive = "had taken the typed input" if step.do == "queue" else "answering"
    run.driver.fit.missed(what, pattern, f"in step {step.index} ({step.do})",  # when: as the driver noted it
                          f"never matched while the agent was alive and {alive}", screen=screen.splitlines())
    raise ProfileMisfit(f"the profile does not fit: step {step.index} ({step.do}) waited for {what}, but the "
                        f"pattern {pattern!r} never matched while the agent was alive and {alive} (the screen is "
                        "in the evidence); fix the pattern in the profile's [interactive] section", screen=screen)


def _agent_pids(run: TaskRun) -> list[int]:
    """The agent's processes; an in-process agent runs in this one."""
    refs = run.driver.processes()
    return [r.pid for r in refs] if refs else [os.getpid()]


def _awaited(step: Step) -> str:
    if step.do == "wait":
        return beacon_name(step)
    return {"send": "the agent to start", "settle": "the turn's settlement", "restart": "the restarted agent",
            "stop": "Stop to be delivered", "kill": "the killed agent to exit"}.get(step.do, step.do)
