"""``--keep`` keeps run folders that hold the run's key (the profile's files, the agent's
sessions): every kept folder is 0700 and every kept file its owner's alone, whatever the
umask — also a ``runs`` folder an earlier run left readable."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from harness.cli import main


@pytest.mark.slow(reason="a stopbench run of the reference agent")
def test_kept_run_folders_and_files_are_the_owners_alone(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir(mode=0o755)
    os.chmod(runs, 0o755)  # left world-readable by an earlier run
    old = os.umask(0o002)  # an umask that leaves files readable by everyone
    try:
        assert main(["run", "--keep", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(tmp_path)]) == 0
    finally:
        os.umask(old)
    [task] = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["tasks"]
    kept = Path(task["evidence"]["run_dir"])
    everything = [runs, *runs.rglob("*")]
    assert kept in everything and any(p.is_file() for p in kept.rglob("*"))
    readable = {str(p): oct(stat.S_IMODE(p.lstat().st_mode)) for p in everything
                if not p.is_symlink() and stat.S_IMODE(p.lstat().st_mode) & 0o077}
    assert readable == {}
    assert stat.S_IMODE(runs.stat().st_mode) == 0o700 and stat.S_IMODE(kept.stat().st_mode) == 0o700
