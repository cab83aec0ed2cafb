"""Scenario loading: valid files load; bad ones name the file, the item and the problem."""
import json

import pytest

from fake_server import ScenarioError, load_scenario
from fake_server.scenario import Shell, ShellToolOverride, Text, Window, demo_scenario
from fake_server.shell import ToolDef, detect_shell_tool, shell_arguments

GOOD = '''
name = "ok"
model = "m1"
shell_tool = { name = "exec_command", field = "cmd" }

[[responses]]
match = { last = "user", tools = true, contains = "go" }
[[responses.frames]]
text = "hi"
chunk = 1
interval_s = 0.01
[[responses.frames]]
shell = { window = { id = "w1", depth = 2, fanout = 1, ignore_term = true, escape = true, hold_s = 120 } }
extra = { yield_time_ms = 600000 }
'''


def write(tmp_path, text):
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def test_good_scenario_loads(tmp_path):
    s = load_scenario(write(tmp_path, GOOD))
    assert s.name == "ok" and s.model == "m1" and s.shell_tool.field == "cmd"
    frames = s.responses[0].frames
    assert frames[0] == Text("hi", chunk=1, interval_s=0.01)
    assert frames[1] == Shell(window=Window("w1", 2, 1, True, True, 120.0), extra={"yield_time_ms": 600000})


def test_demo_scenario_is_valid():
    assert demo_scenario().name == "demo"


@pytest.mark.parametrize("text, item, problem", [
    ('name = "x"', "responses", "at least one"),
    ('[[responses]]\n[[responses.frames]]\ntext = "a"', "scenario", "'name' is required"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "a"\npause = 1', "responses[0].frames[0]", "exactly one"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\ntxt = "a"', "responses[0].frames[0]", "found: none"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "a"\nchunk = 0', "responses[0].frames[0].chunk", ">= 1"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\nhttp_error = 418', "responses[0].frames[0].http_error", "must be one of"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\nstall = true\n[[responses.frames]]\ntext = "a"', "responses[0].frames[0]", "last frame"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\ntool_call = { name = "f", arguments = "[1]" }', "responses[0].frames[0].tool_call.arguments", "JSON object"),
    ('name = "x"\n[[responses]]\nmatch = { last = "bot" }\n[[responses.frames]]\ntext = "a"', "responses[0].match.last", "must be one of"),
    ('name = "x"\nbogus = 1\n[[responses]]\n[[responses.frames]]\ntext = "a"', "scenario", "unknown key(s) bogus"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\nshell = { window = { id = "a b" } }', "responses[0].frames[0].shell.window.id", "letters"),
    ('name = [', "toml", ""),
])
def test_bad_scenarios_name_file_item_problem(tmp_path, text, item, problem):
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.file == str(path)
    assert info.value.item == item
    assert problem in info.value.problem


def test_missing_file_is_a_scenario_error(tmp_path):
    with pytest.raises(ScenarioError, match="cannot be read"):
        load_scenario(tmp_path / "nope.toml")


def obj(**props):
    return {"type": "object", "properties": props, "required": list(props)[:1]}


@pytest.mark.parametrize("tools, expected", [
    ([ToolDef("read", obj(path={"type": "string"})), ToolDef("bash", obj(command={"type": "string"}))],
     ("bash", "command", False)),
    ([ToolDef("exec_command", obj(cmd={"type": "string"}, workdir={"type": "string"}))], ("exec_command", "cmd", False)),
    ([ToolDef("shell", obj(command={"type": "array", "items": {"type": "string"}}))], ("shell", "command", True)),
    ([ToolDef("run_shell_command", obj(command={"type": "string"}, is_background={"type": "boolean"}))],
     ("run_shell_command", "command", False)),
    ([ToolDef("Bash", obj(command={"type": "string"}))], ("Bash", "command", False)),
    ([ToolDef("Shell", obj(command={"type": "string"}))], ("Shell", "command", False)),
    ([ToolDef("read_file", obj(path={"type": "string"}))], None),
])
def test_shell_tool_detection(tools, expected):
    found = detect_shell_tool(tools)
    assert (found and (found.name, found.field, found.argv)) == expected


def test_override_and_argument_shapes():
    tools = [ToolDef("run", obj(script={"type": "string"}))]
    assert detect_shell_tool(tools) is None
    tool = detect_shell_tool(tools, ShellToolOverride("run", "script"))
    assert json.loads(shell_arguments(tool, "ls", {"timeout": 5})) == {"script": "ls", "timeout": 5}
    argv = detect_shell_tool([ToolDef("shell", obj(command={"type": "array"}))])
    assert json.loads(shell_arguments(argv, "ls -l", {})) == {"command": ["bash", "-lc", "ls -l"]}
