"""Scenario loading: valid files load; bad ones name the file, the item and the problem."""
import json

import pytest

from fake_server import ScenarioError, load_scenario
from fake_server.scenario import Shell, ShellToolOverride, Text, Window
from fake_server.scenario_loader import demo_scenario
from fake_server.shell import REQUIRED_TEXT, ToolDef, detect_shell_tool, shell_arguments

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
    ('name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "a"\ninterval_s = nan', "responses[0].frames[0].interval_s",
     "from 0 to 600"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "a"\ninterval_s = inf', "responses[0].frames[0].interval_s",
     "from 0 to 600"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "a"\ninterval_s = 1e300',
     "responses[0].frames[0].interval_s", "from 0 to 600"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\npause = nan', "responses[0].frames[0].pause", "from 0 to 600"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\npause = 1e300', "responses[0].frames[0].pause", "from 0 to 600"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\nhttp_error = 429\nretry_after = -inf',
     "responses[0].frames[0].retry_after", "from 0 to 600"),
    ('name = "x"\n[[responses]]\n[[responses.frames]]\nshell = { window = { id = "w", hold_s = nan } }',
     "responses[0].frames[0].shell.window.hold_s", "from 0 to 600"),
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
     ("bash", "command", "string")),
    ([ToolDef("exec_command", obj(cmd={"type": "string"}, workdir={"type": "string"}))],
     ("exec_command", "cmd", "string")),
    ([ToolDef("shell", obj(command={"type": "array", "items": {"type": "string"}}))], ("shell", "command", "argv")),
    ([ToolDef("run_shell_command", obj(command={"type": "string"}, is_background={"type": "boolean"}))],
     ("run_shell_command", "command", "string")),
    ([ToolDef("Bash", obj(command={"type": "string"}))], ("Bash", "command", "string")),
    ([ToolDef("Shell", obj(command={"type": "string"}))], ("Shell", "command", "string")),
    ([ToolDef("run_commands", obj(commands={"type": "array", "items": {"type": "string"}}))],
     ("run_commands", "commands", "commands")),
    # shell-gpt's function: its command field is shell_command
    ([ToolDef("execute_shell_command", obj(shell_command={"type": "string"}))],
     ("execute_shell_command", "shell_command", "string")),
    ([ToolDef("read_file", obj(path={"type": "string"}))], None),
])
def test_shell_tool_detection(tools, expected):
    found = detect_shell_tool(tools)
    assert (found and (found.name, found.field, found.form)) == expected


def test_override_and_argument_shapes():
    tools = [ToolDef("run", obj(script={"type": "string"}))]
    assert detect_shell_tool(tools) is None
    tool = detect_shell_tool(tools, ShellToolOverride("run", "script"))
    assert json.loads(shell_arguments(tool, "ls", {"timeout": 5})) == {"script": "ls", "timeout": 5}
    argv = detect_shell_tool([ToolDef("shell", obj(command={"type": "array"}))])
    assert json.loads(shell_arguments(argv, "ls -l", {})) == {"command": ["bash", "-lc", "ls -l"]}


def test_a_list_of_whole_commands_gets_the_command_line_as_one_item():
    tool = detect_shell_tool([ToolDef("run_commands", obj(commands={"type": "array", "items": {"type": "string"}}))])
    assert json.loads(shell_arguments(tool, "sleep 1 && echo hi", {})) == {"commands": ["sleep 1 && echo hi"]}


def test_required_arguments_are_filled_and_the_scenario_wins():
    schema = {"type": "object", "required": ["command", "security_risk", "summary", "reset", "timeout"],
              "properties": {"command": {"type": "string"},
                             "security_risk": {"type": "string", "enum": ["UNKNOWN", "LOW", "HIGH"]},
                             "summary": {"type": "string"}, "reset": {"type": "boolean"},
                             "timeout": {"type": "number"}, "is_input": {"type": "boolean"}}}
    tool = detect_shell_tool([ToolDef("terminal", schema)])
    args = json.loads(shell_arguments(tool, "ls", {}))
    # a number cannot be guessed (left to the agent's own default); optional ones are not sent
    assert args == {"command": "ls", "security_risk": "UNKNOWN", "summary": REQUIRED_TEXT, "reset": False}
    assert json.loads(shell_arguments(tool, "ls", {"security_risk": "LOW"}))["security_risk"] == "LOW"


def test_background_after_a_wait_is_kept_off():
    schema = {"type": "object", "required": ["command", "description"],
              "properties": {"command": {"type": "string"}, "description": {"type": "string"},
                             "initial_wait": {"type": "integer"}}}
    args = json.loads(shell_arguments(detect_shell_tool([ToolDef("bash", schema)]), "ls", {}))
    assert args == {"command": "ls", "description": REQUIRED_TEXT, "initial_wait": 600}
