"""What a dead harness left is swept by the next run, and only what a dead harness left.

A harness SIGKILLed in the middle of a task run leaves the run's cgroup (frozen, if another
run was timing something), the agent and its tool window (one child ignoring SIGTERM, one in
a session of its own) and the run folder. The next ``stopbench run`` ends and removes them and
says so; a live harness's run is never touched.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
from containment_testkit import SCENARIO, TASK, TrialCgroup

from harness.containment import Containment
from harness.containment.procs import ProcRef, kill_all, wait_gone
from harness.containment.stale import owner_gone, owner_tag, start_ticks, sweep
from harness.report import load_results
from harness.tasks import TASKS_DIR

UP_WAIT_S = 120.0  # failsafe: the window's tree is up within a task run's start


def harness(tasks: Path, task: str, report: Path, tmp: Path, cgroup: TrialCgroup) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness", "run", "--tasks-dir", str(tasks), "--task", task,
                             "--adapter", "http", "--report-dir", str(report)],
                            env={**os.environ, "TMPDIR": str(tmp)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=cgroup.join, start_new_session=True)


def windows_in(cgroup: TrialCgroup) -> int:
    count = 0
    for pid in cgroup.pids():
        try:
            count += "fake_server.window" in " ".join(psutil.Process(pid).cmdline())
        except psutil.Error:
            continue
    return count


def test_the_next_run_sweeps_what_a_killed_harness_left(tmp_path: Path):
    tasks = tmp_path / "tasks"
    (tasks / "holds-a-window").mkdir(parents=True)
    (tasks / "holds-a-window" / "scenario.toml").write_text(SCENARIO)
    (tasks / "holds-a-window" / "task.toml").write_text(TASK)
    shutil.copytree(TASKS_DIR / "exit-codes", tasks / "exit-codes")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    cgroup = TrialCgroup()
    try:
        first = harness(tasks, "holds-a-window", tmp_path / "first", tmp, cgroup)
        deadline = time.monotonic() + UP_WAIT_S
        while windows_in(cgroup) < 4 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # root, child, TERM-ignorer, setsid escapee
        assert windows_in(cgroup) >= 4, first.communicate(timeout=UP_WAIT_S)[0].decode()
        [run_cgroup] = cgroup.dirs()[1:]
        (run_cgroup / "cgroup.freeze").write_text("1")  # as if another run were timing something
        first.kill()
        first.communicate(timeout=UP_WAIT_S)
        left = cgroup.left()
        assert any(x.startswith("process") for x in left) and [p.name for p in tmp.iterdir()], left

        second = harness(tasks, "exit-codes", tmp_path / "second", tmp, cgroup)
        out, _ = second.communicate(timeout=UP_WAIT_S)
        text = out.decode(errors="replace")
        assert second.returncode == 0, text
        assert "what dead runs left was ended and removed: 1 cgroup(s) (1 frozen), 1 run folder(s)" in text, text
        assert cgroup.left() == [] and list(tmp.iterdir()) == [], (cgroup.left(), text)
        swept = load_results(tmp_path / "second" / "results.json").run["swept"]
        assert swept["cgroups"] == [str(run_cgroup)] and len(swept["processes"]) >= 5, swept
    finally:
        cgroup.remove()


def test_a_live_harness_run_and_an_unowned_folder_are_never_swept(tmp_path: Path):
    root = tmp_path / "run"
    (root / "work").mkdir(parents=True)
    mine = tmp_path / f"stopbench-{owner_tag()}-abc"  # this process owns it, and lives
    unowned = tmp_path / "stopbench-d67da37e63714016"  # nothing names an owner: nothing proves it dead
    for folder in (mine, unowned):
        folder.mkdir()
    containment = Containment.open(root, owner_tag())
    sleeper = subprocess.Popen(["sleep", "300"], env={**os.environ, **containment.env}, cwd=root / "work",
                               preexec_fn=containment.preexec(), start_new_session=True)
    try:
        report = sweep(tmp_path)
        assert not report, report.to_json()
        assert sleeper.poll() is None and mine.is_dir() and unowned.is_dir()
        assert containment.cgroup is None or containment.cgroup.is_dir()
    finally:
        containment.end()
        containment.close()
        kill_all([ProcRef.of(sleeper.pid)])
        sleeper.wait()


def test_a_dead_owner_is_told_from_a_live_one_by_start_time_not_pid():
    """A PID taken over by another process does not keep a dead owner's runs alive."""
    pid = os.getpid()
    assert not owner_gone(f"o{pid}-{start_ticks(pid)}-ab")
    assert owner_gone(f"o{pid}-{(start_ticks(pid) or 0) + 1}-ab")
    assert not owner_gone("d67da37e63714016")


def test_the_strays_of_a_dead_run_without_a_cgroup_are_ended(tmp_path: Path):
    """An env-tag run's processes (no cgroup holds them): one carrying the dead run's tag, one
    that cleared its environment but works in the dead run's folder."""
    owner = subprocess.Popen(["sleep", "300"])
    dead = f"o{owner.pid}-{start_ticks(owner.pid)}-ab"
    owner.kill()
    owner.wait()
    folder = tmp_path / f"stopbench-{dead}-x"
    folder.mkdir()
    tagged = subprocess.Popen(["sleep", "300"], env={"STOPBENCH_RUN": dead}, cwd=tmp_path, start_new_session=True)
    working = subprocess.Popen(["sleep", "300"], env={}, cwd=folder, start_new_session=True)
    strays = [ProcRef.of(p.pid) for p in (tagged, working)]
    try:
        report = sweep(tmp_path)
        assert wait_gone(strays, deadline_s=30) is not None, report.to_json()
        assert sorted((p["pid"], p["how"]) for p in report.processes) == sorted(
            [(tagged.pid, "env-tag"), (working.pid, "cwd")])
        assert report.folders == [str(folder)] and not folder.exists()
    finally:
        kill_all(strays)
        for proc in (tagged, working):
            proc.wait()
