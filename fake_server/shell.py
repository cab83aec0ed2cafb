"""Shell-tool mapping: turn "run this command" into a call of the agent's own shell tool.

Every coding agent names its shell tool differently (``bash``, ``Bash``, ``exec_command``,
``run_shell_command``, ``Shell`` …) and shapes its arguments differently (``command`` vs
``cmd``, a string vs an argv array). A scenario names no tool; the tool list of the request
decides, so one scenario drives every agent.
"""
from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass

from .scenario import Shell, ShellToolOverride, Window

# Known shell tool names, most specific first.
KNOWN_SHELL_TOOLS = ("bash", "Bash", "shell", "Shell", "exec_command", "run_shell_command",
                     "run_terminal_cmd", "execute_command", "run_command", "terminal", "shell_command")
COMMAND_FIELDS = ("command", "cmd", "commands", "script")
# Arguments added when the tool's schema has them and the scenario does not set them: each keeps
# a long command in the foreground. Codex's exec_command backgrounds a command after
# yield_time_ms (10 s by default) and asks the model again, which would end a window mid-task;
# Codex clamps the value (to 30 s in the versions seen), so ask for the longest a window holds.
FOREGROUND_DEFAULTS = {"yield_time_ms": 600_000}


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
    argv: bool
    defaults: tuple[tuple[str, object], ...] = ()   # FOREGROUND_DEFAULTS its schema has


def detect_shell_tool(tools: list[ToolDef], override: ShellToolOverride | None = None) -> ShellTool | None:
    """The request's shell tool, or None. An override wins if the request offers that tool."""
    by_name = {t.name: t for t in tools}
    if override is not None:
        if override.name not in by_name:
            return None
        return ShellTool(override.name, override.field, override.argv, _defaults(by_name[override.name]))
    candidates = [by_name[n] for n in KNOWN_SHELL_TOOLS if n in by_name]
    candidates += [t for t in tools if t not in candidates and _looks_like_shell(t.name)]
    for tool in candidates:
        found = _command_field(tool.parameters)
        if found:
            return ShellTool(tool.name, *found, _defaults(tool))
    return None


def _defaults(tool: ToolDef) -> tuple[tuple[str, object], ...]:
    props = tool.parameters.get("properties") if isinstance(tool.parameters, dict) else None
    if not isinstance(props, dict):
        return ()
    return tuple((name, value) for name, value in FOREGROUND_DEFAULTS.items() if name in props)


def _looks_like_shell(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in ("shell", "bash", "exec", "terminal"))


def _command_field(schema: dict) -> tuple[str, bool] | None:
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return None
    required = schema.get("required") or []
    ordered = [f for f in COMMAND_FIELDS if f in required] + [f for f in COMMAND_FIELDS if f in props]
    for field in ordered:
        spec = props.get(field) or {}
        return field, _is_array(spec)
    return None


def _is_array(spec: dict) -> bool:
    kind = spec.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def shell_arguments(tool: ShellTool, command: str, extra: dict) -> str:
    """JSON arguments for ``tool`` running ``command``, in that tool's own schema; the
    scenario's ``extra`` wins over the tool's foreground defaults."""
    value: str | list[str] = ["bash", "-lc", command] if tool.argv else command
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
