"""When the harness (or the agent reading a tool) dies, the processes below it neither linger
nor print tracebacks: a window whose reader is gone still ends quietly, and the null agent
the harness measures the machine with exits with the harness."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from harness.containment.procs import ProcRef, kill_all, wait_gone
from harness.timing.machine import NULL_AGENT

EXIT_WAIT_S = 30.0  # failsafe: each waits on an exit that follows at once


def test_a_window_whose_reader_went_away_ends_quietly(tmp_path: Path):
    marker = tmp_path / "done"
    window = subprocess.Popen([sys.executable, "-m", "fake_server.window", "--id", "w1", "--hold", "1",
                               "--marker", str(marker)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert window.stdout is not None and window.stdout.readline().startswith(b"window w1: open")
        window.stdout.close()  # the agent that ran the tool is gone
        _, err = window.communicate(timeout=EXIT_WAIT_S)
    finally:
        window.kill()
        window.wait()
    assert (window.returncode, err.decode()) == (0, "") and marker.is_file()


def test_the_null_agent_exits_when_the_harness_dies():
    parent = subprocess.Popen([sys.executable, "-c", "from harness.timing.machine import null_agent_costs\n"
                                                     "while True: null_agent_costs()"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    child: ProcRef | None = None
    try:
        deadline = time.monotonic() + EXIT_WAIT_S
        while child is None and time.monotonic() < deadline:
            for proc in psutil.Process(parent.pid).children():
                try:
                    if NULL_AGENT in proc.cmdline():
                        child = ProcRef.of(proc.pid)
                except psutil.Error:
                    continue
            time.sleep(0.005)  # polls the process table for the null agent to be started
        assert child is not None, "the null agent never started"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert wait_gone([child], deadline_s=EXIT_WAIT_S) is not None, "the null agent outlived the harness"
        assert parent.stderr is not None and b"Traceback" not in parent.stderr.read()
    finally:
        parent.kill()
        parent.wait()
        if child is not None:
            kill_all([child])
