"""The GitHub Action (action.yml): its steps, run in the order action.yml gives them and with
the environment its ``env:`` blocks give them, on a stand-in agent installed by a profile's
install command — outside GitHub, with temporary GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_ENV
and workspace.

stopbench itself is installed by the action's own step from this checkout, into a folder of
its own (pip's PIP_TARGET and PIP_NO_DEPS), so what runs is what the action installs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS = ACTION["runs"]["steps"]
STANDIN = ROOT / "tests" / "standin"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")

# The stand-in agent's profile, pointing at a program that only the install command puts there.
PROFILE = (STANDIN / "standin.toml").read_text(encoding="utf-8").replace('name = "standin"', 'name = "stub"')
INSTALL = f"cp {STANDIN / 'standin_agent.py'} agent/standin_agent.py"


def _step_name(step: dict) -> str | None:
    """The action.sh step a step of action.yml runs, or None for a step that uses an action."""
    match = re.search(r"action\.sh\" (\S+)", step.get("run", ""))
    return match.group(1) if match else None


@dataclass
class Job:
    """One job using the action: its workspace, GitHub's files, and each step's outputs."""

    workspace: Path
    target: Path  # where the install step puts stopbench
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        path = self.workspace / "summary.md"
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def run(self, inputs: dict[str, str], *, stop_after: str | None = None) -> int:
        """The action's script steps in action.yml's order; the last step's exit code (a failed
        step stops the job, as on GitHub, except for the verdict step, which always runs).
        stopbench's own install step ran once for the module (the ``installed`` fixture)."""
        defaults = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
        inputs = {**defaults, **inputs}
        failed = False
        code = 0
        for step in STEPS:
            name = _step_name(step)
            if name in (None, "install-stopbench") or (failed and name != "conclude"):
                continue
            code = self._step(step, name, inputs)
            self.codes[name] = code
            failed = failed or code != 0
            if name == stop_after:
                break
        return code

    def _step(self, step: dict, name: str, inputs: dict[str, str]) -> int:
        github_output = self.workspace / f"output-{name}"
        github_output.write_text("")
        env = {k: self._value(str(v), inputs) for k, v in step.get("env", {}).items()}
        env.update(self._github_env())
        paths = [str(self.target / "bin"), str(Path(sys.executable).parent), "/usr/bin", "/bin"]
        env.update({
            "PATH": os.pathsep.join(paths), "PYTHONPATH": str(self.target), "HOME": str(self.workspace / "home"),
            "STOPBENCH_PYTHON": sys.executable, "PIP_TARGET": str(self.target), "PIP_NO_DEPS": "1",
            "GITHUB_ACTION_PATH": str(ROOT), "GITHUB_OUTPUT": str(github_output),
            "GITHUB_ENV": str(self.workspace / "env"), "GITHUB_STEP_SUMMARY": str(self.workspace / "summary.md"),
        })
        proc = subprocess.run(["bash", "-c", step["run"]], cwd=self.workspace, env=env, text=True,
                              capture_output=True, timeout=120)
        self.outputs[step.get("id", name)] = dict(
            line.split("=", 1) for line in github_output.read_text().splitlines() if "=" in line)
        sys.stderr.write(f"--- {name}: exit {proc.returncode}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        return proc.returncode

    def _value(self, text: str, inputs: dict[str, str]) -> str:
        def one(match: re.Match[str]) -> str:
            expr = match.group(1)
            if expr.startswith("inputs."):
                return inputs[expr.removeprefix("inputs.")]
            if expr == "github.action_path":
                return str(ROOT)
            if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
                return self.outputs.get(m.group(1), {}).get(m.group(2), "")
            raise AssertionError(f"action.yml uses an expression this test does not know: {expr}")
        return EXPRESSION.sub(one, text)

    def _github_env(self) -> dict[str, str]:
        path = self.workspace / "env"
        return dict(line.split("=", 1) for line in path.read_text().splitlines()) if path.exists() else {}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """stopbench installed by the action's install step once, for every job of this module."""
    target = tmp_path_factory.mktemp("stopbench-installed")
    job = Job(tmp_path_factory.mktemp("install-job"), target)
    step = next(s for s in STEPS if _step_name(s) == "install-stopbench")
    assert job._step(step, "install-stopbench", {}) == 0
    assert (target / "bin" / "stopbench").exists()
    return target


@pytest.fixture
def job(tmp_path: Path, installed: Path) -> Job:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "stub.toml").write_text(PROFILE, encoding="utf-8")
    (tmp_path / "home").mkdir()
    return Job(tmp_path, installed)


def _inputs(**more: str) -> dict[str, str]:
    return {"agent": "agent/stub.toml", "install": INSTALL, "tasks": "exit-codes", "baseline": "ci/baseline.json",
            **more}


