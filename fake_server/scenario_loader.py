"""Reading a scenario from TOML: every value validated up front, every refusal placed.

The loader names the file, the item (``responses[1].frames[0]``) and the problem, so a typo
never turns into a confusing failure halfway through an evaluation. What a scenario is (the
frames, responses and scenario it builds) is ``fake_server.scenario``.
"""
from __future__ import annotations

import json
import math
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

from .scenario import (
    Disconnect,
    Finish,
    FinishAction,
    Frame,
    HttpError,
    Match,
    Pause,
    Reasoning,
    Response,
    Scenario,
    ScenarioError,
    Shell,
    ShellToolOverride,
    Stall,
    StreamError,
    Text,
    ToolCall,
    Window,
)

FINISH_REASONS = ("stop", "length", "tool_calls")
MATCH_ROLES = ("user", "tool", "assistant")     # system messages are passed over (see Match)
ERROR_KINDS = ("server_error", "rate_limit", "overloaded", "invalid_request")
HTTP_ERROR_STATUSES = (400, 401, 403, 404, 408, 409, 429, 500, 502, 503, 529)
# The longest pause, chunk interval, Retry-After or window hold a scenario may ask for, in
# seconds: a step waits for a beacon under a budget of about a minute, so a longer one (or
# NaN, or inf) only makes a task that can never pass, with the agent blamed for it.
MAX_SECONDS = 600.0


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario TOML file; raise ScenarioError naming file, item, problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(str(path), "file", f"cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(str(path), "file", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse_scenario_text(text, source=str(path))


def parse_scenario_text(text: str, source: str = "<inline>") -> Scenario:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(source, "toml", str(exc)) from None
    return parse_scenario(data, source=source)


def demo_scenario() -> Scenario:
    """The built-in scenario served when none is given: text, a shell call, a final answer."""
    text = resources.files("fake_server").joinpath("demo.toml").read_text(encoding="utf-8")
    return parse_scenario_text(text, source="fake_server/demo.toml")


def parse_scenario(data: dict, source: str = "<inline>") -> Scenario:
    reader = _Reader(source)
    reader.only(data, "scenario", {"name", "model", "shell_tool", "finish_action", "side_requests", "responses",
                                   "shell_fence"})
    name = reader.required(data, "scenario", "name")
    model = reader.string(data, "scenario", "model")
    shell_tool = None
    if "shell_tool" in data:
        shell_tool = reader.shell_tool(data["shell_tool"])
    finish_action = parse_finish_action(data["finish_action"], source) if "finish_action" in data else None
    side_requests = reader.side_requests(data.get("side_requests", []))
    shell_fence = reader.string(data, "scenario", "shell_fence")
    if shell_fence is not None and not shell_fence.isalnum():
        reader.fail("scenario.shell_fence", f"must be a fence language such as 'bash', not {shell_fence!r}")
    raw = data.get("responses")
    if not isinstance(raw, list) or not raw:
        raise ScenarioError(source, "responses", "at least one [[responses]] table is required")
    responses = tuple(reader.response(r, f"responses[{i}]") for i, r in enumerate(raw))
    return Scenario(name=name, responses=responses, model=model, shell_tool=shell_tool,
                    finish_action=finish_action, side_requests=side_requests, source=source,
                    shell_fence=shell_fence)


def parse_finish_action(raw: Any, source: str, item: str = "finish_action") -> FinishAction:
    """A ``finish_action`` table: ``tool`` (with optional ``arguments``) or ``shell``, not both."""
    reader = _Reader(source)
    reader.only(raw, item, {"tool", "arguments", "shell"})
    tool, shell = reader.string(raw, item, "tool"), reader.string(raw, item, "shell")
    if (tool is None) == (shell is None):
        reader.fail(item, "needs exactly one of 'tool' (a tool of the agent's own) or 'shell' (a command)")
    arguments = raw.get("arguments", {})
    if not isinstance(arguments, dict):
        reader.fail(f"{item}.arguments", "must be a table")
    if arguments and tool is None:
        reader.fail(f"{item}.arguments", "belongs to a 'tool' action, not a 'shell' one")
    return FinishAction(tool=tool, arguments=tuple(arguments.items()), shell=shell)


_FRAME_KEYS = ("text", "reasoning", "tool_call", "shell", "pause", "stall", "disconnect",
               "error", "http_error", "finish")
_FRAME_OPTIONS = {
    "text": {"chunk", "interval_s"},
    "reasoning": {"chunk", "interval_s"},
    "tool_call": {"chunk", "interval_s"},
    "shell": {"chunk", "interval_s", "extra"},
    "pause": set(), "stall": set(), "disconnect": set(),
    "error": {"message"},
    "http_error": {"message", "retry_after"},
    "finish": {"usage"},
}


class _Reader:
    def __init__(self, source: str):
        self.source = source

    def fail(self, item: str, problem: str) -> NoReturn:
        raise ScenarioError(self.source, item, problem)

    def only(self, table: Any, item: str, allowed: set[str]):
        if not isinstance(table, dict):
            self.fail(item, f"must be a table, not {type(table).__name__}")
        unknown = sorted(set(table) - allowed)
        if unknown:
            self.fail(item, f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")

    def required(self, table: dict, item: str, key: str) -> str:
        value = self.string(table, item, key)
        if value is None:
            self.fail(item, f"'{key}' is required")
        return value

    def string(self, table: dict, item: str, key: str) -> str | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            self.fail(f"{item}.{key}", "must be a non-empty string")
        return value

    def number(self, value: Any, item: str, minimum: float = 0.0, integer: bool = False):
        ok_type = int if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, ok_type) or not math.isfinite(value) or value < minimum:
            kind = "an integer" if integer else "a number"
            self.fail(item, f"must be {kind} >= {minimum:g}, not {value!r}")
        return value

    def seconds(self, value: Any, item: str) -> float:
        """A duration: a finite number of seconds from 0 to ``MAX_SECONDS``."""
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or not 0 <= value <= MAX_SECONDS):
            self.fail(item, f"must be a number of seconds from 0 to {MAX_SECONDS:g}, not {value!r}")
        return float(value)

    def shell_tool(self, raw: Any) -> ShellToolOverride:
        self.only(raw, "shell_tool", {"name", "field", "argv"})
        name = self.required(raw, "shell_tool", "name")
        field_name = self.string(raw, "shell_tool", "field") or "command"
        argv = raw.get("argv", False)
        if not isinstance(argv, bool):
            self.fail("shell_tool.argv", "must be true or false")
        return ShellToolOverride(name=name, field=field_name, argv=argv)

    def side_requests(self, raw: Any) -> tuple[str, ...]:
        if not isinstance(raw, list):
            self.fail("side_requests", f"must be an array of strings, not {type(raw).__name__}")
        for i, pattern in enumerate(raw):
            if not isinstance(pattern, str) or not pattern.strip():
                self.fail(f"side_requests[{i}]", "must be a non-empty string")
        return tuple(raw)

    def response(self, raw: Any, item: str) -> Response:
        self.only(raw, item, {"match", "repeat", "frames"})
        match = Match()
        if "match" in raw:
            match = self.match(raw["match"], f"{item}.match")
        repeat = raw.get("repeat", False)
        if not isinstance(repeat, bool):
            self.fail(f"{item}.repeat", "must be true or false")
        frames_raw = raw.get("frames")
        if not isinstance(frames_raw, list) or not frames_raw:
            self.fail(item, "at least one [[responses.frames]] table is required")
        frames = tuple(self.frame(f, f"{item}.frames[{i}]") for i, f in enumerate(frames_raw))
        self.check_sequence(frames, item)
        return Response(frames=frames, match=match, repeat=repeat)

    def match(self, raw: Any, item: str) -> Match:
        self.only(raw, item, {"last", "tools", "contains"})
        last = raw.get("last")
        if last is not None and last not in MATCH_ROLES:
            self.fail(f"{item}.last", f"must be one of {', '.join(MATCH_ROLES)}, not {last!r} (the last turn "
                                      "is the last message that is not a system message)")
        tools = raw.get("tools")
        if tools is not None and not isinstance(tools, bool):
            self.fail(f"{item}.tools", "must be true or false")
        contains = self.string(raw, item, "contains")
        return Match(last=last, tools=tools, contains=contains)

    def check_sequence(self, frames: tuple[Frame, ...], item: str):
        for i, frame in enumerate(frames):
            where = f"{item}.frames[{i}]"
            if isinstance(frame, HttpError) and len(frames) != 1:
                self.fail(where, "an http_error frame must be the only frame of its response")
            ends = (Stall, Disconnect, StreamError, Finish)
            if isinstance(frame, ends) and i != len(frames) - 1:
                kind = type(frame).__name__.lower()
                self.fail(where, f"a {kind} frame ends the stream, so it must be the last frame")

    def frame(self, raw: Any, item: str) -> Frame:
        if not isinstance(raw, dict):
            self.fail(item, "must be a table")
        kinds = [k for k in _FRAME_KEYS if k in raw]
        if len(kinds) != 1:
            found = ", ".join(kinds) or "none"
            self.fail(item, f"exactly one frame key of {', '.join(_FRAME_KEYS)} is required (found: {found})")
        kind = kinds[0]
        self.only(raw, item, {kind} | _FRAME_OPTIONS[kind])
        pacing = {}
        if "chunk" in raw:
            pacing["chunk"] = self.number(raw["chunk"], f"{item}.chunk", 1, integer=True)
        if "interval_s" in raw:
            pacing["interval_s"] = self.seconds(raw["interval_s"], f"{item}.interval_s")
        value = raw[kind]
        where = f"{item}.{kind}"
        if kind in ("text", "reasoning"):
            if not isinstance(value, str) or not value:
                self.fail(where, "must be a non-empty string")
            return (Text if kind == "text" else Reasoning)(value, **pacing)
        if kind == "tool_call":
            return self.tool_call(value, where, pacing)
        if kind == "shell":
            extra = raw.get("extra", {})
            if not isinstance(extra, dict):
                self.fail(f"{item}.extra", "must be a table")
            return self.shell(value, extra, where, pacing)
        if kind == "pause":
            return Pause(self.seconds(value, where))
        if kind in ("stall", "disconnect"):
            if value is not True:
                self.fail(where, "must be true")
            return Stall() if kind == "stall" else Disconnect()
        if kind == "error":
            if value not in ERROR_KINDS:
                self.fail(where, f"must be one of {', '.join(ERROR_KINDS)}, not {value!r}")
            message = self.string(raw, item, "message")
            return StreamError(value, message) if message else StreamError(value)
        if kind == "http_error":
            if value not in HTTP_ERROR_STATUSES:
                self.fail(where, f"must be one of {', '.join(map(str, HTTP_ERROR_STATUSES))}, not {value!r}")
            retry_after = raw.get("retry_after")
            if retry_after is not None:
                retry_after = self.seconds(retry_after, f"{item}.retry_after")
            return HttpError(value, self.string(raw, item, "message"), retry_after)
        return self.finish(value, raw.get("usage"), item)

    def tool_call(self, value: Any, where: str, pacing: dict) -> ToolCall:
        self.only(value, where, {"name", "arguments"})
        name = self.required(value, where, "name")
        arguments = value.get("arguments", {})
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments)
            except json.JSONDecodeError as exc:
                self.fail(f"{where}.arguments", f"is not valid JSON ({exc.msg})")
            if not isinstance(parsed, dict):
                self.fail(f"{where}.arguments", "must encode a JSON object")
            text = arguments
        elif isinstance(arguments, dict):
            text = json.dumps(arguments, ensure_ascii=False)
        else:
            self.fail(f"{where}.arguments", "must be a table or a JSON object string")
        return ToolCall(name, text, **pacing)

    def shell(self, value: Any, extra: dict, where: str, pacing: dict) -> Shell:
        if isinstance(value, str):
            if not value:
                self.fail(where, "must be a non-empty command")
            return Shell(command=value, extra=extra, **pacing)
        self.only(value, where, {"window"})
        w = value.get("window")
        wi = f"{where}.window"
        self.only(w, wi, {"id", "depth", "fanout", "ignore_term", "escape", "hold_s", "marker"})
        window_id = self.required(w, wi, "id")
        if not window_id.replace("-", "").replace("_", "").isalnum():
            self.fail(f"{wi}.id", "may contain only letters, digits, '-' and '_'")
        for flag in ("ignore_term", "escape"):
            if not isinstance(w.get(flag, False), bool):
                self.fail(f"{wi}.{flag}", "must be true or false")
        hold_s = self.seconds(w.get("hold_s", 60.0), f"{wi}.hold_s")
        window = Window(
            id=window_id,
            depth=self.number(w.get("depth", 1), f"{wi}.depth", 0, integer=True),
            fanout=self.number(w.get("fanout", 1), f"{wi}.fanout", 1, integer=True),
            ignore_term=w.get("ignore_term", False), escape=w.get("escape", False),
            hold_s=hold_s, marker=self.string(w, wi, "marker"))
        if window.depth > 5 or window.fanout > 5:
            self.fail(wi, "depth and fanout are at most 5 each")
        return Shell(window=window, extra=extra, **pacing)

    def finish(self, value: Any, usage: Any, item: str) -> Finish:
        if value is not True and value not in FINISH_REASONS:
            self.fail(f"{item}.finish", f"must be true or one of {', '.join(FINISH_REASONS)}, not {value!r}")
        tokens = {}
        if usage is not None:
            self.only(usage, f"{item}.usage", {"input_tokens", "output_tokens"})
            for key in ("input_tokens", "output_tokens"):
                if key in usage:
                    tokens[key] = self.number(usage[key], f"{item}.usage.{key}", 0, integer=True)
        return Finish(None if value is True else value, **tokens)
