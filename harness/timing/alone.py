"""Task runs side by side, latencies timed alone (``stopbench run --jobs N``).

Two task runs at once share two cores, the harness's event loop and the kernel's
scheduler: a latency timed while another run works is partly the other run's. So runs
overlap only where nothing is being timed:

- A *span* is where a task run times something — from its Stop until the turn settled,
  from a restart until the agent's first request after it, from shortly before a turn's
  deadline until it settled. The run takes the stopwatch for its span (``Member.take``)
  and every other run is *paused* until it gives it back: their processes frozen by the
  cgroup freezer (they neither run nor notice), their harness work held back (``working``:
  the start of a run, the steps that spawn or type, the end of a run). A run that starts
  meanwhile waits.
- A latency sample is *concurrent* when, anywhere in its interval, another run was not
  paused, or its own run was paused: always so where the containment cannot freeze
  (env-tag). ``Member.alone_between`` says which; such samples are kept, marked, and left
  out of the latency tables and the gate (``LatencySample.concurrent``).

With one job there is nobody to pause, and no sample is concurrent.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

PAUSE_BUDGET_S = 5.0  # failsafe: the freezer stops a run's processes within milliseconds


class Stopwatch:
    """Who holds the stopwatch, who is paused, and when more than one run was working."""

    def __init__(self) -> None:
        self._members: list[Member] = []
        self._holder: Member | None = None
        self._changed = asyncio.Condition()
        self._working: set[Member] = set()  # members not paused
        self._busy: list[list[int | None]] = []  # [start, end] while two or more were working

    def join(self, pause: Callable[[float], bool], resume: Callable[[], None]) -> Member:
        """A new task run. ``pause(deadline)`` freezes its processes and holds its fake
        server's scripted time (False when its processes cannot be frozen); ``resume()``
        undoes both. A run that joins during a span starts paused."""
        member = Member(self, pause, resume)
        self._members.append(member)
        if self._holder is None:
            self._mark_working(member)
        else:
            member.paused_since = time.monotonic_ns()
        return member

    def _mark_working(self, member: Member) -> None:
        if member in self._working:
            return
        self._working.add(member)
        if len(self._working) == 2:
            self._busy.append([time.monotonic_ns(), None])

    def _mark_paused(self, member: Member) -> None:
        if member in self._working:
            if len(self._working) == 2:
                self._busy[-1][1] = time.monotonic_ns()
            self._working.discard(member)

    def other_in_timed_turn(self, member: Member) -> bool:
        """Whether another run is in a turn with a timeout: ``member`` may begin no span then."""
        return any(m is not member and m.in_timed_turn() for m in self._members)

    def busy_between(self, start_ns: int, end_ns: int) -> bool:
        return any(s is not None and s <= end_ns and (e is None or e >= start_ns) for s, e in self._busy)


class Member:
    """One task run's side of the stopwatch."""

    def __init__(self, stopwatch: Stopwatch, pause: Callable[[float], bool], resume: Callable[[], None]):
        self._sw = stopwatch
        self._pause, self._resume = pause, resume
        self.leases = 0
        self.holding = False
        self.paused_since: int | None = None
        self.deadline_ns: int | None = None
        self.paused: list[tuple[int, int]] = []  # spans of others this run was paused for

    @asynccontextmanager
    async def working(self) -> AsyncIterator[None]:
        """Harness work of this run (it runs in the loop every run shares): held back while
        another run holds the stopwatch, and a span waits until it is done."""
        sw = self._sw
        async with sw._changed:
            if not _ending():  # a run being cancelled ends its processes at once, whoever times
                await sw._changed.wait_for(lambda: sw._holder in (None, self))
            self.leases += 1
        try:
            yield
        finally:
            async with sw._changed:
                self.leases -= 1
                sw._changed.notify_all()

    def expect_deadline(self, due_ns: int) -> None:
        """This run is in a turn that times out at ``due_ns``, until ``deadline_over``. It is
        not paused meanwhile: an agent frozen in a timed turn would reach its deadline having
        done less, or act on it late (start a tool after it, say) — the harness's doing, not
        the agent's. Nor does another run begin a span meanwhile: it could not be alone."""
        self.deadline_ns = due_ns

    def in_timed_turn(self) -> bool:
        return self.deadline_ns is not None

    async def deadline_over(self) -> None:
        if self.deadline_ns is not None:
            self.deadline_ns = None
            async with self._sw._changed:
                self._sw._changed.notify_all()

    async def take(self, *, for_deadline: bool = False) -> None:
        """Begin a span: once no other run holds the stopwatch or works in the loop, pause
        every other run. While another run is in a timed turn, a span waits until that turn is
        over, unless it is that turn's own. Taking it again while held changes nothing."""
        sw = self._sw
        if self.holding:
            return
        async with sw._changed:
            await sw._changed.wait_for(
                lambda: sw._holder is None and (for_deadline or not sw.other_in_timed_turn(self)))
            sw._holder = self
            self.holding = True  # from here on ``give`` undoes it, even if this wait is cancelled
            await sw._changed.wait_for(lambda: all(m.leases == 0 for m in sw._members if m is not self))
        others = [m for m in sw._members if m is not self and m.paused_since is None and not m.in_timed_turn()]
        deadline = time.monotonic() + PAUSE_BUDGET_S
        for m in others:  # in the loop: a freeze takes microseconds, and the span has not begun
            frozen = m._pause(deadline)
            m.paused_since = time.monotonic_ns()
            if frozen:
                sw._mark_paused(m)

    async def give(self) -> None:
        """End the span: every paused run goes on."""
        sw = self._sw
        if not self.holding:
            return
        self.holding = False
        for m in sw._members:
            if m is not self and m.paused_since is not None:
                m._resume()
                m.paused.append((m.paused_since, time.monotonic_ns()))
                m.paused_since = None
                sw._mark_working(m)
        async with sw._changed:
            sw._holder = None
            sw._changed.notify_all()

    def paused_ns(self) -> int:
        """How long this run has been paused for others' spans so far."""
        now = time.monotonic_ns()
        return sum(e - s for s, e in self.paused) + (now - self.paused_since if self.paused_since else 0)

    def alone_between(self, start_ns: int, end_ns: int) -> bool:
        """Whether an interval was timed alone: no other run working, this one never paused."""
        if self._sw.busy_between(start_ns, end_ns):
            return False
        own = [*self.paused, *([(self.paused_since, end_ns)] if self.paused_since else [])]
        return not any(s <= end_ns and e >= start_ns for s, e in own)

    async def leave(self) -> None:
        """The run is over (its processes are gone). Leaving again changes nothing."""
        sw = self._sw
        if self not in sw._members:
            return
        await self.give()
        sw._mark_paused(self)
        sw._members.remove(self)
        async with sw._changed:
            sw._changed.notify_all()


# The task a clean-up runs for, when it runs in a task of its own (so that a cancellation
# cannot cut it half-way): that task being cancelled is the clean-up's own ending.
CLEANING_UP_FOR: contextvars.ContextVar[asyncio.Task[object] | None] = contextvars.ContextVar(
    "CLEANING_UP_FOR", default=None)


def _ending() -> bool:
    """Whether the current task (or the one it cleans up for) is being cancelled (an
    interrupted run, a harness error in another run): its clean-up must not wait on the stopwatch."""
    return any(task is not None and task.cancelling() > 0
               for task in (asyncio.current_task(), CLEANING_UP_FOR.get()))
