"""A race that did not happen is retried, each try giving the task's turn timeout more time:
a turn timeout must fall while the agent works, and a slowed-down agent may not be working yet."""

import asyncio
import dataclasses
import re
import shutil
import time
from types import SimpleNamespace

import pytest

from fake_server.record_store import Records
from harness.model import ProcessExit, RunStatus
from harness.model.history import History
from harness.profiles import load_profile
from harness.profiles.model import Budgets
from harness.run.planning import WorkItem
from harness.run.runner import RETRY_TIMEOUT_FACTOR, run_item
from harness.run.steps import NotExercised, play
from harness.run.taskrun import TaskRun
from harness.tasks import TASKS_DIR, load_task
from harness.tasks.steps import Step


@pytest.mark.slow(reason="a task run retried until its race happens")
def test_each_retry_of_a_lost_timeout_race_triples_the_timeout(tmp_path):
    # interrupt-timeout with T = 1 ms: the tries fall due at 1, 3 and 9 ms after the agent is
    # spawned, before any Python interpreter has even started, so every try loses the race and
    # each says when its timeout fell. (At T = 10 ms the third try, 90 ms, is within reach of
    # an agent that starts fast.)
    task_dir = tmp_path / "interrupt-timeout"
    shutil.copytree(TASKS_DIR / "interrupt-timeout", task_dir)
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text().replace("timeout = 2\n", "timeout = 0.001\n"))
    work = WorkItem(load_task(task_dir), "subprocess", "http", 1)
    result = asyncio.run(run_item(load_profile("reference"), work, retries=2)).result
    assert result.status is RunStatus.NOT_EXERCISED
    reasons = [a.reason for a in result.attempts] + [result.reason or ""]
    due_ms = [int(m.group(1)) for r in reasons for m in [re.search(r"fell due at \+(\d+) ms, before window", r)] if m]
    assert due_ms == [round(RETRY_TIMEOUT_FACTOR ** n) for n in range(3)], reasons


class _SlowSpawn:
    """A headless driver whose spawn takes ``SPAWN_S`` after it stamped the process's start,
    and whose agent then timed out by its own ``--timeout``: it exited half a spawn after
    start + T, before any window — the race was lost, on a machine slow to spawn."""

    SPAWN_S = 0.05

    def __init__(self) -> None:
        self.started_ns = 0
        self.timeout_s: float | None = None

    async def send(self, text, *, timeout_s=None, expect="completed"):
        self.started_ns, self.timeout_s = time.monotonic_ns(), timeout_s
        await asyncio.sleep(self.SPAWN_S)  # at least this long: the spawn is slow, however loaded

    async def idle(self) -> None:
        return None

    async def exited(self) -> ProcessExit:
        assert self.timeout_s is not None
        ended = self.started_ns + int((self.timeout_s + self.SPAWN_S / 2) * 1e9)
        return ProcessExit(pid=4242, role="run", started_ns=self.started_ns, ended_ns=ended, returncode=3,
                           signal=None, expect="timeout", timeout_s=self.timeout_s)

    def processes(self):
        return []

    def transcript(self) -> str:
        return ""


async def test_a_timeout_lost_to_a_slow_spawn_is_not_exercised_not_the_agents_failure():
    """The agent's own --timeout counts from its spawn: the harness's moment for it must too,
    not from when the slow spawn returned (then the agent's exit looked early: its failure)."""
    driver = _SlowSpawn()
    run = TaskRun(profile=load_profile("reference"), driver=driver, server=SimpleNamespace(records=Records()),
                  history=History(), reader=None)
    steps = (Step(do="send", args={"text": "Run the long job.", "timeout": 2, "expect": "timeout"}, index=1),
             Step(do="wait", args={"for": "window", "window": "w1"}, index=2))
    with pytest.raises(NotExercised, match=r"the turn's timeout fell due at \+2000 ms, before window w1"):
        await play(run, steps, Budgets())


async def test_a_retry_lengthens_a_timeout_the_profile_raised_to_its_floor():
    """A profile's floor (min_run_timeout) is the T a slow starter is given; a retry must give
    it more than that, or every try of an agent still too slow for the floor loses the same race."""
    driver = _SlowSpawn()
    reference = load_profile("reference")
    profile = dataclasses.replace(reference, budgets=dataclasses.replace(reference.budgets, min_run_timeout=20.0))
    run = TaskRun(profile=profile, driver=driver, server=SimpleNamespace(records=Records()),
                  history=History(), reader=None, timeout_factor=RETRY_TIMEOUT_FACTOR)
    steps = (Step(do="send", args={"text": "Run the long job.", "timeout": 2, "expect": "timeout"}, index=1),)
    await play(run, steps, Budgets())
    assert driver.timeout_s == 20.0 * RETRY_TIMEOUT_FACTOR
