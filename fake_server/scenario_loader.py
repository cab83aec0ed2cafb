"""Reading a scenario from TOML: every value validated up front, every refusal placed.

The loader names the file, the item (``responses[1].frames[0]``) and the problem, so a typo
never turns into a confusing failure halfway through an evaluation. The file's keys, types and
ranges are its schema (``fake_server.scenario_schema``); what types cannot say is checked here.
What a scenario is (the frames, responses and scenario it builds) is ``fake_server.scenario``.
"""
from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

from . import scenario_schema as schema
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
    """A parsed scenario table as a :class:`Scenario`: its schema (``fake_server.scenario_schema``)
    refuses unknown keys, wrong types and values out of range; the checks here what types cannot say."""
    checker = _Checker(source)
    raw = schema.decode_file(data, checker.fail)
    finish_action = None if raw.finish_action is None else parse_finish_action(raw.finish_action, source)
    if raw.shell_fence is not None and not raw.shell_fence.isalnum():
        checker.fail("scenario.shell_fence", f"must be a fence language such as 'bash', not {raw.shell_fence!r}")
    if not raw.responses:
        checker.fail("responses", schema.must("responses"))
    shell_tool = None
    if raw.shell_tool is not None:
        shell_tool = ShellToolOverride(name=raw.shell_tool.name, field=raw.shell_tool.field, argv=raw.shell_tool.argv)
    responses = tuple(checker.response(r, f"responses[{i}]") for i, r in enumerate(raw.responses))
    return Scenario(name=raw.name, responses=responses, model=raw.model, shell_tool=shell_tool,
                    finish_action=finish_action, side_requests=tuple(raw.side_requests), source=source,
                    shell_fence=raw.shell_fence)


def parse_finish_action(raw: Any, source: str, item: str = "finish_action") -> FinishAction:
    """A ``finish_action`` table: ``tool`` (with optional ``arguments``) or ``shell``, not both."""
    checker = _Checker(source)
    if not isinstance(raw, dict):
        checker.fail(item, f"must be a table, not {type(raw).__name__}")
    action = schema.decode_finish_action(raw, item, checker.fail)
    if (action.tool is None) == (action.shell is None):
        checker.fail(item, "needs exactly one of 'tool' (a tool of the agent's own) or 'shell' (a command)")
    if action.arguments and action.tool is None:
        checker.fail(f"{item}.arguments", "belongs to a 'tool' action, not a 'shell' one")
    return FinishAction(tool=action.tool, arguments=tuple(action.arguments.items()), shell=action.shell)


class _Checker:
    """What a scenario's types cannot say, checked on its decoded tables; and each frame decoded
    as the kind its key names."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, item: str, problem: str) -> NoReturn:
        raise ScenarioError(self.source, item, problem)

    def response(self, raw: schema.ResponseTable, item: str) -> Response:
        last = raw.match.last
        if last is not None and last not in schema.MATCH_ROLES:
            self.fail(f"{item}.match.last", schema.must("last", last))
        match = Match(last=last, tools=raw.match.tools, contains=raw.match.contains)
        if not raw.frames:
            self.fail(item, "at least one [[responses.frames]] table is required")
        frames = tuple(self.frame(f, f"{item}.frames[{i}]") for i, f in enumerate(raw.frames))
        self.check_sequence(frames, item)
        return Response(frames=frames, match=match, repeat=raw.repeat)

    def check_sequence(self, frames: tuple[Frame, ...], item: str) -> None:
        for i, frame in enumerate(frames):
            where = f"{item}.frames[{i}]"
            if isinstance(frame, HttpError) and len(frames) != 1:
                self.fail(where, "an http_error frame must be the only frame of its response")
            ends = (Stall, Disconnect, StreamError, Finish)
            if isinstance(frame, ends) and i != len(frames) - 1:
                kind = type(frame).__name__.lower()
                self.fail(where, f"a {kind} frame ends the stream, so it must be the last frame")

    def frame(self, raw: dict[str, Any], item: str) -> Frame:
        kinds = [k for k in schema.FRAMES if k in raw]
        if len(kinds) != 1:
            found = ", ".join(kinds) or "none"
            self.fail(item, f"exactly one frame key of {', '.join(schema.FRAMES)} is required (found: {found})")
        kind = kinds[0]
        frame = schema.decode_frame(raw, kind, item, self.fail)
        where = f"{item}.{kind}"
        if isinstance(frame, schema.TextFrame):
            return Text(frame.text, chunk=frame.chunk, interval_s=frame.interval_s)
        if isinstance(frame, schema.ReasoningFrame):
            return Reasoning(frame.reasoning, chunk=frame.chunk, interval_s=frame.interval_s)
        if isinstance(frame, schema.ToolCallFrame):
            arguments = self.arguments(frame.tool_call.arguments, f"{where}.arguments")
            return ToolCall(frame.tool_call.name, arguments, chunk=frame.chunk, interval_s=frame.interval_s)
        if isinstance(frame, schema.ShellFrame):
            return self.shell(frame, where)
        if isinstance(frame, schema.PauseFrame):
            return Pause(frame.pause)
        if isinstance(frame, (schema.StallFrame, schema.DisconnectFrame)):
            if raw[kind] is not True:
                self.fail(where, schema.must(kind))
            return Stall() if kind == "stall" else Disconnect()
        if isinstance(frame, schema.ErrorFrame):
            if frame.error not in schema.ERROR_KINDS:
                self.fail(where, schema.must(kind, frame.error))
            return StreamError(frame.error, frame.message) if frame.message else StreamError(frame.error)
        if isinstance(frame, schema.HttpErrorFrame):
            if frame.http_error not in schema.HTTP_ERROR_STATUSES:
                self.fail(where, schema.must(kind, frame.http_error))
            return HttpError(frame.http_error, frame.message, frame.retry_after)
        assert isinstance(frame, schema.FinishFrame)
        if frame.finish is not True and frame.finish not in schema.FINISH_REASONS:
            self.fail(where, schema.must(kind, frame.finish))
        usage = frame.usage or schema.UsageTable()
        return Finish(None if frame.finish is True else str(frame.finish), input_tokens=usage.input_tokens,
                      output_tokens=usage.output_tokens)

    def arguments(self, arguments: str | dict[str, Any], item: str) -> str:
        """A tool call's arguments as JSON text of an object."""
        if isinstance(arguments, dict):
            return json.dumps(arguments, ensure_ascii=False)
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError as exc:
            self.fail(item, f"is not valid JSON ({exc.msg})")
        if not isinstance(parsed, dict):
            self.fail(item, "must encode a JSON object")
        return arguments

    def shell(self, frame: schema.ShellFrame, where: str) -> Shell:
        if isinstance(frame.shell, str):
            return Shell(command=frame.shell, extra=frame.extra, chunk=frame.chunk, interval_s=frame.interval_s)
        w, wi = frame.shell.window, f"{where}.window"
        if not w.id.replace("-", "").replace("_", "").isalnum():
            self.fail(f"{wi}.id", "may contain only letters, digits, '-' and '_'")
        if w.depth > 5 or w.fanout > 5:
            self.fail(wi, "depth and fanout are at most 5 each")
        window = Window(id=w.id, depth=w.depth, fanout=w.fanout, ignore_term=w.ignore_term, escape=w.escape,
                        hold_s=w.hold_s, marker=w.marker)
        return Shell(window=window, extra=frame.extra, chunk=frame.chunk, interval_s=frame.interval_s)
