"""Telling a starved agent from a hung one by the scheduler's own counters."""
import asyncio
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from fake_server.records import Late
from harness.containment.procs import ProcRef
from harness.profiles.model import Budgets
from harness.run.steps import AgentFailed, NotExercised, play
from harness.run.taskrun import TaskRun
from harness.tasks.steps import Step
from harness.timing.alone import Stopwatch
from harness.timing.starvation import CpuSample, between, sample

SPIN = "while True: pass"


def test_counts_threads_seen_in_both_samples_and_new_ones_from_their_start():
    before = CpuSample(0, {1: (100, 50), 2: (10, 10), 3: (500, 500)})
    after = CpuSample(2_000_000_000, {1: (300, 150), 2: (5, 1), 4: (1_000_000_000, 600_000_000)})
    use = between(before, after)
    # thread 1: +200/+100; thread 2 went backwards (a reused id): counted from 0; 3 gone; 4 new
    assert use.wall_s == 2.0
    assert use.ran_s == pytest.approx((200 + 5 + 1_000_000_000) / 1e9)
    assert use.waited_s == pytest.approx((100 + 1 + 600_000_000) / 1e9)
    assert use.starved          # 0.6 s of 2 s waiting for a CPU
    assert not between(before, CpuSample(2_000_000_000, {1: (300, 150)})).starved


def _measure(pid: int, until) -> object:
    """Sample ``pid`` until ``until(use)`` holds (failsafe 20 s) and return that use."""
    before = sample([pid])
    deadline = time.monotonic() + 20
    while True:
        use = between(before, sample([pid]))
        if until(use) or time.monotonic() > deadline:
            return use
        time.sleep(0.02)


def _spawn(code: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], **kw)


def _wait_asleep(pid: int) -> None:
    """Until ``pid`` sleeps in its ``time.sleep`` (state S: after its line, nothing else blocks),
    with no wait pending to be counted: printing its line does not mean it got the CPU again to
    reach the sleep. Failsafe 20 s."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        if state == "S":
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never went to sleep")


def test_a_sleeping_agent_is_not_starved():
    proc = _spawn("import time; print('asleep', flush=True); time.sleep(60)", stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"asleep\n"
        _wait_asleep(proc.pid)
        use = _measure(proc.pid, lambda u: u.wall_s >= 0.5)
        assert use.wall_s >= 0.5 and not use.starved and use.waited_s < 0.1 * use.wall_s
    finally:
        _end([proc])


def _pinned(code: str, cpu: int) -> subprocess.Popen:
    return _spawn(code, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))


def _hogs(cpu: int) -> list[subprocess.Popen]:
    """Two CPU hogs on one CPU: a third process pinned there gets a third of it at most."""
    return [_pinned(SPIN, cpu) for _ in range(2)]


def _end(procs):
    for p in procs:
        p.kill()
        p.wait()


def test_an_agent_held_off_the_cpu_by_hogs_is_starved():
    """A spinner pinned to the CPU two hogs are pinned to waits two thirds of the time or
    more, as an agent does on a busy runner, while a hung agent would not wait at all."""
    cpu = sorted(os.sched_getaffinity(0))[0]
    hogs = _hogs(cpu)
    starved = _pinned(SPIN, cpu)
    try:
        use = _measure(starved.pid, lambda u: u.waited_s >= 0.5)
        assert use.starved and use.waited_s >= 0.5 and use.ran_s < use.waited_s
    finally:
        _end([*hogs, starved])


class _NeverReady:
    """A driver whose ``send`` hands over an agent process and then waits for a prompt that
    never comes — the shape of an agent that hangs at start-up, or of one the machine starves."""

    def __init__(self, agent: subprocess.Popen):
        self._agent, self.proc = agent, None

    async def send(self, text, *, timeout_s=None, expect="completed"):
        self.proc = self._agent
        await asyncio.Future()

    def processes(self):
        return [ProcRef.of(self.proc.pid, "agent")] if self.proc else []

    async def exited(self):
        return None

    def transcript(self):
        return ""


class _Run:
    def __init__(self, driver):
        self.driver, self.restarted = driver, False
        self.server = SimpleNamespace(records=[])
        self.history = SimpleNamespace(last=lambda kind: None)
        self.profile = SimpleNamespace(budgets=Budgets(), headless=None)
        self.member = Stopwatch().join(lambda deadline: False, lambda: None)
        self._span_tasks: set = set()
    failure = TaskRun.failure
    last_seen = TaskRun.last_seen
    end_span = TaskRun.end_span


async def _overrun(agent: subprocess.Popen) -> None:
    steps = (Step(do="send", args={"text": "hi"}, index=1),)
    try:
        await play(_Run(_NeverReady(agent)), steps, Budgets(startup=1.0))  # type: ignore[arg-type]
    finally:
        agent.kill()
        agent.wait()


@pytest.mark.slow(reason="waits out a step's 1 s budget")
async def test_an_agent_that_hangs_at_start_up_fails_the_step_with_its_cpu_figures():
    agent = _spawn("import time; print('asleep', flush=True); time.sleep(60)", stdout=subprocess.PIPE)
    assert agent.stdout is not None and agent.stdout.readline() == b"asleep\n"
    _wait_asleep(agent.pid)   # hung from here on: on a busy machine it may still be queued for a CPU
    with pytest.raises(AgentFailed) as info:
        await _overrun(agent)
    assert "within the 1 s budget of 'send' steps" in info.value.failure.what
    assert "the agent ran" in info.value.failure.what and "waited" in info.value.failure.what


@pytest.mark.slow(reason="waits out a step's 1 s budget beside CPU hogs")
async def test_an_agent_the_machine_starves_at_start_up_is_not_exercised():
    cpu = sorted(os.sched_getaffinity(0))[0]
    hogs = _hogs(cpu)
    try:
        with pytest.raises(NotExercised, match="the machine, not the agent, decided it"):
            await _overrun(_pinned(SPIN, cpu))
    finally:
        _end(hogs)


class _LateScript:
    """A driver whose agent waits for a stream the fake server plays late: the server's loop
    could not keep its script's time and recorded by how much. It has no process of its own,
    so no CPU figure can decide the overrun: the lateness alone does, or nothing."""

    def __init__(self, records: list, late_ns: int):
        self._records, self._late_ns = records, late_ns

    async def send(self, text, *, timeout_s=None, expect="completed"):
        self._records.append(Late(request=1, chunk=3, late_ns=self._late_ns, index=len(self._records) + 1))
        await asyncio.Future()

    def processes(self):
        return []

    async def exited(self):
        return None

    def transcript(self):
        return ""


async def _overrun_late(late_ns: int) -> None:
    run = _Run(None)
    run.driver = _LateScript(run.server.records, late_ns)
    await play(run, (Step(do="send", args={"text": "hi"}, index=1),), Budgets(startup=0.4))  # type: ignore[arg-type]


async def test_a_step_overrun_while_the_fake_server_ran_its_script_late_is_not_exercised():
    with pytest.raises(NotExercised, match="played its script 300 ms late"):
        await _overrun_late(300_000_000)   # 300 ms of a 0.4 s budget


async def test_a_script_late_by_a_trifle_leaves_the_overrun_the_agents():
    with pytest.raises(AgentFailed):
        await _overrun_late(5_000_000)
