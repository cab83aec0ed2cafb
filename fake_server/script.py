"""From a scenario response to a wire-neutral plan of steps.

The plan is computed once per request — which response, the full text, the tool calls with
their ids, the finish reason, and the paced sequence of deltas — and the wire encoders
only translate it. That is what makes the chunk numbering (``chunk k of request
n``) the same whichever API the agent speaks.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from . import canonical as cn
from . import scenario as sc
from .canonical import Canonical, estimate_tokens
from .records import Response, Side
from .shell import NoShellTool, ShellTool, ToolDef, detect_shell_tool, shell_arguments, shell_command

SIDE_TEXT = "stopbench side answer"    # what every side request gets: short, and recognisable in a log
NO_ROUTE: MappingProxyType[str, str] = MappingProxyType({})   # a route without path parameters


@dataclass
class Parsed:
    """A request understood: its wire API, its canonical form, and what streaming asked for."""
    api: str                       # the wire's NAME: "chat" | "responses" | "anthropic" | "gemini"
    canonical: Canonical
    tool_defs: list[ToolDef]
    stream: bool
    include_usage: bool = False
    model: str = ""
    one_tool_call: bool = False    # `parallel_tool_calls: false`: at most one tool call per response


class Ids:
    """Deterministic ids: a per-run seed plus a counter, never random per chunk."""

    def __init__(self, seed: str):
        self.seed = seed
        self._counter = itertools.count(1)

    def new(self, prefix: str, sep: str = "_") -> str:
        return f"{prefix}{sep}{self.seed}{next(self._counter):06d}"


class Exhausted(LookupError):
    """No unused scenario response accepts the request."""


class ScenarioCursor:
    """Which responses of a scenario are used up; picks the next one for a request."""

    def __init__(self, scenario: sc.Scenario):
        self.scenario = scenario
        self.used: set[int] = set()

    def choose(self, canonical: Canonical) -> tuple[int, sc.Response]:
        """The first unused response that accepts ``canonical`` and can be answered in it (one
        that calls the shell needs a request offering a shell tool); it is used up unless it
        repeats. Exhausted, saying why, when there is none. Where the scenario has a finish
        action no response answers a request offering no tools: an agent that ends a task only
        through an action of its own offers it in every request of the task, so a tool-less one
        is not the task's conversation (gptme's title request quotes the conversation, so it
        matches the task's words). With ``shell_fence`` no request needs a tool to be the task's."""
        shell_offered = canonical["shell_tool"] is not None or self.scenario.shell_fence is not None
        tool_less = not canonical["tools"]
        for index, response in enumerate(self.scenario.responses):
            if index in self.used or not response.match.accepts(canonical):
                continue
            if response.scripts_shell and not shell_offered:
                continue
            if self.scenario.finish_action is not None and tool_less:
                continue
            if not response.repeat:
                self.used.add(index)
            return index, response
        left = len(self.scenario.responses) - len(self.used)
        turn = cn.last_turn(canonical)
        offered = ", ".join(canonical["tools"]) or "none"
        raise Exhausted(
            f"scenario '{self.scenario.name}' ({self.scenario.source}) has no response left for this "
            f"request: {len(self.scenario.responses)} responses, {left} unused, none of them matches "
            f"(last turn role: {turn['role'] if turn else None!r}, "
            f"text: {_excerpt(turn['text']) if turn else None!r}, tools offered: {offered}, "
            f"shell tool: {canonical['shell_tool'] or 'none'})")


def _excerpt(text: str, limit: int = 120) -> str:
    """The start of a turn's text, for a refusal that says which request it could not answer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def detect_shell(parsed: Parsed, scenario: sc.Scenario) -> ShellTool | None:
    """Fill ``canonical["shell_tool"]`` and return the detected tool."""
    tool = detect_shell_tool(parsed.tool_defs, scenario.shell_tool)
    parsed.canonical["shell_tool"] = tool.name if tool else None
    return tool


# --- steps --------------------------------------------------------------------------------

class Delta(NamedTuple):
    """One numbered chunk: a piece of text, reasoning, or tool-call arguments. A named tuple, not
    a frozen dataclass: a long response is laid out as a hundred thousand of them before its first
    byte, and a tuple is made several times faster."""
    kind: str                      # "text" | "reasoning" | "tool"
    text: str
    call: int = -1                 # index into plan.tool_calls for kind == "tool"
    first: bool = False            # first piece of its tool call (carries id and name)


