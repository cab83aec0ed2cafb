"""Agent profiles: the built-in one loads and renders; every kind of mistake is named."""

import signal

import pytest

from harness.profiles import MissingValue, ProfileError, builtin_names, load_profile, parse_profile

VALUES = {"adapter": "http", "base_url": "http://127.0.0.1:1/v1", "api_key": "sk-x", "model": "m",
          "sessions_dir": "/s", "cwd": "/w", "prompt": "do it", "timeout": "2", "session_id": "s-1",
          "scenario": "/t/scenario.toml", "bindir": "/venv/bin"}

MINIMAL = {"name": "x", "headless": {"command": ["agent", "{prompt}"]}}


def test_reference_is_built_in_and_complete():
    assert "reference" in builtin_names()
    p = load_profile("reference")
    assert p.adapters == ("inproc", "http", "openai-sdk") and p.log_reader == "contract-v1"
    assert p.drivers() == ["inproc", "subprocess", "terminal"]
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
    ({**MINIMAL, "env": {"KEY": 3}}, "env.KEY", "must be a string"),
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
    from fake_server.scenario import demo_scenario
    profile = parse_profile({**MINIMAL, "finish_action": {"tool": "complete", "arguments": {"summary": "{text}"}}})
    served = profile.scenario_for(demo_scenario())
    assert served.finish_action is not None and served.finish_action.tool == "complete"
    assert served.finish_action.arguments_for("ok") == {"summary": "ok"}
    assert served.responses == demo_scenario().responses
    assert parse_profile(MINIMAL).scenario_for(demo_scenario()) == demo_scenario()
