"""Shell-tool mapping: turn "run this command" into a call of the agent's own shell tool.

Every coding agent names its shell tool differently (``bash``, ``Bash``, ``exec_command``,
``run_shell_command``, ``Shell`` …) and shapes its arguments differently (``command`` vs
``cmd``, ``shell_command``, a string, an argv array or a list of whole commands) and some require arguments
of their own (OpenHands' ``security_risk``, Copilot's ``description``). A scenario names no
tool; the tool list of the request decides, so one scenario drives every agent.
"""
from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass

from .scenario import Shell, ShellToolOverride, Window

# Known shell tool names, most specific first.
KNOWN_SHELL_TOOLS = ("bash", "Bash", "shell", "Shell", "exec_command", "run_shell_command",
                     "run_terminal_cmd", "execute_command", "run_command", "run_commands", "terminal",
                     "shell_command")
COMMAND_FIELDS = ("command", "cmd", "commands", "script", "shell_command")
# Arguments added when the tool's schema has them and the scenario does not set them: each keeps
# a long command in the foreground. Codex's exec_command backgrounds a command after
# yield_time_ms (10 s by default) and asks the model again, which would end a window mid-task;
# Codex clamps the value (to 30 s in the versions seen), so ask for the longest a window holds.
# Copilot CLI's bash tool does the same after ``initial_wait`` seconds (30 by default).
FOREGROUND_DEFAULTS = {"yield_time_ms": 600_000, "initial_wait": 600}
# The value given to a required string argument the scenario does not set (a description).
REQUIRED_TEXT = "Run the command the task asks for."

# How the command travels in the command field: one string, an argv array (``bash -lc``
# runs the command), or a list of whole command lines (Cline's ``run_commands``).
STRING, ARGV, COMMANDS = "string", "argv", "commands"


class NoShellTool(LookupError):
    """The request offers no tool the scenario's shell frame can be mapped onto."""


@dataclass(frozen=True)
class ToolDef:
    name: str
    parameters: dict


@dataclass(frozen=True)
class ShellTool:
    name: str
    field: str
    form: str                                        # STRING | ARGV | COMMANDS
    defaults: tuple[tuple[str, object], ...] = ()   # FOREGROUND_DEFAULTS its schema has, required fillers


def detect_shell_tool(tools: list[ToolDef], override: ShellToolOverride | None = None) -> ShellTool | None:
    """The request's shell tool, or None. An override wins if the request offers that tool."""
    by_name = {t.name: t for t in tools}
    if override is not None:
        if override.name not in by_name:
            return None
        form = ARGV if override.argv else STRING
        return ShellTool(override.name, override.field, form, _defaults(by_name[override.name], override.field))
    candidates = [by_name[n] for n in KNOWN_SHELL_TOOLS if n in by_name]
    candidates += [t for t in tools if t not in candidates and _looks_like_shell(t.name)]
    for tool in candidates:
        found = _command_field(tool.parameters)
        if found:
            return ShellTool(tool.name, *found, _defaults(tool, found[0]))
    return None


def shell_lookalikes(tools: list[ToolDef]) -> list[str]:
    """The tools named like a shell tool whose schema has no command field detection knows:
    why a request that seems to offer a shell was not given the scenario's shell call."""
    return [t.name for t in tools
            if (t.name in KNOWN_SHELL_TOOLS or _looks_like_shell(t.name)) and _command_field(t.parameters) is None]


def _defaults(tool: ToolDef, command_field: str) -> tuple[tuple[str, object], ...]:
    """The foreground defaults the tool's schema has, then a value for every other required
    argument a scalar can fill (a tool call without one is refused by the agent itself)."""
    schema = tool.parameters if isinstance(tool.parameters, dict) else {}
    props = schema.get("properties")
    if not isinstance(props, dict):
        return ()
    out: list[tuple[str, object]] = [(name, value) for name, value in FOREGROUND_DEFAULTS.items() if name in props]
    for name in schema.get("required") or []:
        if name == command_field or name in FOREGROUND_DEFAULTS or not isinstance(props.get(name), dict):
            continue
        value = _required_filler(props[name])
        if value is not None:
            out.append((name, value))
    return tuple(out)


def _required_filler(spec: dict) -> object | None:
    """A declared value for a required argument: an enum's first value, a short text, false."""
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = spec.get("type")
    if kind == "string":
        return REQUIRED_TEXT
    if kind == "boolean":
        return False
    return None


def _looks_like_shell(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in ("shell", "bash", "exec", "terminal"))


def _command_field(schema: dict) -> tuple[str, str] | None:
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return None
    required = schema.get("required") or []
    ordered = [f for f in COMMAND_FIELDS if f in required] + [f for f in COMMAND_FIELDS if f in props]
    for field in ordered:
        spec = props.get(field)
        if not isinstance(spec, dict) or not _is_array(spec):   # a schema may be true or false
            return field, STRING
        return field, COMMANDS if field == "commands" else ARGV
    return None


def _is_array(spec: dict) -> bool:
    kind = spec.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def shell_arguments(tool: ShellTool, command: str, extra: dict) -> str:
    """JSON arguments for ``tool`` running ``command``, in that tool's own schema; the
    scenario's ``extra`` wins over the tool's foreground defaults."""
    forms: dict[str, str | list[str]] = {STRING: command, ARGV: ["bash", "-lc", command], COMMANDS: [command]}
    value = forms[tool.form]
    return json.dumps({tool.field: value, **dict(tool.defaults), **extra}, ensure_ascii=False)


def shell_command(frame: Shell, beacon_url: str | None) -> str:
    """The command line a shell frame runs: its own command, or the window program."""
    if frame.window is not None:
        return window_command(frame.window, beacon_url)
    assert frame.command is not None, "a shell frame has a command or a window"
    return frame.command


def window_command(window: Window, beacon_url: str | None) -> str:
    args = [sys.executable, "-m", "fake_server.window", "--id", window.id,
            "--depth", str(window.depth), "--fanout", str(window.fanout), "--hold", f"{window.hold_s:g}"]
    if window.ignore_term:
        args.append("--ignore-term")
    if window.escape:
        args.append("--escape")
    if window.marker:
        args += ["--marker", window.marker]
    if beacon_url:
        args += ["--beacon", beacon_url]
    return shlex.join(args)
