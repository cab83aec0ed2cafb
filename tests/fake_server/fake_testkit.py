"""Small helpers shared by the fake-server tests."""
from fake_server.scenario_loader import parse_scenario_text

BASH_TOOL = {"type": "function", "function": {"name": "bash", "description": "Run a shell command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}
BASH_TOOL_RESPONSES = {"type": "function", "name": "exec_command", "description": "Run a command", "parameters": {
    "type": "object", "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}}, "required": ["cmd"]}}
BASH_TOOL_ANTHROPIC = {"name": "Bash", "description": "Run a command", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
    "required": ["command"]}}


def scenario(body: str, name: str = "t"):
    """A scenario from TOML text (the ``name`` line is added)."""
    return parse_scenario_text(f'name = "{name}"\n' + body)
