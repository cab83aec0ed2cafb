"""Versions of a real agent as first-class: ``agents install NAME@VERSION``, ``run --agent
NAME@VERSION`` driving that installed version, and results that carry the agent's name and
version apart (the version driven, and what the program itself reports).

The installs are stand-in programs in a temporary ``STOPBENCH_CACHE``: a shell script that
prints a version for ``--version``, notes each run beside itself, and exits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness.agents.install import MARKER, get_agent, install_dir, split_version
from harness.cli import main
from harness.profiles import ProfileError, base_values, fill, load_profile
from harness.run.provenance import run_header

PROGRAM = "node_modules/.bin/claude"  # claude-code's program in its install folder
PIN = get_agent("claude-code").version
OTHER = "2.1.197"  # a release other than the pin


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("STOPBENCH_CACHE", str(root))
    return root


def stand_in(version: str) -> Path:
    """claude-code ``version`` installed as a stand-in; its runs are noted in ran.log beside it."""
    folder = install_dir("claude-code", version)
    program = folder / PROGRAM
    program.parent.mkdir(parents=True)
    program.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/ran.log"\n'
                       f'if [ "$1" = --version ]; then echo "{version} (Claude Code)"; fi\nexit 0\n', encoding="utf-8")
    program.chmod(0o755)
    (folder / MARKER).write_text(json.dumps({"name": "claude-code", "version": version, "binary": PROGRAM}),
                                 encoding="utf-8")
    return program


def runs_of(program: Path) -> list[str]:
    log = program.parent / "ran.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_name_at_version_splits_and_a_bare_name_means_the_pin():
    assert split_version("claude-code@2.1.332") == ("claude-code", "2.1.332")
    assert split_version("claude-code") == ("claude-code", None)
    for bad in ("claude-code@", "@2.1.332"):
        with pytest.raises(ValueError, match="NAME@VERSION"):
            split_version(bad)


def test_agent_bin_is_the_program_of_the_version_asked_for(cache):
    pinned, other = stand_in(PIN), stand_in(OTHER)
    assert base_values(load_profile("claude-code"))["agent_bin"] == str(pinned)
    values = base_values(load_profile(f"claude-code@{OTHER}"))
    assert values["agent_bin"] == str(other)
    assert values["agent_dir"] == str(install_dir("claude-code", OTHER))


def test_a_version_for_a_profile_without_a_catalog_agent_is_refused():
    with pytest.raises(ProfileError, match="drives no installable agent"):
        load_profile("reference@1.0")


def test_run_of_a_version_not_installed_names_the_install_command_before_any_task(cache, tmp_path, capsys):
    stand_in(PIN)
    report = tmp_path / "r"
    assert main(["run", "--agent", f"claude-code@{OTHER}", "--report-dir", str(report)]) == 2
    err = capsys.readouterr().err
    assert f"claude-code {OTHER} is not installed (run: stopbench agents install claude-code@{OTHER})" in err
    assert not report.exists()


def test_several_agents_are_all_checked_installed_before_the_first_runs(cache, tmp_path, capsys):
    program = stand_in(PIN)
    code = main(["run", "--agent", "claude-code", "--agent", f"claude-code@{OTHER}", "--task", "exit-codes",
                 "--report-dir", str(tmp_path / "r")])
    assert code == 2
    assert f"stopbench agents install claude-code@{OTHER}" in capsys.readouterr().err
    assert runs_of(program) == []  # not even the installed one ran


@pytest.mark.slow(reason="stopbench runs of a stand-in agent")
def test_run_drives_the_version_asked_for_and_results_carry_name_and_versions(cache, tmp_path, capsys):
    pinned, other = stand_in(PIN), stand_in(OTHER)
    report = tmp_path / "r"
    code = main(["run", "--agent", f"claude-code@{OTHER}", "--task", "exit-codes", "--driver", "subprocess",
                 "--report-dir", str(report)])
    assert code in (0, 1), capsys.readouterr().err  # a verdict, whatever the stand-in earns
    assert runs_of(pinned) == []
    assert runs_of(other)[0] == "--version" and len(runs_of(other)) > 1  # its version, then the task's turns
    data = json.loads((report / "results.json").read_text(encoding="utf-8"))
    assert (data["run"]["agent"], data["run"]["agent_version"]) == ("claude-code", OTHER)
    assert data["run"]["agent_version_reported"] == f"{OTHER} (Claude Code)"
    assert {t["agent"] for t in data["tasks"]} == {"claude-code"}


def test_run_header_of_the_pinned_install_and_of_a_profile_without_a_catalog_agent(cache):
    stand_in(PIN)
    header = run_header(load_profile("claude-code"), [], argv=[], repeat=1, shard=None, started="", ended="")
    assert (header["agent_version"], header["agent_version_reported"]) == (PIN, f"{PIN} (Claude Code)")
    reference = run_header(load_profile("reference"), [], argv=[], repeat=1, shard=None, started="", ended="")
    assert reference["agent_version"] == reference["agent_version_reported"] != "unknown"


def test_agents_install_takes_name_at_version_and_still_takes_the_version_option(monkeypatch, capsys):
    asked = []
    module = sys.modules["harness.agents.install"]  # the package's name `install` is the function
    monkeypatch.setattr(module, "install", lambda name, version, **_: asked.append((name, version)))
    assert main(["agents", "install", f"claude-code@{OTHER}"]) == 0
    assert main(["agents", "install", "claude-code", "--version", OTHER]) == 0
    assert main(["agents", "install", "claude-code"]) == 0
    assert asked == [("claude-code", OTHER), ("claude-code", OTHER), ("claude-code", None)]
    assert main(["agents", "install", f"claude-code@{OTHER}", "--version", "1.0"]) == 2
    assert "name two versions" in capsys.readouterr().err
    assert len(asked) == 3


def test_agents_path_of_name_at_version(cache, capsys):
    program = stand_in(OTHER)
    assert main(["agents", "path", f"claude-code@{OTHER}"]) == 0
    assert capsys.readouterr().out.strip() == str(program)
    assert main(["agents", "path", "claude-code"]) == 2
    assert "run: stopbench agents install claude-code)" in capsys.readouterr().err


def test_resume_refuses_results_of_another_version(cache, tmp_path, capsys):
    stand_in(OTHER)
    earlier = tmp_path / "results.json"
    earlier.write_text(json.dumps({
        "format": "stopbench-results", "version": 2, "tasks": [], "latencies": [],
        "run": {"agent": "claude-code", "agent_version": PIN, "agent_version_reported": f"{PIN} (Claude Code)"}}),
        encoding="utf-8")
    assert main(["run", "--agent", f"claude-code@{OTHER}", "--resume", str(earlier),
                 "--report-dir", str(tmp_path / "r")]) == 2
    assert f"results of claude-code {PIN}, not {OTHER}" in capsys.readouterr().err


def test_a_profile_names_the_version_it_drives_in_its_own_values(cache):
    folder = install_dir("copilot", "1.0.200")
    program = folder / "node_modules/@github/copilot-linux-x64/copilot"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(0o755)
    (folder / MARKER).write_text('{"name": "copilot"}', encoding="utf-8")
    profile = load_profile("copilot@1.0.200")
    assert fill(profile.env["COPILOT_CLI_DIST_DIR"], base_values(profile)) == \
        f"{folder}/cache/copilot/pkg/linux-x64/1.0.200"  # what its warm-up unpacked for that version


@pytest.mark.slow(reason="stopbench runs of two releases of a stand-in agent")
def test_two_releases_run_in_turn_into_one_leaderboard_with_a_row_each(cache, tmp_path, capsys):
    stand_in(PIN), stand_in(OTHER)
    report = tmp_path / "board"
    code = main(["run", "--agent", "claude-code", "--agent", f"claude-code@{OTHER}", "--task", "exit-codes",
                 "--driver", "subprocess", "--report-dir", str(report)])
    assert code in (0, 1), capsys.readouterr().err
    versions = [json.loads((report / folder / "results.json").read_text(encoding="utf-8"))["run"]["agent_version"]
                for folder in ("claude-code", f"claude-code@{OTHER}")]
    assert versions == [PIN, OTHER]
    board = (report / "leaderboard.md").read_text(encoding="utf-8")
    assert f"claude-code@{PIN}" in board and f"claude-code@{OTHER}" in board
