"""A task run cancelled while its containment or its network namespace is being opened (a
signal in the first moments of a run) leaves no run folder, no cgroup and no namespace: the
opening, which runs in a thread and cannot be stopped, is let finish and undone."""

import asyncio
import os
import tempfile
import threading
from pathlib import Path

import pytest

from harness.containment import Containment
from harness.containment.stale import NETNS_DIR, NETNS_PREFIX
from harness.offline import HostNetwork
from harness.profiles import load_profile
from harness.run import runner
from harness.run.planning import WorkItem
from harness.run.runner import run_once
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

    asyncio.run(cancel_mid_setup(item, opening, release))
    assert len(opened) == 1
    assert list(tmp_path.iterdir()) == []
    assert opened[0].cgroup is None or not opened[0].cgroup.exists()
    assert own_namespaces() == []


def test_a_run_cancelled_while_its_network_opens_leaves_no_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    opening, release = threading.Event(), threading.Event()
    opened: list[HostNetwork] = []
    real_open = runner.open_network

    def slow_open(*args, **kwargs) -> HostNetwork:
        opening.set()
        release.wait(OPEN_WAIT_S)
        opened.append(real_open(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(runner, "open_network", slow_open)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    item = WorkItem(load_task(TASKS_DIR / "exit-codes"), "subprocess", "http", 1)
    asyncio.run(cancel_mid_setup(item, opening, release))
    assert len(opened) == 1
    assert list(tmp_path.iterdir()) == []
    assert own_namespaces() == []


async def cancel_mid_setup(item: WorkItem, opening: threading.Event, release: threading.Event) -> None:
    run = asyncio.ensure_future(run_once(load_profile("reference"), item))
    await asyncio.to_thread(opening.wait, OPEN_WAIT_S)
    run.cancel()  # while the opening still waits: the run's await of it is what is cancelled
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await run


def own_namespaces() -> list[str]:
    """The network namespaces this process's runs made that are still there."""
    names = os.listdir(NETNS_DIR) if NETNS_DIR.exists() else []
    return [n for n in names if n.startswith(f"{NETNS_PREFIX}o{os.getpid()}-")]
