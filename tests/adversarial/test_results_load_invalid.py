"""Loading results refuses what the format does not allow, naming the file and the item:
a version-2 task run without a status, a negative repeat, a duration that is NaN or
negative. Samples timed beside other runs (``concurrent_latencies``) are read, not dropped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reports"))

from report_builders import build_run  # noqa: E402

from harness.model import LatencySample  # noqa: E402
from harness.report import ResultsError, load_results  # noqa: E402
from harness.report.writer import results_text  # noqa: E402


def written(tmp_path, damage=None, run=None) -> Path:
    data = json.loads(results_text(run or build_run()))
    if damage:
        damage(data)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))  # NaN and Infinity written as Python's JSON writes them
    return path


@pytest.mark.parametrize("damage,item,problem", [
    (lambda d: d["tasks"][2].pop("status"), "tasks[2]", "missing field 'status'"),
    (lambda d: d["tasks"][1].update(repeat=-1), "tasks[1]", "repeat must be an integer >= 0, found -1"),
    (lambda d: d["tasks"][0].update(duration_s=float("nan")), "tasks[0]", "duration_s must be a number of seconds"),
    (lambda d: d["tasks"][0].update(duration_s=-2.5), "tasks[0]", "found -2.5"),
    (lambda d: d["tasks"][3].update(duration_s=float("inf")), "tasks[3]", "found inf"),
    (lambda d: d["tasks"][0].update(attempts=[{"reason": "r", "duration_s": float("nan")}]), "tasks[0].attempts[0]",
     "duration_s"),
    (lambda d: d["latencies"][1].update(repeat=-3), "latencies[1]", "repeat must be an integer >= 0"),
    (lambda d: d["tasks"][0]["timeline"][0].update(at_ms=float("nan")), "tasks[0].timeline[0]", "at_ms must be a number"),
])
def test_what_the_format_does_not_allow_is_refused_by_file_and_item(tmp_path, damage, item, problem):
    path = written(tmp_path, damage)
    with pytest.raises(ResultsError) as caught:
        load_results(path)
    assert str(caught.value).startswith(f"{path}: {item}: ") and problem in str(caught.value)


def test_a_version_1_task_without_status_still_reads(tmp_path):
    def old(d):
        d["version"] = 1
        for t in d["tasks"]:
            t.pop("status")
    assert load_results(written(tmp_path, old)).tasks


def test_samples_timed_beside_other_runs_are_read_back(tmp_path):
    run = build_run()
    apart = (LatencySample("L3", 1_000_000, "reference", "http", "interrupt-cancel", 1),)
    kept = type(run)(run.run, run.tasks, run.latencies, concurrent=apart)
    assert load_results(written(tmp_path, run=kept)).concurrent == apart
