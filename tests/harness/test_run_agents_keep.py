"""``stopbench run --keep`` keeps each task run's folder and says where; ``--agents installed``
runs every built-in profile whose real agent is installed, in turn, into one leaderboard."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.agents.install import MARKER
from harness.cli import main
from harness.cli import run as cli_run
from harness.cli.run import installed_profiles


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("STOPBENCH_CACHE", str(root))
    return root


def fake_install(cache: Path, name: str, version: str, program: str) -> None:
    folder = cache / "agents" / f"{name}-{version}"
    (folder / program).parent.mkdir(parents=True)
    (folder / program).write_text("#!/bin/sh\n", encoding="utf-8")
    os.chmod(folder / program, 0o755)
    (folder / MARKER).write_text(json.dumps({"name": name, "version": version, "binary": program}), encoding="utf-8")


def test_installed_profiles_are_those_whose_agent_is_installed(cache):
    assert installed_profiles() == []
    fake_install(cache, "llm", "0.36", "venv/bin/llm")
    fake_install(cache, "aider", "0.86.2", "venv/bin/aider")
    fake_install(cache, "kimi-cli", "1.0.0", "venv/bin/kimi")  # not the pinned version: not the profile's
    assert installed_profiles() == ["aider", "llm"]


def test_agents_installed_with_none_installed_says_how_to_install(cache, tmp_path, capsys):
    assert main(["run", "--agents", "installed", "--report-dir", str(tmp_path / "r")]) == 2
    assert "no built-in profile's agent is installed" in capsys.readouterr().err
    assert main(["run", "--agents", "installed", "--agent", "llm", "--report-dir", str(tmp_path / "r")]) == 2
    assert "drop --agent" in capsys.readouterr().err


@pytest.mark.slow(reason="stopbench runs of two agents")
def test_agents_installed_runs_each_into_one_leaderboard_and_keep_keeps_the_run_folders(tmp_path, monkeypatch,
                                                                                        capsys):
    monkeypatch.setattr(cli_run, "installed_profiles", lambda: ["reference"])
    report = tmp_path / "board"
    code = main(["run", "--agents", "installed", "--keep", "--task", "exit-codes", "--adapter", "http",
                 "--report-dir", str(report)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "agents installed: reference" in out
    assert (report / "leaderboard.md").is_file() and (report / "reference" / "results.json").is_file()
    runs = report / "reference" / "runs"
    assert f"run folders kept in {runs.resolve()}" in out
    [task] = json.loads((report / "reference" / "results.json").read_text(encoding="utf-8"))["tasks"]
    kept = Path(task["evidence"]["run_dir"])
    assert kept == runs.resolve() / "exit-codes-http-r1-try1"
    assert {p.name for p in kept.iterdir()} == {"home", "sessions", "work"}
    assert [p.suffix for p in (kept / "sessions").iterdir()] == [".jsonl"]  # the agent's session is still there


@pytest.mark.slow(reason="a stopbench run of an agent")
def test_without_keep_no_run_folder_stays(tmp_path, capsys):
    assert main(["run", "--task", "exit-codes", "--adapter", "http", "--report-dir", str(tmp_path)]) == 0
    assert not (tmp_path / "runs").exists()
    [task] = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["tasks"]
    assert "run_dir" not in task["evidence"]