def test_the_gate_runs_before_the_upload_so_its_table_is_uploaded():
    order = [_step_name(s) or s.get("uses", "").split("@")[0] for s in STEPS]
    assert order.index("gate") < order.index("actions/upload-artifact") < order.index("conclude")
    upload = next(s for s in STEPS if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["with"]["path"] == "${{ inputs.report-dir }}"  # the folder gate.md is written into


def test_a_first_run_without_a_baseline_publishes_its_reports_and_passes(job: Job):
    assert job.run(_inputs()) == 0
    assert job.codes == {"setup": 0, "install-agent": 0, "run": 0, "summary": 0, "gate": 0, "conclude": 0}
    assert job.outputs["run"] == {"exit-code": "0", "verdict": "conformant (black-box)",
                                  "report-dir": "stopbench-reports"}
    assert job.outputs["gate"] == {"gate-exit-code": ""}
    reports = job.workspace / "stopbench-reports"
    assert {"results.json", "summary.md", "report.html", "junit.xml"} <= {p.name for p in reports.iterdir()}
    assert job.summary.startswith((reports / "summary.md").read_text(encoding="utf-8"))
    assert "stub: conformant (black-box)" in job.summary
    assert "**Not gated:** no baseline at `ci/baseline.json` yet." in job.summary
    assert f"STOPBENCH_CACHE={job.workspace / 'home/.cache/stopbench'}" in (job.workspace / "env").read_text()
    assert job.outputs["setup"]["agent-cache-key"].startswith("stopbench-agent-Linux-stub-")


def test_a_run_worse_than_its_baseline_is_gated_and_fails_the_job(job: Job):
    assert job.run(_inputs(), stop_after="run") == 0
    (job.workspace / "ci").mkdir()
    shutil.copy(job.workspace / "stopbench-reports" / "results.json", job.workspace / "ci" / "baseline.json")
    # The agent changes: it now writes its API key into its session store (C13 fails).
    profile = job.workspace / "agent" / "stub.toml"
    profile.write_text(PROFILE.replace("[env]\n", '[env]\nSTANDIN_FAULTS = "key-leak"\n'), encoding="utf-8")

    assert job.run(_inputs(**{"fail-on": "regression"})) == 1
    assert job.outputs["run"]["exit-code"] == "1"
    assert job.outputs["run"]["verdict"] == "not conformant"
    assert job.outputs["gate"] == {"gate-exit-code": "1"}
    gate_table = (job.workspace / "stopbench-reports" / "gate.md").read_text(encoding="utf-8")
    assert "C13" in gate_table
    run_summary = (job.workspace / "stopbench-reports" / "summary.md").read_text(encoding="utf-8")
    assert job.summary == run_summary + "\n" + gate_table


def test_a_run_no_worse_than_its_baseline_passes_when_only_regressions_fail(job: Job):
    assert job.run(_inputs(), stop_after="run") == 0
    (job.workspace / "ci").mkdir()
    shutil.copy(job.workspace / "stopbench-reports" / "results.json", job.workspace / "ci" / "baseline.json")
    assert job.run(_inputs(**{"fail-on": "regression"})) == 0
    assert job.outputs["gate"] == {"gate-exit-code": "0"}
    assert (job.workspace / "stopbench-reports" / "gate.md").exists()


def test_a_not_conformant_run_fails_the_job_unless_only_regressions_fail(job: Job):
    profile = job.workspace / "agent" / "stub.toml"
    profile.write_text(PROFILE.replace("[env]\n", '[env]\nSTANDIN_FAULTS = "key-leak"\n'), encoding="utf-8")
    assert job.run(_inputs(baseline="")) == 1
    assert job.outputs["run"]["exit-code"] == "1"
    assert job.outputs["gate"] == {"gate-exit-code": ""}
    assert "not conformant" in job.summary


@pytest.mark.parametrize(("inputs", "message"), [
    (_inputs(repeat="0"), "input 'repeat' must be a whole number of at least 1, got '0'"),
    (_inputs(jobs="two"), "input 'jobs' must be a whole number of at least 1, got 'two'"),
    (_inputs(agent="agent/missing.toml"), "input 'agent': no profile file agent/missing.toml"),
    (_inputs(agent="codex"), "input 'install' is for a profile path"),
    (_inputs(**{"fail-on": "always"}), "input 'fail-on' must be not-conformant or regression"),
])
def test_a_bad_input_stops_the_job_before_anything_is_installed(job: Job, inputs, message, capfd):
    assert job.run(inputs) == 2
    assert job.codes == {"setup": 2, "conclude": 2}
    assert message in capfd.readouterr().err


def test_a_built_in_agent_that_comes_with_stopbench_needs_no_install(job: Job):
    assert job.run(_inputs(agent="reference", install="", baseline="", tasks="exit-codes"),
                   stop_after="install-agent") == 0
    assert job.codes["install-agent"] == 0


def test_an_unknown_built_in_agent_is_named(job: Job, capfd):
    assert job.run(_inputs(agent="codx@1.0", install=""), stop_after="install-agent") == 2
    assert "no built-in agent 'codx'" in capfd.readouterr().err


def test_the_example_workflow_uses_only_the_actions_inputs_and_outputs():
    text = (ROOT / "examples" / "ci" / "agent-repo.yml").read_text(encoding="utf-8")
    example = yaml.safe_load(text)
    used = [step for job in example["jobs"].values() for step in job["steps"]
            if "/stopbench@" in step.get("uses", "")]
    assert used, "the example does not use the action"
    for step in used:
        assert set(step.get("with", {})) <= set(ACTION["inputs"]), step
    assert set(re.findall(r"steps\.stopbench\.outputs\.([\w-]+)", text)) <= set(ACTION["outputs"])
