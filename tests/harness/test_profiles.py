"""Agent profiles: the built-in one loads and renders; every kind of mistake is named."""

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from harness.profiles import MissingValue, ProfileError, builtin_names, load_profile, parse_profile
from harness.run.planning import WorkItem
from harness.run.runner import run_item
from harness.tasks import load_task

VALUES = {"adapter": "http", "base_url": "http://127.0.0.1:1/v1", "api_key": "sk-x", "model": "m",
          "sessions_dir": "/s", "cwd": "/w", "prompt": "do it", "timeout": "2", "session_id": "s-1",
          "scenario": "/t/scenario.toml", "bindir": "/venv/bin"}

MINIMAL = {"name": "x", "headless": {"command": ["agent", "{prompt}"]}}


def test_reference_is_built_in_and_complete():
    assert "reference" in builtin_names()
    p = load_profile("reference")
    assert p.adapters == ("inproc", "http", "openai-sdk") and p.log_reader == "contract-v1"
    assert p.drivers() == ["inproc", "subprocess", "terminal", "acp"]
    assert p.stop_signal == signal.SIGINT and p.failpoints_env == "REFAGENT_FAILPOINTS"
    assert p.inproc_factory == "reference_agent.api:open_session"


def test_options_are_spliced_where_the_template_says():
    p = load_profile("reference")
    plain = p.headless.render(VALUES)
    both = p.headless.render(VALUES, timeout=True, resume=True)
    assert plain[:2] == ["/venv/bin/refagent", "run"] and plain[-1] == "do it"
    assert both[2:6] == ["--timeout", "2", "--resume", "s-1"]
    assert "--scenario" not in plain
    assert p.headless.render({**VALUES, "adapter": "inproc"})[2:4] == ["--scenario", "/t/scenario.toml"]


def test_a_placeholder_without_a_value_is_an_error():
    p = load_profile("reference")
    with pytest.raises(MissingValue):
        p.headless.render({k: v for k, v in VALUES.items() if k != "base_url"})


