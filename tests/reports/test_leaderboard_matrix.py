"""The example leaderboard workflow (a job per agent, then one leaderboard) fits the commands it
calls, and a leaderboard rendered from separate per-agent runs is the one a single run of several
agents writes, apart from times and machines."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from harness import cli
from harness.profiles import builtin_names, load_profile
from harness.run import session

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = yaml.safe_load((ROOT / "examples/ci/leaderboard-matrix.yml").read_text())
STANDIN = ROOT / "tests/standin/standin.toml"
WHEN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")  # a run's started and ended


def commands(job: dict) -> list[str]:
    return [" ".join(step["run"].split()) for step in job["steps"] if "run" in step]


def test_the_matrix_is_every_built_in_profile_of_a_real_agent():
    agents = WORKFLOW["jobs"]["score"]["strategy"]["matrix"]["agent"]
    assert agents == sorted(n for n in builtin_names() if load_profile(n).agent)


def test_each_job_installs_scores_and_uploads_its_own_agent():
    job = WORKFLOW["jobs"]["score"]
    assert job["strategy"]["fail-fast"] is False
    cmds = commands(job)
    assert "stopbench agents install ${{ matrix.agent }}" in cmds
    (run,) = [c for c in cmds if c.startswith("stopbench run")]
    words = shlex.split(run.replace("${{ matrix.agent }}", "NAME"))
    assert words[words.index("--agent") + 1] == "NAME"
    assert words[words.index("--report-dir") + 1] == "reports/NAME"
    assert run.endswith("|| test $? -eq 1")  # not conformant is a score; a harness error fails the job
    (upload,) = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert upload["if"] == "always()"
    assert upload["with"]["name"] == "stopbench-${{ matrix.agent }}"
    assert upload["with"]["path"] == "reports/${{ matrix.agent }}/results.json"


def test_the_last_job_renders_one_leaderboard_from_every_agents_results():
    job = WORKFLOW["jobs"]["leaderboard"]
    assert job["needs"] == "score" and job["if"] == "always()"
    (download,) = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact")]
    assert download["with"]["pattern"] == "stopbench-*"
    folder = download["with"]["path"]
    (report,) = [c for c in commands(job) if c.startswith("stopbench report")]
    words = shlex.split(report)
    assert words[2] == f"{folder}/*/results.json"  # the artifact of each agent, in its own folder
    md, html = words[words.index("--md") + 1], words[words.index("--html") + 1]
    (upload,) = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert all(Path(out).parent.as_posix() + "/" == upload["with"]["path"] for out in (md, html))


async def _no_floor() -> dict:
    return {}  # the stopwatch's floor is not what this compares


@pytest.mark.slow(reason="stopbench runs of the reference agent and a stand-in agent, twice")
def test_separate_per_agent_runs_make_the_leaderboard_one_run_of_both_makes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(session, "null_agent_costs", dict)
    monkeypatch.setattr(session, "quick_floor_async", _no_floor)
    task = ["--task", "exit-codes", "--adapter", "http"]
    assert cli.main(["run", "--agent", "reference", "--agent", str(STANDIN), *task,
                     "--report-dir", str(tmp_path / "one")]) == 0
    for name, agent in (("reference", "reference"), ("standin", str(STANDIN))):
        assert cli.main(["run", "--agent", agent, *task, "--report-dir", str(tmp_path / "jobs" / name)]) == 0
    merged = tmp_path / "leaderboard.md"
    assert cli.main(["report", *(str(tmp_path / "jobs" / n / "results.json") for n in ("reference", "standin")),
                     "--md", str(merged)]) == 0
    capsys.readouterr()
    one = (tmp_path / "one" / "leaderboard.md").read_text()
    assert "| reference |" in one and "| standin |" in one
    assert WHEN.sub("WHEN", merged.read_text()) == WHEN.sub("WHEN", one)


def test_an_agent_reached_through_acp_is_a_row_of_its_own_beside_its_command_line():
    """The same agent scored through its headless CLI and through ACP: two rows, told apart."""
    from harness.model import CheckResult, Evidence, Outcome, RunResult, TaskResult, Tier
    from harness.report.aggregate import scoreboards

    def result(driver: str, outcome: Outcome) -> TaskResult:
        check = CheckResult("C12", outcome, Evidence("settled"), Tier.MANDATORY)
        return TaskResult(f"interrupt-cancel[{driver}]", "qwen-code", "http", 1, (check,), driver=driver)

    cli = RunResult({"agent": "qwen-code", "agent_version": "0.24.4"}, (result("subprocess", Outcome.FAIL),), ())
    acp = RunResult({"agent": "qwen-code", "agent_version": "0.24.4"}, (result("acp", Outcome.PASS),), ())
    boards = scoreboards([cli, acp])
    assert [(b.label, [t.driver for t in b.tasks]) for b in boards] == [
        ("qwen-code", ["subprocess"]), ("qwen-code · ACP", ["acp"])]
    both = scoreboards([RunResult(cli.run, cli.tasks + acp.tasks, ())])
    assert [b.label for b in both] == ["qwen-code", "qwen-code · ACP"]
