"""Readers and profiles from outside the harness: a package offering entry points in the groups
``stopbench.readers`` and ``stopbench.profiles`` adds them, found through importlib.metadata
like any installed package's. The plug-in under tests/plugins/stopbench-standin/ reads the
stand-in agent's session documents; a dist-info made from its pyproject puts it on the path of
a real ``stopbench`` process. A broken plug-in is said, naming its distribution and entry
point, and fails only what names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tests" / "plugins" / "stopbench-standin"


def dist_info(site: Path, name: str, entry_points: dict[str, dict[str, str]]) -> None:
    """What installing a distribution leaves for importlib.metadata: METADATA and entry_points.txt."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) + "\n"
        for group, points in entry_points.items()), encoding="utf-8")


def plugin_site(tmp_path: Path) -> Path:
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    site = tmp_path / "site"
    dist_info(site, project["name"], project["entry-points"])
    return site


def stopbench(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(PLUGIN), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300, check=False)


@pytest.mark.slow(reason="one task run of the stand-in through `stopbench run` (a few seconds)")
def test_a_plugins_reader_and_profile_score_the_standin_end_to_end(tmp_path):
    site = plugin_site(tmp_path)
    listed = stopbench(site, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "standin-read" in [a["name"] for a in json.loads(listed.stdout)["agents"]]
    proc = stopbench(site, "run", "--agent", "standin-read", "--task", "exit-codes", "--report-dir", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [task] = json.loads((tmp_path / "r" / "results.json").read_text())["tasks"]
    assert task["status"] == "ran"
    checks = {c["check"]: c for c in task["checks"]}
    c1 = checks["C1"]  # decided on the session the plug-in's reader parsed, not left unknown for want of one
    assert c1["outcome"] == "pass" and c1["decided_by"] == "log", c1


def test_a_broken_plugin_is_said_naming_it_and_fails_only_what_names_it(tmp_path):
    site = tmp_path / "site"
    dist_info(site, "stopbench-broken", {"stopbench.readers": {"broken": "no_such_module:Reader"},
                                         "stopbench.profiles": {"broken": "no_such_package.profiles"}})
    listed = stopbench(site, "list")
    assert listed.returncode == 0 and "reference" in listed.stdout, listed.stderr
    profile = tmp_path / "p.toml"
    profile.write_text('name = "p"\nlog_reader = "broken"\n[headless]\ncommand = ["agent", "{prompt}"]\n',
                       encoding="utf-8")
    named = stopbench(site, "run", "--agent", str(profile), "--report-dir", str(tmp_path / "r"))
    assert named.returncode == 2 and "Traceback" not in named.stderr
    assert "log_reader" in named.stderr and "reader plug-in 'broken' of stopbench-broken" in named.stderr
    assert "no_such_module:Reader" in named.stderr and "ModuleNotFoundError" in named.stderr
    missing = stopbench(site, "run", "--agent", "nosuch", "--report-dir", str(tmp_path / "r2"))
    assert missing.returncode == 2 and "profile plug-in 'broken' of stopbench-broken" in missing.stderr
