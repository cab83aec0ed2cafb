"""The one answer to "was it the machine's fault?" for a step that ran out of budget.

Three things can keep an agent from getting where a step waits, none of them the agent:

- the harness paused it, to time another task run alone (``harness.timing.alone``, ``--jobs``);
- the kernel kept it waiting for a CPU (``harness.timing.starvation``);
- the fake server played its script late, with more streams than the machine could serve
  (its ``late`` records).

Each is measured over the step, and the same rule applies to all three: when it took at
least ``MACHINE_SHARE`` of the budget, the overrun says nothing about the agent, and the run
is ``not exercised`` (then retried) with the figure — never a verdict. A step watch is
started before a step and asked after an overrun; everything else stays the agent's failure,
with the CPU figures in its evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from harness.timing import starvation

# The share of a budget from which a pause, a wait for a CPU or a late script decided the overrun.
MACHINE_SHARE = starvation.STARVED_SHARE


@dataclass(frozen=True)
class StepWatch:
    """What the machine had done to a task run when a step began."""

    cpu: starvation.CpuSample
    paused_ns: int
    records: int  # how many records the fake server had

    @classmethod
    def start(cls, pids: Iterable[int], paused_ns: int, records: int) -> StepWatch:
        return cls(starvation.sample(pids), paused_ns, records)

    def overrun(self, budget_s: float, pids: Iterable[int]) -> Overrun:
        """The overrun of a step that began at this watch, with what the agent's CPU did."""
        return Overrun(budget_s, starvation.between(self.cpu, starvation.sample(pids)), self)


@dataclass(frozen=True)
class Overrun:
    """A budget that ran out, and what the machine did meanwhile."""

    budget_s: float
    cpu: starvation.CpuUse
    watch: StepWatch

    def machines_fault(self, paused_ns_now: int, script_late_ns: Callable[[int], int]) -> str | None:
        """Why the machine, not the agent, decided the overrun (None: the agent did).
        ``script_late_ns(after)`` is how late the server's script ran in its records after ``after``."""
        paused_s = (paused_ns_now - self.watch.paused_ns) / 1e9
        if paused_s >= self.budget_s * MACHINE_SHARE:
            return (f"it was paused {paused_s:.2f} s for other task runs' timing (--jobs) — the harness, not the "
                    "agent, decided it")
        if self.cpu.starved:
            return "it waited for a CPU that long — the machine, not the agent, decided it"
        late_ns = script_late_ns(self.watch.records)
        if late_ns >= self.budget_s * 1e9 * MACHINE_SHARE:
            return (f"the fake server played its script {late_ns / 1e6:.0f} ms late (its 'late' records: too many "
                    "streams for this machine) — the machine, not the agent, decided it")
        return None
