"""A task run cancelled while its containment is being opened (a signal in the first moments
of a run) leaves no run folder and no cgroup: the opening, which runs in a thread and cannot be
stopped, is let finish and undone."""

import asyncio
import tempfile
import threading
from pathlib import Path

import pytest

from harness.containment import Containment
from harness.planning import WorkItem
from harness.profiles import load_profile
from harness.runner import run_once
from harness.tasks import TASKS_DIR, load_task

OPEN_WAIT_S = 60.0  # failsafe: the opening starts at once


def test_a_run_cancelled_while_its_containment_opens_leaves_no_folder_and_no_cgroup(tmp_path: Path,
                                                                                      monkeypatch: pytest.MonkeyPatch):
    opening, release = threading.Event(), threading.Event()
    opened: list[Containment] = []
    real_open = Containment.open

    def slow_open(*args, **kwargs) -> Containment:
        opening.set()
        release.wait(OPEN_WAIT_S)
        opened.append(real_open(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(Containment, "open", slow_open)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    item = WorkItem(load_task(TASKS_DIR / "exit-codes"), "subprocess", "http", 1)

    async def cancel_mid_setup() -> None:
        run = asyncio.ensure_future(run_once(load_profile("reference"), item))
        await asyncio.to_thread(opening.wait, OPEN_WAIT_S)
        run.cancel()  # while the opening still waits: the run's await of it is what is cancelled
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(cancel_mid_setup())
    assert len(opened) == 1
    assert list(tmp_path.iterdir()) == []
    assert opened[0].cgroup is None or not opened[0].cgroup.exists()
