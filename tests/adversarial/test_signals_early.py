"""SIGINT, SIGTERM and SIGHUP at any moment of ``stopbench run``, its first second included.

Each trial starts ``stopbench run`` inside a cgroup of the test's own, so everything the run
starts (agents, tool windows, their run cgroups, which are made under the harness's own) is
found there afterwards, whatever became of it; and with TMPDIR a folder of the trial's own, so
every run folder is found there. It signals the harness at a random moment of the first five
seconds after the command's first instruction (seeded; the seed and moment are in the failure
message) — with SIGTERM, SIGINT,
SIGINT twice in quick succession (a double Ctrl-C) or SIGHUP (the terminal went away) — and
asserts the run exits 2 (cut short), prints no traceback, and leaves no process, no cgroup, no
run folder and no network namespace.

The moment is counted from when the command has its handlers (``/proc/<pid>/status`` shows
SIGTERM caught): the Python interpreter's own start-up before that (a few tens of milliseconds)
runs no code of the command's, and a signal then ends the process as it would any program's.

``STOPBENCH_SIGNAL_TRIALS`` sets the number of trials (default 4; the hardening target is 30)
and ``STOPBENCH_SIGNAL_SEED`` the seed.
"""

import os
import random
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from containment_testkit import SCENARIO, TASK, TrialCgroup

from harness.containment.stale import NETNS_DIR, NETNS_PREFIX

TRIALS = int(os.environ.get("STOPBENCH_SIGNAL_TRIALS", "4"))
SEED = int(os.environ.get("STOPBENCH_SIGNAL_SEED", str(secrets.randbits(32))))
EARLIEST_S, LATEST_S = 0.0, 5.0
SECOND_SIGNAL_S = 0.2      # a double Ctrl-C: the second this soon after the first
EXIT_WAIT_S = 120.0        # failsafe: the harness ends its runs within its containment budget
KINDS = ("SIGTERM", "SIGINT", "SIGINT-twice", "SIGHUP")

def handlers_installed(pid: int) -> bool:
    """Whether the process catches SIGTERM: the command's first instruction installs that."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def signal_at(proc: subprocess.Popen, kind: str, delay_s: float) -> None:
    """Once the command runs, wait ``delay_s`` (the random moment itself, not a wait for an
    effect), then signal."""
    deadline = time.monotonic() + EXIT_WAIT_S
    while not handlers_installed(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.0005)  # polls the process's state for its handlers
    time.sleep(delay_s)
    if kind in ("SIGTERM", "SIGHUP"):
        proc.send_signal(getattr(signal, kind))
        return
    proc.send_signal(signal.SIGINT)
    if kind == "SIGINT-twice":
        time.sleep(SECOND_SIGNAL_S)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)


def namespaces_of(pid: int) -> list[str]:
    """The network namespaces the harness ``pid`` made for its runs (named after it) still there."""
    names = os.listdir(NETNS_DIR) if NETNS_DIR.exists() else []
    return [f"network namespace {n}" for n in names if n.startswith(f"{NETNS_PREFIX}o{pid}-")]


@pytest.mark.parametrize("trial", range(TRIALS))
def test_a_signal_at_any_moment_cuts_the_run_short_and_leaves_nothing(tmp_path: Path, trial: int):
    rng = random.Random(SEED * 1000 + trial)
    kind, delay_s = KINDS[trial % len(KINDS)], rng.uniform(EARLIEST_S, LATEST_S)
    what = f"trial {trial} (seed {SEED}): {kind} at {delay_s:.3f} s"
    tasks = tmp_path / "tasks" / "holds-a-window"
    tasks.mkdir(parents=True)
    (tasks / "scenario.toml").write_text(SCENARIO)
    (tasks / "task.toml").write_text(TASK)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    cgroup = TrialCgroup()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--tasks-dir", str(tasks.parent),
                                 "--adapter", "http", "--report-dir", str(tmp_path / "report")],
                                env={**os.environ, "TMPDIR": str(tmp)}, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, preexec_fn=cgroup.join, start_new_session=True)
        try:
            signal_at(proc, kind, delay_s)
            out, _ = proc.communicate(timeout=EXIT_WAIT_S)
        finally:
            proc.kill()
            proc.wait()
        text = out.decode(errors="replace")
        left = cgroup.left() + [f"folder {p.name}" for p in tmp.iterdir()] + namespaces_of(proc.pid)
        problems = ([f"exit {proc.returncode}, not 2"] if proc.returncode != 2 else []) + (
            ["a traceback"] if "Traceback" in text else []) + [f"left behind: {x}" for x in left]
        assert problems == [], f"{what}: {problems}\n{text}"
    finally:
        cgroup.remove()
