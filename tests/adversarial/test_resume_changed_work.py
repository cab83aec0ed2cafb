"""``--resume`` continues only the same work: a changed profile, task or scenario since
the earlier results were written is refused (exit 2, naming what changed), never inherited."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness import cli
from harness.profiles import BUILTIN_DIR
from harness.run import session
from harness.tasks import TASKS_DIR


async def _no_floor() -> int:
    return 0  # the stopwatch's floor is not what these tests measure


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A profile and a task folder of our own, and a runner that runs nothing (the earlier
    results need only the run's header); the task runs it was asked for, recorded."""
    profile = tmp_path / "reference.toml"
    shutil.copy(BUILTIN_DIR / "reference.toml", profile)
    tasks = tmp_path / "tasks"
    shutil.copytree(TASKS_DIR / "exit-codes", tasks / "exit-codes")
    asked: list[list[str]] = []

    async def run_all(profile, todo, **kwargs):
        asked.append([i.key for i in todo])

    monkeypatch.setattr(session, "run_all", run_all)
    monkeypatch.setattr(session, "null_agent_costs", dict)  # what the machine costs is beside the point here
    monkeypatch.setattr(session, "quick_floor_async", _no_floor)
    argv = ["run", "--agent", str(profile), "--tasks-dir", str(tasks), "--adapter", "http",
            "--report-dir", str(tmp_path / "reports")]
    cli.main(argv)
    assert len(asked) == 1
    return argv, profile, tasks / "exit-codes", tmp_path / "reports" / "results.json", asked


def resume(argv: list[str], results: Path) -> list[str]:
    return [*argv, "--resume", str(results)]


def test_resuming_the_same_work_goes_on(work, capsys):
    argv, _, _, results, asked = work
    cli.main(resume(argv, results))
    assert len(asked) == 2 and "cannot resume" not in capsys.readouterr().err


@pytest.mark.parametrize("change,named", [
    ("profile", "the profile changed"),
    ("task", "task exit-codes changed"),
    ("scenario", "scenario of task exit-codes changed"),
])
def test_resuming_after_a_change_is_refused_naming_it(work, change, named, capsys):
    argv, profile, task, results, asked = work
    edited = {"profile": profile, "task": task / "task.toml", "scenario": task / "scenario.toml"}[change]
    edited.write_text(edited.read_text() + "\n# edited after the first run\n")
    assert cli.main(resume(argv, results)) == 2
    err = capsys.readouterr().err
    assert f"{results}: cannot resume: {named};" in err
    assert len(asked) == 1  # nothing ran


def test_results_without_digests_are_not_resumed(work, capsys):
    import json

    argv, _, _, results, asked = work
    data = json.loads(results.read_text())
    del data["run"]["digests"]
    results.write_text(json.dumps(data))
    assert cli.main(resume(argv, results)) == 2
    assert "record no digests" in capsys.readouterr().err and len(asked) == 1
