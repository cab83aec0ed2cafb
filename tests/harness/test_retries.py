"""A race that did not happen is retried, each try giving the task's turn timeout more time:
a turn timeout must fall while the agent works, and a slowed-down agent may not be working yet."""

import asyncio
import re
import shutil

import pytest

from harness.model import RunStatus
from harness.planning import WorkItem
from harness.profiles import load_profile
from harness.runner import RETRY_TIMEOUT_FACTOR, run_item
from harness.tasks import TASKS_DIR, load_task


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
