"""A run cut short while another run holds the stopwatch (``--jobs``: the other is timing
something, this one is paused) ends its processes and removes its folder at once: its
clean-up, which runs to its end whatever else is cancelled, does not wait for the span."""

import asyncio
import tempfile
from pathlib import Path

import psutil
import pytest
from containment_testkit import SCENARIO, TASK

from harness.containment.procs import ProcRef, leftovers
from harness.profiles import load_profile
from harness.run.planning import WorkItem
from harness.run.runner import run_once
from harness.tasks import load_task
from harness.timing.alone import Stopwatch

WAIT_S = 30.0  # failsafe: the window opens within a turn; the clean-up takes milliseconds


def window_processes() -> list[ProcRef]:
    refs = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if "fake_server.window" in " ".join(proc.cmdline()):
                refs.append(ProcRef.of(proc.pid))
        except psutil.Error:
            continue
    return refs


def test_a_run_cancelled_while_paused_for_another_runs_span_cleans_up_at_once(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "tasks" / "holds-a-window").mkdir(parents=True)
    (tmp_path / "tasks" / "holds-a-window" / "scenario.toml").write_text(SCENARIO)
    (tmp_path / "tasks" / "holds-a-window" / "task.toml").write_text(TASK)
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(runs))
    item = WorkItem(load_task(tmp_path / "tasks" / "holds-a-window"), "subprocess", "http", 1)

    async def scenario() -> list[ProcRef]:
        stopwatch = Stopwatch()
        run = asyncio.ensure_future(run_once(load_profile("reference"), item, stopwatch=stopwatch))
        async with asyncio.timeout(WAIT_S):
            while len(windows := await asyncio.to_thread(window_processes)) < 4:
                await asyncio.sleep(0.01)  # polls the process table for the window's tree
        timing = stopwatch.join(lambda deadline: False, lambda: None)  # another run, timing a span
        await timing.take()
        run.cancel()
        done, _ = await asyncio.wait({run}, timeout=WAIT_S)
        await timing.leave()  # the span ends: a clean-up that waited for it goes on, and nothing is left
        with pytest.raises(asyncio.CancelledError):
            await run
        return windows, bool(done)

    windows, cleaned_up_during_the_span = asyncio.run(scenario())
    assert cleaned_up_during_the_span, "the cancelled run's clean-up waited for another run's span"
    assert leftovers(windows) == [] and list(runs.iterdir()) == []
