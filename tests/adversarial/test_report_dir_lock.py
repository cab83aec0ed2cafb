"""Two runs into one ``--report-dir``: the second refuses before it starts, naming the
holder; a lock left by a dead run is taken over, and said so. Two writers of one file
never share a temporary name."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness import cli
from harness.report import writer
from harness.report.folder_lock import LOCK_NAME, FolderLocked, hold_folder
from harness.run import session

HOLD = """
import sys
from pathlib import Path
from harness.report.folder_lock import hold_folder
with hold_folder(Path(sys.argv[1]), ["stopbench", "run", "--the-holder"], print):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def holder(tmp_path):
    """Another process holding ``tmp_path/reports`` until the test ends."""
    folder = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        yield folder, proc.pid
    finally:
        proc.communicate(input="", timeout=30)  # closes its stdin: it lets go and exits


def test_a_second_run_into_a_held_folder_refuses_before_any_task_run(holder, monkeypatch, capsys):
    folder, pid = holder
    started: list[object] = []
    monkeypatch.setattr(session, "run_all", lambda *a, **k: started.append(a))
    code = cli.main(["run", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(folder)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"pid {pid}" in err and "started 20" in err and "--the-holder" in err
    assert started == [] and not (folder / "results.json").exists()


def test_the_lock_is_the_holders_until_it_lets_go(tmp_path):
    with hold_folder(tmp_path, ["first"], print):
        with pytest.raises(FolderLocked, match=f"pid {os.getpid()}.*first"):
            with hold_folder(tmp_path, ["second"], print):
                pass
    with hold_folder(tmp_path, ["third"], print):  # let go: free again
        assert json.loads((tmp_path / LOCK_NAME).read_text())["argv"] == ["third"]
    assert not (tmp_path / LOCK_NAME).exists()


@pytest.mark.slow(reason="a stopbench run of the reference agent")
def test_a_lock_left_by_a_dead_run_is_taken_over_and_said_so(tmp_path, capsys):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    pid = int(dead.stdout)
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": pid, "started": "2026-01-01T00:00:00+00:00",
                                                  "host": "h", "argv": ["stopbench", "run"]}))
    code = cli.main(["run", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"taking over the lock of a run that is no longer running (pid {pid} on h" in err
    assert (tmp_path / "results.json").is_file() and not (tmp_path / LOCK_NAME).exists()


def test_two_writers_of_one_file_do_not_share_a_temporary_file(tmp_path, monkeypatch):
    """A second write of results.json that lands while the first is between its write and
    its rename (two runs, or a run and a merge) must not take the first's temporary file."""
    target = tmp_path / "results.json"
    real_replace = os.replace
    calls: list[str] = []

    def replace(src, dst):
        calls.append(str(src))
        if len(calls) == 1:
            writer.write_text(target, "second\n")  # lands between the first's write and its rename
        real_replace(src, dst)

    monkeypatch.setattr(writer.os, "replace", replace)
    writer.write_text(target, "first\n")
    assert target.read_text() == "first\n" and len(set(calls)) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
