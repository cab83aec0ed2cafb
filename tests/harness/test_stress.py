"""benchmarks/stress.py: its hogs end on their own, with the script, and by PID; its reading of
pytest's summary and of the results (flips, retries, task errors)."""

import importlib.util
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("stress", ROOT / "benchmarks" / "stress.py")
assert spec is not None and spec.loader is not None
stress = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stress)


def task(name, adapter, repeat, **outcomes):
    return {"task": name, "adapter": adapter, "repeat": repeat, "mutant": None, "status": "ran", "reason": None,
            "checks": [{"check": c, "outcome": o} for c, o in outcomes.items()]}


@pytest.mark.slow(reason="a CPU hog runs to its time bound")
def test_a_hog_ends_at_its_time_bound_and_by_pid():
    bounded, other = stress.start_hogs(1, 1) + stress.start_hogs(1, 600)
    try:
        assert bounded.wait(timeout=30) == -signal.SIGALRM
        assert other.poll() is None
    finally:
        stress.end_hogs([bounded, other])
    assert other.returncode == -signal.SIGKILL


def test_a_hog_dies_with_the_script():
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import stress; "
            "print(stress.start_hogs(1, 600)[0].pid, flush=True); sys.stdin.read()")
    script = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    hog = None
    try:
        assert script.stdout is not None
        hog = int(script.stdout.readline())
        fd = os.pidfd_open(hog)
        script.kill()
        script.wait()
        try:
            assert select.select([fd], [], [], 30)[0] == [fd]  # readable: the hog exited
        finally:
            os.close(fd)
    finally:
        script.kill()
        script.wait()
        if hog is not None:
            try:
                os.kill(hog, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_flips_are_checks_whose_outcome_differs_between_repeats():
    tasks = [task("interrupt-cancel[terminal]", "http", 1, C1="pass", C3="pass"),
             task("interrupt-cancel[terminal]", "http", 2, C1="pass", C3="fail"),
             task("interrupt-cancel[terminal]", "http", 3, C1="pass", C3="fail"),
             task("interrupt-cancel[terminal]", "inproc", 1, C3="fail"),  # another adapter: no flip with http
             task("exit-codes", "http", 1, C8="pass")]
    assert stress.flips(tasks) == [
        "interrupt-cancel[terminal] on http: C3: fail in repeats 2,3, pass in repeat 1"]


def test_retries_and_task_errors_are_read_from_the_task_runs():
    tasks = [dict(task("t", "http", 1), attempts=[{"reason": "the window closed first", "duration_s": 1.0}] * 2),
             task("t", "http", 2),
             dict(task("t", "http", 3), status="errored", reason="harness error: OSError"),
             dict(task("t", "http", 4), error="the task could not complete")]  # results of an older harness
    assert stress.retries(tasks) == ["t on http #1: 2 (the window closed first)"]
    assert stress.task_errors(tasks) == ["t on http #3: harness error: OSError",
                                         "t on http #4: the task could not complete"]
    assert stress.retries(tasks[1:2]) == stress.task_errors(tasks[1:2]) == []


def test_failures_come_from_pytest_s_short_summary():
    lines = ["FAILED looks like a test but is output", "=== short test summary info ===",
             "FAILED tests/a.py::test_x - AssertionError", "ERROR tests/b.py::test_y", "1 failed, 1 error"]
    assert stress.failures_of(1, lines) == ["FAILED tests/a.py::test_x - AssertionError", "ERROR tests/b.py::test_y"]
    assert stress.failures_of(1, ["...", "left behind by the test session", "  process 1"]) == [
        "the test run exited 1: ... / left behind by the test session /   process 1"]
    assert stress.failures_of(0, ["10 passed"]) == []
