"""``stopbench agents record`` on the stand-in agent (tests/standin/): each phase of a case is a
task ``stopbench run --keep`` plays with the agent's own profile; what the profile's
``log_glob`` finds in the kept run folder is copied, scrubbed of the run's key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.agents.record import RecordError, record_case
from harness.agents.scrub import CANARY, KEY_PLACEHOLDER

STANDIN = Path(__file__).resolve().parents[2] / "standin"


def leaky_standin(folder: Path) -> Path:
    """The stand-in's profile with its key-leak fault on (the key written into its store) and
    every file of the store found, so the scrubbing has a key to remove."""
    shutil.copy(STANDIN / "standin_agent.py", folder / "standin_agent.py")
    text = (STANDIN / "standin.toml").read_text(encoding="utf-8")
    text = text.replace('STANDIN_STORE = "{sessions_dir}"', 'STANDIN_STORE = "{sessions_dir}"\nSTANDIN_FAULTS = "key-leak"')
    text = text.replace('log_glob = "{sessions_dir}/*.json"', 'log_glob = "{sessions_dir}/*"')
    assert "key-leak" in text and 'log_glob = "{sessions_dir}/*"' in text
    (folder / "standin.toml").write_text(text, encoding="utf-8")
    return folder / "standin.toml"


@pytest.mark.slow(reason="two task runs of the stand-in through `stopbench run` (a few seconds)")
def test_kill_tool_keeps_the_store_the_killed_and_the_resumed_runs_left(tmp_path):
    profile = leaky_standin(tmp_path)
    dest = record_case(str(profile), "kill-tool", tmp_path / "out")
    assert dest == tmp_path / "out" / "standin" / "kill-tool"
    case = json.loads((dest / "case.json").read_text())
    assert [p["phase"] for p in case["phases"]] == ["killed", "resumed"]
    assert all(p["status"] == "ran" for p in case["phases"]), case
    for phase in case["phases"]:
        documents = [f for f in phase["files"] if f.endswith(".json")]
        assert documents and all(f.startswith("sessions/") for f in phase["files"])
        assert "sessions/debug-requests.txt" in phase["files"]  # the leak, kept scrubbed
        assert KEY_PLACEHOLDER in (dest / phase["phase"] / "sessions" / "debug-requests.txt").read_text()
    [killed] = [d for d in (dest / "killed" / "sessions").glob("*.json")]
    [resumed] = [d for d in (dest / "resumed" / "sessions").glob("*.json")]
    assert "follow-up" not in killed.read_text() and "follow-up" in resumed.read_text()
    assert not [p for p in dest.rglob("*") if p.is_file() and CANARY.search(p.read_bytes())]
    assert (dest / "scenario.toml").is_file()


def test_a_profile_without_a_store_glob_is_refused_before_any_run(tmp_path):
    text = (STANDIN / "standin.toml").read_text(encoding="utf-8").replace('log_glob = "{sessions_dir}/*.json"\n', "")
    (tmp_path / "standin.toml").write_text(text, encoding="utf-8")
    with pytest.raises(RecordError, match="no \\[session\\] log_glob"):
        record_case(str(tmp_path / "standin.toml"), "completed", tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", ["completed", "kill-tool", "kill-stream", "stop-tool"])
def test_every_phase_of_every_case_is_a_task_the_loader_takes(case, tmp_path):
    from harness.agents.scenarios import phases, scenario_text, task_text
    from harness.tasks import load_task

    for phase in phases(case):
        folder = tmp_path / f"record-{case}-{phase.name}"
        folder.mkdir()
        (folder / "task.toml").write_text(task_text(folder.name, phase), encoding="utf-8")
        (folder / "scenario.toml").write_text(scenario_text(case), encoding="utf-8")
        task = load_task(folder)
        assert task.name == folder.name and len(task.steps) == len(phase.steps)