def continuing(burst: list[Delta]) -> bool:
    """Whether every delta of ``burst`` is one more piece of the same kind (and call) as the one
    before it — none starts a call: an encoder can then make the whole burst's bytes at once."""
    kind, call = burst[0].kind, burst[0].call
    return not any(d.first or d.kind != kind or d.call != call for d in burst)


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass
class Plan:
    index: int
    text: str = ""
    reasoning: str = ""
    tool_calls: list[cn.Call] = field(default_factory=list)
    finish_reason: str = "stop"
    steps: list = field(default_factory=list)          # Delta | Sleep
    ending: object = None          # None (normal finish) | Stall | Disconnect | StreamError
    http_error: sc.HttpError | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    side: str | None = None        # for a side request: how it was recognised (no response is used)

    def response_record(self, request_no: int) -> Response:
        return Response(request=request_no, response_index=self.index, text=self.text,
                        tool_calls=list(self.tool_calls), finish_reason=self.finish_reason,
                        http_error=self.http_error.status if self.http_error is not None else None,
                        ending=type(self.ending).__name__.lower() if self.ending is not None else None)

    def side_record(self, parsed: Parsed, path: str) -> Side:
        assert self.side is not None, "side_record of a plan that answers the scenario"
        return Side(api=parsed.api, path=path, stream=parsed.stream, reason=self.side,
                    messages=cn.outline(parsed.canonical), tools=list(parsed.canonical["tools"]),
                    text=self.text)


def side_plan(parsed: Parsed, reason: str) -> Plan:
    """The canned answer to a side request: one text chunk, finished at once."""
    plan = Plan(index=-1, text=SIDE_TEXT, side=reason)
    plan.steps.append(Delta("text", SIDE_TEXT, first=True))
    plan.input_tokens = estimate_tokens(parsed.canonical)
    plan.output_tokens = max(1, len(SIDE_TEXT) // 4)
    return plan


def build_plan(index: int, response: sc.Response, parsed: Parsed, shell: ShellTool | None,
               ids: Ids, beacon_url: str | None, finish_action: sc.FinishAction | None = None) -> Plan:
    """Lay out ``response`` for ``parsed``; raise NoShellTool when a shell frame cannot map."""
    plan = Plan(index=index)
    finish: sc.Finish | None = None
    frames = response.frames + _finish_call(response, parsed, shell, finish_action)
    for frame in frames:
        if isinstance(frame, sc.HttpError):
            plan.http_error = frame
            return plan
        if isinstance(frame, (sc.Text, sc.Reasoning)):
            kind = "text" if isinstance(frame, sc.Text) else "reasoning"
            if kind == "text":
                plan.text += frame.text
            else:
                plan.reasoning += frame.text
            _paced(plan, kind, frame.text, frame.chunk, frame.interval_s)
        elif isinstance(frame, (sc.ToolCall, sc.Shell)):
            if parsed.one_tool_call and plan.tool_calls:
                continue            # as the provider does: the request allows one call, the first
            name, arguments = _call_target(frame, shell, beacon_url)
            plan.tool_calls.append(cn.call(ids.new("toolu" if parsed.api == "anthropic" else "call"), name, arguments))
            _paced(plan, "tool", arguments, frame.chunk, frame.interval_s, call=len(plan.tool_calls) - 1)
        elif isinstance(frame, sc.Pause):
            plan.steps.append(Sleep(frame.seconds))
        elif isinstance(frame, sc.Finish):
            finish = frame
        else:                       # Stall, Disconnect, StreamError end the stream
            plan.ending = frame
    plan.finish_reason = (finish.reason if finish and finish.reason
                          else "tool_calls" if plan.tool_calls else "stop")
    plan.input_tokens = (finish.input_tokens if finish and finish.input_tokens is not None
                         else estimate_tokens(parsed.canonical))
    generated = len(plan.text) + len(plan.reasoning) + sum(len(c["arguments"]) for c in plan.tool_calls)
    plan.output_tokens = (finish.output_tokens if finish and finish.output_tokens is not None
                          else max(1, generated // 4))
    return plan


def _finish_call(response: sc.Response, parsed: Parsed, shell: ShellTool | None,
                 action: sc.FinishAction | None) -> tuple[sc.Frame, ...]:
    """The finish action's call, for a response that ends its turn with text alone and when
    the request offers what the action needs (a side request, say, offers no tools)."""
    if action is None:
        return ()
    if not response.ends_turn:
        return ()
    if action.shell is not None:
        return (sc.Shell(command=action.shell),) if shell is not None else ()
    if action.tool not in {t.name for t in parsed.tool_defs}:
        return ()
    text = "".join(f.text for f in response.frames if isinstance(f, sc.Text))
    return (sc.ToolCall(action.tool, json.dumps(action.arguments_for(text), ensure_ascii=False)),)


def _call_target(frame, shell: ShellTool | None, beacon_url: str | None) -> tuple[str, str]:
    if isinstance(frame, sc.ToolCall):
        return frame.name, frame.arguments
    if shell is None:
        raise NoShellTool("the scenario calls the shell, but the request offers no usable shell tool")
    return shell.name, shell_arguments(shell, shell_command(frame, beacon_url), frame.extra)


def _paced(plan: Plan, kind: str, text: str, size: int, interval_s: float, call: int = -1):
    for start in range(0, len(text), size) or [0]:
        if interval_s:
            plan.steps.append(Sleep(interval_s))
        plan.steps.append(Delta(kind, text[start:start + size], call=call, first=(start == 0)))

