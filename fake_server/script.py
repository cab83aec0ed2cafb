"""From a scenario response to a wire-neutral plan of steps.

The plan is computed once per request — which response, the full text, the tool calls with
their ids, the finish reason, and the paced sequence of deltas — and the three wire
encoders only translate it. That is what makes the chunk numbering (``chunk k of request
n``) the same whichever API the agent speaks.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from . import scenario as sc
from .shell import NoShellTool, ShellTool, ToolDef, detect_shell_tool, shell_arguments, shell_command


@dataclass
class Parsed:
    """A request understood: its API, its canonical form, and what streaming asked for."""
    api: str                       # "chat" | "responses" | "anthropic"
    canonical: dict
    tool_defs: list[ToolDef]
    stream: bool
    include_usage: bool = False
    model: str = ""


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

    def release(self, index: int):
        """Make a response chosen for a request that could not be answered available again."""
        self.used.discard(index)

    def choose(self, canonical: dict) -> tuple[int, sc.Response]:
        for index, response in enumerate(self.scenario.responses):
            if index in self.used or not response.match.accepts(canonical):
                continue
            if not response.repeat:
                self.used.add(index)
            return index, response
        left = len(self.scenario.responses) - len(self.used)
        raise Exhausted(
            f"scenario '{self.scenario.name}' ({self.scenario.source}) has no response left for this "
            f"request: {len(self.scenario.responses)} responses, {left} unused, none of them matches "
            f"(last message role: {_last_role(canonical)!r}, tools offered: {bool(canonical.get('tools'))})")


def _last_role(canonical: dict) -> str | None:
    messages = canonical.get("messages") or []
    return messages[-1].get("role") if messages else None


def detect_shell(parsed: Parsed, scenario: sc.Scenario) -> ShellTool | None:
    """Fill ``canonical["shell_tool"]`` and return the detected tool."""
    tool = detect_shell_tool(parsed.tool_defs, scenario.shell_tool)
    parsed.canonical["shell_tool"] = tool.name if tool else None
    return tool


# --- steps --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Delta:
    """One numbered chunk: a piece of text, reasoning, or tool-call arguments."""
    kind: str                      # "text" | "reasoning" | "tool"
    text: str
    call: int = -1                 # index into plan.tool_calls for kind == "tool"
    first: bool = False            # first piece of its tool call (carries id and name)


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass
class Plan:
    index: int
    text: str = ""
    reasoning: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    finish_reason: str = "stop"
    steps: list = field(default_factory=list)          # Delta | Sleep
    ending: object = None          # None (normal finish) | Stall | Disconnect | StreamError
    http_error: sc.HttpError | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    def response_record(self, request_no: int) -> dict:
        record = {"kind": "response", "request": request_no, "response_index": self.index,
                  "text": self.text, "tool_calls": self.tool_calls, "finish_reason": self.finish_reason}
        if self.http_error is not None:
            record["http_error"] = self.http_error.status
        if self.ending is not None:
            record["ending"] = type(self.ending).__name__.lower()
        return record


def build_plan(index: int, response: sc.Response, parsed: Parsed, shell: ShellTool | None,
               ids: Ids, beacon_url: str | None) -> Plan:
    """Lay out ``response`` for ``parsed``; raise NoShellTool when a shell frame cannot map."""
    plan = Plan(index=index)
    finish: sc.Finish | None = None
    for frame in response.frames:
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
            name, arguments = _call_target(frame, shell, beacon_url)
            call = {"id": ids.new("toolu" if parsed.api == "anthropic" else "call"), "name": name,
                    "arguments": arguments}
            plan.tool_calls.append(call)
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


def estimate_tokens(canonical: dict) -> int:
    chars = sum(len(m.get("text") or "") for m in canonical.get("messages") or [])
    return max(1, chars // 4)