def test_a_profile_can_be_loaded_by_path(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\n[headless]\ncommand = ["mine", "{prompt}"]\n')
    assert load_profile(path).name == "mine"
    assert load_profile(str(path)).path == str(path)


@pytest.mark.parametrize("data, item, problem", [
    ({**MINIMAL, "colour": "red"}, "colour", "unknown key"),
    ({"headless": MINIMAL["headless"]}, "name", "required"),
    ({**MINIMAL, "name": "a b"}, "name", "plain identifier"),
    ({**MINIMAL, "log_reader": "sqlite"}, "log_reader", "is not one of"),
    ({**MINIMAL, "wire_api": "grpc"}, "wire_api", "is not one of"),
    ({**MINIMAL, "stop": {"signal": "SIGNOPE"}}, "stop.signal", "not a signal name"),
    ({"name": "x", "headless": {"command": ["agent"]}}, "headless.command", "must pass {prompt}"),
    ({"name": "x", "headless": {"command": ["agent", "{promt}"]}}, "headless.command", "unknown placeholder {promt}"),
    ({"name": "x", "headless": {"command": "agent {prompt}"}}, "headless.command", "list of strings"),
    ({"name": "x", "headless": {"command": ["bin/agent", "{prompt}"]}}, "headless.command",
     "the program 'bin/agent' is a relative path"),
    ({"name": "x", "interactive": {"command": ["./agent"], "prompt_regex": "> ", "turn_ended_regex": "end"}},
     "interactive.command", "give an absolute path, a name on PATH, or {profile_dir}/"),
    ({**MINIMAL, "env": {"KEY": 3}}, "env.KEY", "must be a string"),
    ({"name": "x", "headless": {"command": ["a", "{prompt}"], "no_resume": "tui only", "resume_options": ["-c"]}},
     "headless.no_resume", "only for a command without resume_options"),
    ({**MINIMAL, "adapter_env": {"grpc": {"K": "v"}}}, "adapter_env.grpc", "not one of the profile's adapters"),
    ({**MINIMAL, "adapter_env": {"http": {"K": 1}}}, "adapter_env.http.K", "must be a string"),
    ({**MINIMAL, "adapter_env": {"http": {"K": "{nope}"}}}, "adapter_env.http.K", "unknown placeholder {nope}"),
    ({**MINIMAL, "files": [{"path": "/etc/x", "content": ""}]}, "files[1].path", "must start with {home}/"),
    ({**MINIMAL, "session": {"stderr_regex": "session (\\S+)"}}, "session.stderr_regex", "named group(s) id"),
    ({**MINIMAL, "session": {"stderr_regex": "("}}, "session.stderr_regex", "bad regular expression"),
    ({**MINIMAL, "inproc": {"factory": "not a spec"}}, "inproc.factory", "module.path:function"),
    ({"name": "x"}, "headless", "at least one of"),
    ({"name": "x", "interactive": {"command": ["a"], "prompt_regex": "> ", "turn_ended_regex": "end",
                                   "stop_keys": ["f1"]}}, "interactive.stop_keys", "not a known key"),
    ({"name": "x", "interactive": {"command": ["a"], "prompt_regex": "> ", "turn_ended_regex": "(?P<stopped>end)"}},
     "interactive.turn_ended_regex", "unknown group 'stopped'"),
    ({**MINIMAL, "finish_action": {"tool": "done", "shell": "exit"}}, "finish_action", "exactly one of"),
    ({**MINIMAL, "finish_action": {"tool": "done", "when": "x"}}, "finish_action.when", "unknown key in [finish_action]"),
    ({**MINIMAL, "finish_action": {"tool": ""}}, "finish_action.tool", "non-empty string"),
    ({**MINIMAL, "timeouts": {"turn": float("nan")}}, "timeouts.turn", "above 0 and at most 3600"),
    ({**MINIMAL, "timeouts": {"startup": float("inf")}}, "timeouts.startup", "above 0 and at most 3600"),
    ({**MINIMAL, "timeouts": {"settle": 1e300}}, "timeouts.settle", "above 0 and at most 3600"),
    ({"name": "x", "headless": {"command": ["a", "{prompt}"], "exit_codes": {"completd": 0}}},
     "headless.exit_codes.completd", "not a settlement reason"),
    ({"name": "x", "headless": {"command": ["a", "{prompt}"], "exit_codes": {"aborted": 300}}},
     "headless.exit_codes.aborted", "from 0 to 255"),
    ({"name": "x", "headless": {"command": ["a", "{prompt}"], "exit_codes": {"error": True}}},
     "headless.exit_codes.error", "from 0 to 255"),
    ({"name": "x", "headless": {"command": ["a", "--timeout", "{timeout}", "{prompt}"]}},
     "headless.command", "{timeout} has a value only in the timeout_options"),
    ({"name": "x", "headless": {"command": ["a", "{prompt}"], "first_options": ["--for={timeout}"]}},
     "headless.first_options", "{timeout} has a value only in the timeout_options"),
    ({**MINIMAL, "env": {"T": "{timeout}"}}, "env.T", "{timeout} has a value only"),
    ({**MINIMAL, "env": {"P": "{prompt}"}}, "env.P", "{prompt} has a value only in [headless]"),
    ({"name": "x", "headless": {"command": ["a", "{prompt}", "{session_id}"]}},
     "headless.command", "{session_id} has a value only in the resume_options"),
    ({"name": "x", "headless": {"command": ["a", "{prompt}"], "stdin": "{nope}"}}, "headless.stdin",
     "unknown placeholder {nope}"),
    ({"name": "x", "headless": {"command": ["a", "{prompt}"], "stdin": "{timeout}"}}, "headless.stdin",
     "{timeout} has a value only"),
    ({**MINIMAL, "env": {"O": "{options}"}}, "env.O", "stands alone as an element of a command list"),
    ({"name": "x", "headless": {"command": ["a", "--x={options}", "{prompt}"]}}, "headless.command",
     "stands alone"),
    ({**MINIMAL, "session": {"log_glob": "{home}/{nope}/*.jsonl"}}, "session.log_glob", "unknown placeholder"),
    ({"name": "x", "headless": {"command": ["{agent_bin}", "{prompt}"]}}, "headless.command",
     "need agent = NAME"),
    ({**MINIMAL, "fresh_home": False, "files": [{"path": "{home}/.bashrc", "content": "export K={api_key}"}]},
     "files[1]", "into your own HOME (fresh_home = false)"),
    ({**MINIMAL, "files": [{"path": "{home}/../../.bashrc", "content": ""}]}, "files[1].path", "'..'"),
    ({**MINIMAL, "files": [{"path": "{home}/a", "content": ""}, {"path": "{home}/a", "content": "x"}]},
     "files[2].path", "earlier [[files]] entry"),
    ({**MINIMAL, "files": [{"path": "{home}/a", "content": "", "mode": "600"}]}, "files[1].mode", "unknown key"),
    ({**MINIMAL, "files": {"path": "{home}/a", "content": ""}}, "files", "array of [[files]] tables"),
])
def test_mistakes_name_the_item_and_the_problem(data, item, problem):
    with pytest.raises(ProfileError) as err:
        parse_profile(data, "p.toml")
    assert err.value.item == item and problem in err.value.problem
    assert str(err.value).startswith("p.toml: ")


def test_unknown_builtin_lists_the_known_ones():
    with pytest.raises(ProfileError, match="built-in: .*reference"):
        load_profile("nosuchagent")


def test_broken_toml_names_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("name = \n")
    with pytest.raises(ProfileError, match="bad.toml: toml: "):
        load_profile(path)


def test_a_finish_action_is_served_with_every_task_scenario():
    from fake_server.scenario_loader import demo_scenario
    profile = parse_profile({**MINIMAL, "finish_action": {"tool": "complete", "arguments": {"summary": "{text}"}}})
    served = profile.scenario_for(demo_scenario())
    assert served.finish_action is not None and served.finish_action.tool == "complete"
    assert served.finish_action.arguments_for("ok") == {"summary": "ok"}
    assert served.responses == demo_scenario().responses
    assert parse_profile(MINIMAL).scenario_for(demo_scenario()) == demo_scenario()


def test_the_key_on_a_command_line_is_warned_about_once_per_item():
    profile = parse_profile({"name": "x", "headless": {
        "command": ["a", "--api-key", "{api_key}", "{prompt}"], "adapter_options": {"http": ["--key={api_key}"]}},
        "env": {"OPENAI_API_KEY": "{api_key}"}}, "p.toml")
    assert len(profile.warnings) == 2
    assert profile.warnings[0].startswith("headless.command: {api_key} puts the key on the command line")
    assert "every user of this machine" in profile.warnings[0]
    assert profile.warnings[1].startswith("headless.adapter_options.http: ")
    assert parse_profile({**MINIMAL, "env": {"OPENAI_API_KEY": "{api_key}"}}).warnings == ()


def test_every_shipped_profile_loads_without_a_warning():
    assert all(load_profile(name).warnings == () for name in builtin_names())


def test_files_are_never_written_into_the_user_s_own_home(tmp_path, monkeypatch):
    """A profile built in code skips the loader: the writer still refuses the real HOME."""
    from dataclasses import replace

    from harness.run.planning import WorkItem
    from harness.run.rundir import RunDirs, agent_context
    from harness.tasks import TASKS_DIR, load_task

    own_home = tmp_path / "me"
    own_home.mkdir()
    (own_home / ".bashrc").write_text("alias ll='ls -l'\n")
    monkeypatch.setenv("HOME", str(own_home))
    item = WorkItem(load_task(TASKS_DIR / "interrupt-cancel", load_scenario=False), "subprocess", "http", 1)
    written = {"path": "{home}/.bashrc", "content": "export OPENAI_API_KEY={api_key}\n"}
    for fresh_home in (False, True):
        profile = replace(parse_profile(MINIMAL, "p.toml"), fresh_home=fresh_home, files=(written,))
        dirs = RunDirs.create(tmp_path / f"run-{fresh_home}")
        if fresh_home:
            (dirs.home / ".bashrc").write_text("the agent's own\n")  # there already: not overwritten either
        with pytest.raises(ProfileError) as err:
            agent_context(profile, item, dirs, "http://127.0.0.1:9", "http://127.0.0.1:9/v1", "sk-stopbench-k")
        assert err.value.item == "files[1].path" and str(err.value).startswith("p.toml: ")
    assert (own_home / ".bashrc").read_text() == "alias ll='ls -l'\n"
    assert sorted(p.name for p in own_home.iterdir()) == [".bashrc"]


def test_run_warns_about_the_key_on_the_command_line_when_it_loads_the_profile(tmp_path, capsys):
    from harness.cli import main

    path = tmp_path / "keyed.toml"
    path.write_text('name = "keyed"\n[headless]\ncommand = ["agent", "--key", "{api_key}", "{prompt}"]\n')
    assert main(["run", "--agent", str(path), "--task", "no-such-task", "--report-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert f"stopbench: warning: {path}: headless.command: {{api_key}} puts the key on the command line" in err
    assert "unknown task 'no-such-task'" in err


@pytest.mark.parametrize("driver", ["subprocess", "terminal"])
def test_a_program_named_without_a_path_is_found_on_path(tmp_path, monkeypatch, driver):
    fake = Path(__file__).with_name("fake_agent.py")
    (tmp_path / "my-agent").write_text(f"#!/bin/sh\nexec {sys.executable} {fake} \"$@\"\n")
    (tmp_path / "my-agent").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    profile = parse_profile({
        "name": "on-path",
        "headless": {"command": ["my-agent", "run", "--sessions", "{sessions_dir}", "{prompt}"]},
        "interactive": {"command": ["my-agent", "chat", "--sessions", "{sessions_dir}"], "prompt_regex": "(?m)^you> ",
                        "turn_ended_regex": r"\[turn ended: (?P<reason>[a-z]+)\]", "stop_keys": ["ctrl-c"]},
    }, tmp_path / "on-path.toml")
    doctor_task = load_task(Path(__file__).parents[2] / "harness" / "agents" / "doctor" / "task.toml")
    result = asyncio.run(run_item(profile, WorkItem(doctor_task, driver, "http", 1), retries=0)).result
    assert (result.status.value, result.reason) == ("ran", None)
    assert "echo: Look around and say hello." in str(result.evidence.get("processes") or result.evidence["screens"])


def test_an_agents_own_side_requests_are_served_apart_from_the_tasks():
    """Qwen Code asks its model, on its own, what the user might type next: the profile names
    that request's text, and the task's scenario is served with it as a side request."""
    from fake_server import load_scenario
    from harness.tasks import TASKS_DIR

    qwen = load_profile("qwen-code")
    scenario = qwen.scenario_for(load_scenario(TASKS_DIR / "interrupt-restart" / "scenario.toml"))
    suggestion = {"model": "stopbench-1", "stream": True, "tools": ["run_shell_command"], "shell_tool": None,
                  "messages": [{"role": "user", "text": "[SUGGESTION MODE: Suggest what the user might type next.]",
                                "tool_calls": [], "tool_call_id": None}]}
    assert scenario.side_pattern(suggestion) == "[SUGGESTION MODE:"
    with pytest.raises(ProfileError, match="side_requests\\[1\\].*too short"):
        parse_profile({"name": "x", "headless": {"command": ["a", "{prompt}"]}, "side_requests": ["go"]})
