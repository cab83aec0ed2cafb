"""Was an agent that overran a step's budget slow, or starved by the machine?

A budget is a failsafe: an agent that does not get where a step waits within it has failed
the step — unless the machine did not let it run. The kernel counts both per thread in
``/proc/<pid>/task/<tid>/schedstat``: the time it ran on a CPU and the time it sat runnable
in a run queue, waiting for one. An agent that hangs (asleep on a lock, a read that never
returns) or spins on its own accumulates no wait; an agent that wanted to run while CPU
hogs and other runs held both cores accumulates wait. So an overrun during which the
agent waited for a CPU for a good share of the budget says nothing about the agent: the
run is ``not exercised`` (and retried) with these figures, never a verdict. Everything
else stays the agent's failure, and its figures go into the evidence.

The kernel adds a wait to the counter when the thread next gets a CPU; on a loaded machine
the scheduler runs every runnable thread every few milliseconds, so over a budget of
seconds the counter lags by a slice at most.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

# The share of a step's wall time spent waiting for a CPU from which the machine, not the
# agent, is taken to have decided the overrun. A sleeping or spinning agent waits ~0.
STARVED_SHARE = 0.25


@dataclass(frozen=True)
class CpuSample:
    """Per thread of the sampled processes: (ran_ns, waited_ns) since it started."""
    wall_ns: int
    threads: dict[int, tuple[int, int]]


@dataclass(frozen=True)
class CpuUse:
    """What the sampled processes did between two samples."""
    wall_s: float
    ran_s: float
    waited_s: float

    @property
    def starved(self) -> bool:
        return self.wall_s > 0 and self.waited_s >= STARVED_SHARE * self.wall_s

    def describe(self) -> str:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        return (f"in {self.wall_s:.1f} s the agent ran {self.ran_s:.2f} s on a CPU and waited "
                f"{self.waited_s:.2f} s for one (load {load}, {os.cpu_count()} CPUs)")


def sample(pids: Iterable[int]) -> CpuSample:
    """The scheduler's counters of every thread of ``pids`` (gone processes are skipped)."""
    threads: dict[int, tuple[int, int]] = {}
    for pid in set(pids):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                    ran, waited, _ = f.read().split()
            except (OSError, ValueError):
                continue
            threads[int(tid)] = (int(ran), int(waited))
    return CpuSample(time.monotonic_ns(), threads)


def between(before: CpuSample, after: CpuSample) -> CpuUse:
    """Use from ``before`` to ``after``; a thread first seen in ``after`` counts from its start
    (an agent spawned during the step), a thread gone by ``after`` is not counted."""
    ran = waited = 0
    for tid, (ran_after, waited_after) in after.threads.items():
        ran_before, waited_before = before.threads.get(tid, (0, 0))
        if ran_after < ran_before or waited_after < waited_before:  # a reused thread id
            ran_before = waited_before = 0
        ran += ran_after - ran_before
        waited += waited_after - waited_before
    return CpuUse((after.wall_ns - before.wall_ns) / 1e9, ran / 1e9, waited / 1e9)
