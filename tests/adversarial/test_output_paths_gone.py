"""A report folder that goes away while a run works loses nothing: the checkpoint that
cannot be written is said once and the run goes on; the reports go to a new folder named
on stderr, and the run exits 2 (its results are not where it was asked to put them)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from harness import cli
from harness.run import session


@pytest.mark.slow(reason="a stopbench run of the reference agent")
def test_a_report_folder_replaced_by_a_file_mid_run_loses_no_result(tmp_path, monkeypatch, capsys):
    report_dir = tmp_path / "reports"
    real_run_all = session.run_all

    def run_all(*args, **kwargs):
        shutil.rmtree(report_dir, ignore_errors=True)
        report_dir.write_text("in the way\n")  # the folder is gone before the first task run ends
        return real_run_all(*args, **kwargs)

    monkeypatch.setattr(session, "run_all", run_all)
    code = cli.main(["run", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(report_dir)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count(f"cannot write the checkpoint into {report_dir}") == 1
    found = re.search(rf"cannot write the reports into {re.escape(str(report_dir))} \(.*\); they are in (\S+)", err)
    assert found, err
    rescue = Path(found.group(1))
    try:
        [task] = json.loads((rescue / "results.json").read_text())["tasks"]
        assert task["task"] == "exit-codes" and task["status"] == "ran"
        assert report_dir.read_text() == "in the way\n"
    finally:
        shutil.rmtree(rescue)
