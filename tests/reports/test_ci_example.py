"""The example CI workflow fits the commands it calls."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from harness.model.sharding import shard_items

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = yaml.safe_load((ROOT / "examples/ci/stopbench.yml").read_text())


def commands(job: dict) -> list[str]:
    return [" ".join(step["run"].split()) for step in job["steps"] if "run" in step]


def test_matrix_of_shards_covers_every_share():
    run = WORKFLOW["jobs"]["run"]
    shards = run["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    assert WORKFLOW["env"]["SHARDS"] == str(len(shards))
    (cmd,) = [c for c in commands(run) if c.startswith("stopbench run")]
    assert "--shard ${{ matrix.shard }}/${{ env.SHARDS }}" in cmd
    items = list(range(40))
    assert sorted(i for k in shards for i in shard_items(items, k, len(shards))) == items


def test_merge_report_gate_and_artifact():
    job = WORKFLOW["jobs"]["merge-and-gate"]
    assert job["needs"] == "run"
    cmds = commands(job)
    merge = next(c for c in cmds if c.startswith("stopbench report merge"))
    assert shlex.split(merge)[-2:] == ["-o", "reports/results.json"]
    report = next(c for c in cmds if c.startswith("stopbench report reports/results.json"))
    assert "--html reports/report.html" in report
    gate = next(c for c in cmds if c.startswith("stopbench gate"))
    assert re.search(r"--baseline \S+ --current reports/results\.json", gate)
    assert "--md reports/gate.md" in gate
    uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert any("reports/report.html" in s["with"]["path"] for s in uploads)


def test_the_gate_table_is_written_before_the_upload_and_uploaded():
    steps = WORKFLOW["jobs"]["merge-and-gate"]["steps"]
    gate = next(n for n, s in enumerate(steps) if s.get("run", "").startswith("stopbench gate"))
    upload = next(n for n, s in enumerate(steps) if "reports/report.html" in s.get("with", {}).get("path", ""))
    assert gate < upload
    assert "reports/gate.md" in steps[upload]["with"]["path"]
    assert steps[gate].get("continue-on-error") is True  # a regression still uploads, then fails the job
    assert any("exit 1" in s.get("run", "") and s.get("if") == "steps.gate.outcome == 'failure'"
               for s in steps[upload + 1:])


def test_stopbench_is_installed_from_its_repository_not_from_the_agents_checkout():
    for job in WORKFLOW["jobs"].values():
        installs = [c for c in commands(job) if "pip install" in c]
        assert installs and all("-e ." not in c and '"$STOPBENCH"' in c for c in installs)
    assert WORKFLOW["env"]["STOPBENCH"].startswith("git+https://")
