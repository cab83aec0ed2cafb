"""The state of one task run while its steps play, and the services steps ask of it.

A ``TaskRun`` owns what the steps share: the driver, the fake server, the recorded
``History``, the profile's reader (to capture the store at a kill or a restart), the last
beacon, the bash windows being watched, a pending timeout or CI watchdog. Steps
(``harness.run.steps``) act through it; it never decides a verdict.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fake_server import records
from harness.containment.procs import GoneWatch, ProcRef, leftovers
from harness.containment.sockets import unread_bytes
from harness.drivers import Driver, DriverError
from harness.model import AgentFailure, LogCapture, ProcessExit, StopDelivery, WindowObservation
from harness.model.history import History
from harness.profiles import Profile
from harness.readers import CannotDamage, Damage, Reader, capture
from harness.run.steps import IDLE_GRACE_S, AgentFailed, NotExercised
from harness.tasks.steps import Step
from harness.timing.alone import Member, Stopwatch

T = TypeVar("T")
WINDOW_WATCH_S = 600.0  # windows hold at most 600 s; the watch is finished at the task's end
RECORDS_IN_FAILURE = 8
TIMEOUT_SPAN_LEAD_S = 0.2  # a turn's timeout span begins this long before its deadline


class TaskRun:
    def __init__(self, *, profile: Profile, driver: Driver, server: Any, history: History, reader: Reader | None,
                 timeout_factor: float = 1.0, member: Member | None = None,
                 unread: Callable[[int], int] = unread_bytes):
        self.profile = profile
        self.member = member or Stopwatch().join(lambda deadline: False, lambda: None)
        self.timeout_factor = timeout_factor  # the task's turn timeouts are this many times longer (a retry)
        self.driver = driver
        self.server = server
        self.history = history
        self.reader = reader
        self.unread = unread  # the run's network's ``unread_bytes`` (its namespace's TCP tables)
        self.last_beacon: tuple[str, records.Record] | None = None
        self.window_stops: dict[str, int] = {}
        self.queued: dict[str, str] = {}
        self.pending_damage: Damage | None = None
        self.restarted = False
        self.timeout_by_agent = False
        self._timeout_due_ns: int | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._watchdog_task: asyncio.Task[StopDelivery] | None = None
        self._tree_watch: dict[str, GoneWatch] = {}
        self._span_tasks: set[asyncio.Task[None]] = set()  # a span begun or ended by an event, not a step
        self._turn_started_ns = 0
        self.kill_follows = False  # the step after the current one is a kill
        self._frozen_ns: int | None = None

    @property
    def headless_timeout_options(self) -> tuple[str, ...]:
        return self.profile.headless.timeout_options if self.profile.headless else ()

    # -- the turn and its deadline -----------------------------------------------------------
    def turn_started(self, asked_ns: int) -> None:
        """A new turn, asked for at ``asked_ns``: earlier beacons are stale, and an earlier turn's
        timeout no longer applies. The turn's timeout counts from ``asked_ns``, not from when the
        driver had started the agent: a headless agent's own ``--timeout`` counts from its spawn,
        and a slow spawn must not move the moment it falls due."""
        self._turn_started_ns = asked_ns
        self.last_beacon = None
        self._timeout_due_ns = None
        self.timeout_by_agent = False

    def arm_timeout(self, timeout_s: float, *, watchdog: bool) -> None:
        """A turn with timeout T: the agent's own ``--timeout`` when its profile has one,
        else the harness plays CI's watchdog and sends the profile's watchdog signal at T.
        Its span (L4, and L3 of a window it ends) begins ``TIMEOUT_SPAN_LEAD_S`` before T."""
        self._timeout_due_ns = self._turn_started_ns + int(timeout_s * 1e9)
        self.timeout_by_agent = not watchdog
        loop = asyncio.get_running_loop()
        delay = max(0.0, (self._timeout_due_ns - time.monotonic_ns()) / 1e9)
        self.member.expect_deadline(self._timeout_due_ns)
        self._spawn_span(self._take_after(max(0.0, delay - TIMEOUT_SPAN_LEAD_S)))
        if watchdog:
            self._watchdog = loop.call_later(delay, self._fire_watchdog)

    # -- spans: where something is timed (harness.timing.alone) ----------------------------------------
    async def _take_after(self, delay_s: float) -> None:
        await asyncio.sleep(delay_s)  # a deadline known in advance, not a wait for an effect
        await self.member.take(for_deadline=True)

    def end_span_at_next_request(self, after_ns: int) -> None:
        """The span of a restart ends with the agent's first request after it (L7)."""
        async def first_request() -> None:
            await self.server.records.wait_for(
                lambda r: isinstance(r, records.Request) and r.mono_ns > after_ns, "the first request")
            await self.member.give()
        self._spawn_span(first_request())

    def _spawn_span(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._span_tasks.add(task)
        task.add_done_callback(self._span_tasks.discard)

    async def end_span(self) -> None:
        """The effects awaited are in (or the steps are over): other runs go on."""
        for task in list(self._span_tasks):
            task.cancel()
        await asyncio.gather(*self._span_tasks, return_exceptions=True)
        await self.member.deadline_over()
        await self.member.give()

    def _fire_watchdog(self) -> None:
        phase, request, window = self.beacon_context()
        self._watchdog_task = asyncio.ensure_future(self.driver.stop(
            "timeout", phase=phase, request=request, window=window,
            signal_name=signal.Signals(self.profile.watchdog_signal).name, by="watchdog"))

    def disarm_timeout(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    # -- waiting on the agent ------------------------------------------------------------------
    async def race_agent(self, waiting: Awaitable[T], step: Step, awaited: str) -> T:
        """``waiting``'s result — unless the agent can no longer produce it first: it went
        idle (settled, exited) or the server refused one of its requests. Then the run ends
        as the agent's failure, or as not exercised when its timeout fell due before."""
        seen = len(self.server.records)
        target = asyncio.ensure_future(waiting)
        idle = asyncio.ensure_future(self.driver.idle())
        refused = asyncio.ensure_future(self.server.records.wait_for(
            lambda r: isinstance(r, records.Error) and r.request is not None and r.index > seen, "an error record"))
        try:
            await asyncio.wait({target, idle, refused}, return_when=asyncio.FIRST_COMPLETED)
            if target.done():
                return target.result()
            if refused.done():
                error = refused.result()
                assert isinstance(error, records.Error)
                raise AgentFailed(self.failure(step, awaited, f"the server refused request {error.request} "
                                               f"of the agent: {error.problem}"))
            # A record posted just before the agent went idle may still be in flight.
            await asyncio.wait({target}, timeout=IDLE_GRACE_S)
            if target.done():
                return target.result()
            exit_ = await self.driver.exited()
            idle_ns = exit_.ended_ns if exit_ else time.monotonic_ns()
            if self._timeout_due_ns is not None and idle_ns >= self._timeout_due_ns:
                due_ms = (self._timeout_due_ns - self._turn_started_ns) / 1e6
                idle_ms = (idle_ns - self._turn_started_ns) / 1e6
                raise NotExercised(f"{step.describe()}: the turn's timeout fell due at +{due_ms:.0f} ms, before "
                                   f"{awaited} (the agent went idle at +{idle_ms:.0f} ms)")
            if exit_ is None:
                what = f"the agent's turn ended before {awaited}"
            else:
                code = f"{exit_.returncode}" if exit_.returncode is not None else f"by signal {exit_.signal}"
                what = f"the agent exited {code} before {awaited}"
            raise AgentFailed(self.failure(step, awaited, what, exit_))
        finally:
            for task in (target, idle, refused):
                task.cancel()

    def failure(self, step: Step, awaited: str, what: str, exit_: ProcessExit | None = None) -> AgentFailure:
        last = tuple(list(self.server.records)[-RECORDS_IN_FAILURE:])
        return AgentFailure(step=step.describe(), awaited=awaited, what=what, after_restart=self.restarted,
                            exit=exit_ or self.history.last(ProcessExit), records=last, kind=step.do)

    def last_seen(self) -> str:
        seen_records = list(self.server.records)
        last = seen_records[-1] if seen_records else None
        seen = f"record #{last.index} {last.kind}" if last else "no server record"
        return f"{seen}; agent output: {self.driver.transcript()[-200:]!r}"

    def beacon_context(self) -> tuple[str, int | None, str | None]:
        if self.last_beacon is None:
            return "other", None, None
        _, record = self.last_beacon
        if isinstance(record, records.Window):
            return "tool", None, record.window
        return "stream", getattr(record, "request", None), None

    async def chunks_read_by_agent(self, request: int, budget_s: float) -> int | None:
        """How many chunks of ``request`` the agent has provably read off its socket: those
        flushed before now, once no client socket to the server holds unread bytes. None
        when that cannot be shown within the budget (the agent stopped reading)."""
        cutoff = time.monotonic_ns()
        flushed = [r for r in self.server.records if isinstance(r, records.Chunk) and r.request == request
                   and r.mono_ns <= cutoff]
        port = int(self.server.port)
        end = time.monotonic() + budget_s
        while self.unread(port) > 0:
            if time.monotonic() > end:
                return None
            await asyncio.sleep(0.0005)
        return len(flushed)

    # -- a kill at a beacon ---------------------------------------------------------------------
    def freeze_for_kill(self) -> None:
        """Freeze the agent now (the beacon of a kill that follows has just been stored)."""
        if self._frozen_ns is None:
            self._frozen_ns = self.driver.freeze()

    def take_frozen(self) -> int | None:
        """When the agent was frozen for the kill now done, if it was; cleared."""
        frozen, self._frozen_ns = self._frozen_ns, None
        return frozen

    # -- the agent's store -------------------------------------------------------------------
    def capture(self, moment: str) -> LogCapture | None:
        """The store now, through the profile's reader; None for an agent without a reader."""
        if self.reader is None:
            return None
        return capture(self.reader, self.driver.log_path, moment, looked_in=self.driver.store_glob)

    def damage_store(self, kind: str) -> None:
        if self.reader is None:
            raise DriverError("damage asked for, but the agent has no log reader (the task should not have run)")
        path = self.driver.log_path
        if not path:
            raise DriverError("damage asked for, but the agent's session store was not found")
        try:
            self.pending_damage = self.reader.damage(path, kind)
        except CannotDamage as exc:
            raise DriverError(str(exc)) from None

    # -- windows -------------------------------------------------------------------------------
    def watch_tree(self, record: records.Window) -> None:
        """Watch a window's tree from the moment it opened until it is gone (its pidfds, in
        the loop's selector): whatever ends it — Stop, a timeout, a kill, a restart's
        reaping — the moment is known, and L3 is that moment minus the Stop."""
        refs = [ProcRef(p.pid, p.create_time, p.role) for p in record.pids]
        self._tree_watch[record.window] = GoneWatch(refs, deadline_s=WINDOW_WATCH_S)

    async def record_windows(self) -> list[ProcRef]:
        """Every window the server saw, into the history: its tree, when Stop hit it, when it
        was gone, survivors. Returns the windows' processes (for the final cleanup)."""
        if self._watchdog_task is not None:
            await asyncio.gather(self._watchdog_task, return_exceptions=True)
        refs: list[ProcRef] = []
        for record in [r for r in self.server.records if isinstance(r, records.Window)]:
            wid = record.window
            tree = [ProcRef(p.pid, p.create_time, p.role) for p in record.pids]
            gone_ns = await self._tree_watch[wid].finish() if wid in self._tree_watch else None
            survivors = tuple(r.to_json() for r in leftovers(tree))
            watchdog = next((s.mono_ns for s in self.history.of(StopDelivery)
                             if s.by == "watchdog" and s.exercised and s.window == wid), None)
            self.history.record(WindowObservation(window=wid, pids=tuple(record.to_json()["pids"]),
                                                  stop_ns=self.window_stops.get(wid, watchdog), gone_ns=gone_ns,
                                                  survivors=survivors))
            refs += tree
        return refs
