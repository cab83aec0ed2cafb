"""The built-in profiles of the pip agents (kimi-cli, mini-swe-agent, aider, llm): they parse,
pin what the catalog installs, keep the key out of argv, resume the way each agent can, and
their discovery rules find the session in what each agent was recorded printing and writing
(``tests/fixtures/agents/<agent>-<version>/discovery.json``)."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import pytest

from harness.agents.install import agents
from harness.agents.pythons import python_accepts
from harness.cli import main
from harness.drivers import AgentContext
from harness.drivers.base import DriverBase
from harness.drivers.sessions import find_log
from harness.model.history import History
from harness.profiles import ProfileError, load_profile, parse_profile
from harness.run.planning import plan
from harness.tasks import load_all

AGENTS = agents()

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
PIP_AGENTS = ("kimi-cli", "mini-swe-agent", "aider", "llm")
KEY = "sk-stopbench-0123456789abcdef0123456789abcdef"


def values(profile, tmp_path: Path, **extra) -> dict[str, str]:
    home, cwd = tmp_path / "home", tmp_path / "work"
    return {"agent_bin": f"/cache/{profile.agent}/bin/prog", "base_url": "http://127.0.0.1:9/v1",
            "url": "http://127.0.0.1:9", "api_key": KEY, "model": profile.model, "home": str(home),
            "cwd": str(cwd), "sessions_dir": str(tmp_path / "sessions"), "prompt": "Run the long job.",
            "session_uuid": "11111111-2222-3333-4444-555555555555", "adapter": "http", "scenario": "s.toml",
            "bindir": "/venv/bin", "python": "/venv/bin/python",
            "profile_dir": str(Path(profile.path).resolve().parent), **extra}


def discovery(profile) -> dict:
    agent = AGENTS[profile.agent]
    return json.loads((FIXTURES / f"{agent.name}-{agent.version}" / "discovery.json").read_text(encoding="utf-8"))


class Recorded(DriverBase):
    """A driver that has seen what the agent was recorded printing."""

    def __init__(self, ctx: AgentContext, stdout: str, stderr: str):
        super().__init__(ctx, History())
        self.printed = (stdout, stderr)

    def _outputs(self) -> tuple[str, str]:
        return self.printed


@pytest.mark.parametrize("name", PIP_AGENTS)
def test_the_profile_pins_what_the_catalog_installs(name):
    profile = load_profile(name)
    agent = AGENTS[profile.agent]
    assert profile.agent == name and agent.registry == "pypi"
    assert agent.version in profile.description
    acp = ["acp"] if name == "kimi-cli" else []  # `kimi acp` serves ACP too
    assert profile.headless is not None and profile.drivers() == ["subprocess", *acp]
    assert profile.log_reader == {"kimi-cli": "kimi-cli", "llm": "llm-logs"}.get(name, "none")


def test_kimi_needs_python_313_and_the_others_run_on_this_venvs():
    assert not python_accepts(AGENTS["kimi-cli"].python, (3, 12, 9))
    assert python_accepts(AGENTS["kimi-cli"].python, (3, 13, 0))
    for name in ("mini-swe-agent", "aider", "llm"):
        assert python_accepts(AGENTS[name].python, (3, 11, 7)), name


@pytest.mark.parametrize("name", PIP_AGENTS)
@pytest.mark.parametrize("resume", [False, True], ids=["first", "resume"])
def test_the_key_travels_in_the_environment_never_in_argv(name, resume, tmp_path):
    profile = load_profile(name)
    vals = values(profile, tmp_path)
    argv = profile.headless.render(vals, resume=resume)
    assert KEY not in " ".join(argv) and "Run the long job." in argv
    assert KEY in {v.format(**vals) for v in profile.env.values()}
    for f in profile.files:  # the config files point at the environment instead
        assert KEY not in f["content"].format(**vals)


@pytest.mark.parametrize("name, first, resumed", [
    ("kimi-cli", ["-S", "11111111-2222-3333-4444-555555555555"], ["-S", "11111111-2222-3333-4444-555555555555"]),
    ("aider", [], ["--restore-chat-history"]),
    ("llm", [], ["-c"]),
    ("mini-swe-agent", [], []),  # no resume: a follow-up is a fresh run
])
def test_each_resumes_the_way_it_can(name, first, resumed, tmp_path):
    profile = load_profile(name)
    base = profile.headless.render(values(profile, tmp_path))
    again = profile.headless.render(values(profile, tmp_path), resume=True)
    assert [a for a in base if a not in again] == [a for a in first if a not in resumed]
    assert [a for a in again if a not in base] == [a for a in resumed if a not in first]
    assert not profile.headless.needs_session_id


@pytest.mark.parametrize("name", PIP_AGENTS)
def test_discovery_finds_the_recorded_session(name, tmp_path):
    profile = load_profile(name)
    sample = discovery(profile)
    vals = values(profile, tmp_path, session_uuid=sample["session_id"] or "unused")
    for template in sample["files"]:
        path = Path(template.format(**vals))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n", encoding="utf-8")
    ctx = AgentContext(profile=profile, adapter="http", values=vals, env={}, sessions_dir=tmp_path / "sessions",
                       cwd=tmp_path / "work")
    driver = Recorded(ctx, sample["stdout"], sample["stderr"])
    assert driver.session_id == sample["session_id"]
    assert driver.log_path == sample["log"].format(**vals)
    for key in ("stderr_regex", "path_regex"):  # each rule the profile has, on its own sample
        regex = getattr(profile.session, key)
        if regex:
            text = sample["stderr"] if key == "stderr_regex" else driver.log_path
            assert re.search(regex, text).group("id") == sample["session_id"], key


def test_kimi_finds_its_session_by_folder_among_several(tmp_path):
    profile = load_profile("kimi-cli")
    vals = values(profile, tmp_path)
    mine = tmp_path / "home/.kimi/sessions/a717/11111111-2222-3333-4444-555555555555/wire.jsonl"
    other = tmp_path / "home/.kimi/sessions/a717/99999999-2222-3333-4444-555555555555/wire.jsonl"
    for path in (mine, other):  # the other is newer: only the folder's name tells them apart
        path.parent.mkdir(parents=True)
        path.write_text("{}\n", encoding="utf-8")
    ctx = AgentContext(profile=profile, adapter="http", values=vals, env={}, sessions_dir=tmp_path, cwd=tmp_path)
    assert find_log(ctx, "11111111-2222-3333-4444-555555555555") == str(mine)


def test_aider_gets_its_shell_commands_as_fenced_blocks_and_skips_what_cannot_apply():
    profile = load_profile("aider")
    tasks = {t.name: t for t in load_all()}
    served = profile.scenario_for(tasks["interrupt-cancel"].scenario)
    assert served.shell_fence == "bash" and tasks["interrupt-cancel"].scenario.shell_fence is None
    assert profile.headless.stdin and set(profile.headless.stdin.split()) == {"y"}
    items = plan(profile, list(tasks.values()))
    skipped = {i.task.name: i.not_run for i in items if i.not_run and "aider sends no request" in i.not_run}
    assert list(skipped) == ["checkpoints"]
    scored = {i.task.name for i in items if i.not_run is None}
    assert {"interrupt-cancel", "interrupt-timeout", "interrupt-restart", "exit-codes"} <= scored


def test_mini_swe_agent_is_told_to_submit_and_is_not_streamed():
    profile = load_profile("mini-swe-agent")
    assert not profile.streams
    assert profile.finish_action is not None
    assert profile.finish_action.shell == "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    assert {"MSWEA_CONFIGURED", "LITELLM_LOCAL_MODEL_COST_MAP"} <= set(profile.env)


def test_the_shipped_llm_tool_runs_a_command_and_returns_status_and_output(tmp_path, monkeypatch):
    profile = load_profile("llm")
    argv = profile.headless.render(values(profile, tmp_path))
    tools = Path(argv[argv.index("--functions") + 1])
    assert tools.is_file()
    monkeypatch.chdir(tmp_path)
    bash = runpy.run_path(str(tools))["bash"]
    assert bash("echo stopbench; echo oops >&2; exit 3") == "exit status 3\nstopbench\noops\n"
    assert "{model}" in profile.files[0]["content"] and "{base_url}" in profile.files[0]["content"]


MINIMAL = {"name": "x", "headless": {"command": ["agent", "{prompt}"]}}


@pytest.mark.parametrize("data, item, problem", [
    ({**MINIMAL, "shell": {"fence": "ba sh"}}, "shell.fence", "fence language"),
    ({**MINIMAL, "shell": {"fenced": "bash"}}, "shell.fenced", "unknown key in [shell]"),
    ({**MINIMAL, "not_run": {"checkpoints": ""}}, "not_run.checkpoints", "must say why"),
])
def test_fence_and_not_run_mistakes_name_the_item(data, item, problem):
    with pytest.raises(ProfileError) as err:
        parse_profile(data, "p.toml")
    assert err.value.item == item and problem in err.value.problem


def test_a_not_run_entry_must_name_a_task(tmp_path, capsys):
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\n[headless]\ncommand = ["mine", "{prompt}"]\n[not_run]\ncheckpionts = "typo"\n')
    assert main(["run", "--agent", str(path), "--report-dir", str(tmp_path / "r")]) == 2
    assert f"{path}: not_run.checkpionts: no such task" in capsys.readouterr().err
