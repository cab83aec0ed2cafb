"""OpenAI Chat Completions (``POST /v1/chat/completions``): parsing, strictness, chunk and body encoding.

Most agents speak this API. ``system`` and ``developer`` messages are accepted anywhere in the
conversation, as OpenAI accepts them (gptme and OpenHands put them mid-conversation).
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

from . import canonical as cn
from .errors import STREAM_ERROR_STATUS, ApiError, openai_error
from .script import NO_ROUTE, Delta, Ids, Parsed, Plan, continuing
from .shell import ToolDef
from .sse import TEXT, Template, Templates, sse_all
from .strict import kind_of as json_type
from .strict import schema_problem

NAME = "chat"
PATHS = ("/v1/chat/completions", "/chat/completions")

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
         "tool": "tool", "function": "tool"}


def require(body: dict, key: str, kind: type | tuple[type, ...], kind_name: str, *, where: str = "",
            optional: bool = False):
    """The value of field ``key`` of ``body`` (at ``where`` in the request) if it is of the right
    JSON type, or OpenAI's own 400 naming it; an ``optional`` field may be absent (None then)."""
    name = f"{where}.{key}" if where else key
    if key not in body:
        if optional:
            return None
        raise openai_error(400, f"Missing required parameter: '{name}'.", param=name,
                           code="missing_required_parameter")
    value = body[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise openai_error(400, f"Invalid type for '{name}': expected {kind_name}, but got "
                                f"{json_type(value)} instead.", param=name, code="invalid_type")
    return value


def content_text(content) -> str:
    """Text of a content that is a string or a list of parts (text parts only)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content
                       if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def error(status: int, message: str | None = None, *, retry_after: float | None = None) -> ApiError:
    return openai_error(status, message, retry_after=retry_after)


def unknown_model(model: str) -> ApiError:
    return openai_error(404, f"The model `{model}` does not exist or you do not have access to it.",
                        param="model", code="model_not_found")


def parse(body: dict[str, Any], route: Mapping[str, str] = NO_ROUTE) -> Parsed:
    model = require(body, "model", str, "a string")
    messages = require(body, "messages", list, "an array")
    if not messages:
        raise openai_error(400, "Invalid 'messages': empty array. Expected an array with minimum "
                                "length 1, but got an empty array instead.", param="messages",
                           code="empty_array")
    canonical_messages = [_message(m, i) for i, m in enumerate(messages)]
    tools = require(body, "tools", (list, type(None)), "an array", optional=True) or []
    tool_defs = [_tool(t, i) for i, t in enumerate(tools)]
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise openai_error(400, f"Invalid type for 'stream': expected a boolean, but got "
                                f"{json_type(stream)} instead.", param="stream", code="invalid_type")
    options = require(body, "stream_options", (dict, type(None)), "an object", optional=True) or {}
    check_balanced(canonical_messages)
    canonical = cn.request(model, stream, canonical_messages, [t.name for t in tool_defs])
    return Parsed(NAME, canonical, tool_defs, stream,
                  include_usage=bool(isinstance(options, dict) and options.get("include_usage")), model=model,
                  one_tool_call=body.get("parallel_tool_calls") is False)


def _message(m: Any, i: int) -> cn.Message:
    """Message ``i`` in canonical form; OpenAI's 400 for a role, content, tool call or tool call
    id of the wrong shape."""
    if not isinstance(m, dict) or not isinstance(m.get("role"), str) or m["role"] not in ROLES:
        raise openai_error(400, f"Invalid value for 'messages[{i}].role': expected one of "
                                "'system', 'developer', 'user', 'assistant', 'tool'.",
                           param=f"messages.[{i}].role", code="invalid_value")
    where = f"messages[{i}]"
    assistant = m["role"] == "assistant"     # the one role whose content may be absent or null
    content = require(m, "content", (str, list, type(None)) if assistant else (str, list),
                      "one of a string or array of objects", where=where, optional=assistant)
    for j, part in enumerate(content if isinstance(content, list) else []):
        if not isinstance(part, dict):
            raise openai_error(400, f"Invalid type for '{where}.content[{j}]': expected an object, but got "
                                    f"{json_type(part)} instead.", param=f"{where}.content[{j}]", code="invalid_type")
    calls = require(m, "tool_calls", (list, type(None)), "an array of objects", where=where, optional=True) or []
    tool_call_id = None
    if m["role"] == "tool":
        tool_call_id = require(m, "tool_call_id", str, "a string", where=where)
    return cn.message(ROLES[m["role"]], content_text(content),
                      [_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(calls)], tool_call_id)


def _call(call: Any, where: str) -> cn.Call:
    if not isinstance(call, dict):
        raise openai_error(400, f"Invalid type for '{where}': expected an object, but got {json_type(call)} "
                                "instead.", param=where, code="invalid_type")
    require(call, "type", str, "a string", where=where)
    function = require(call, "function", dict, "an object", where=where)
    return cn.call(require(call, "id", str, "a string", where=where),
                   require(function, "name", str, "a string", where=f"{where}.function"),
                   require(function, "arguments", str, "a string", where=f"{where}.function"))


def _tool(tool: Any, i: int) -> ToolDef:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise openai_error(400, f"Missing required parameter: 'tools[{i}].function.name'.",
                           param=f"tools[{i}].function.name", code="missing_required_parameter")
    parameters = function.get("parameters")
    problem = schema_problem(parameters) if parameters is not None else None
    if problem:
        raise openai_error(400, f"Invalid schema for function '{function['name']}': {problem}.",
                           param=f"tools[{i}].function.parameters", code="invalid_function_parameters")
    return ToolDef(function["name"], parameters or {})


def check_balanced(messages: list[cn.Message]) -> None:
    """OpenAI's rules: an assistant message's tool calls are answered by tool messages right
    after it, one per call, before any other message; a tool message answers a call of the
    assistant message it follows."""
    offered: list[str | None] = []      # the calls of the assistant message the tool messages follow
    pending: list[str | None] = []
    pending_at = 0
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            if not offered:
                raise openai_error(400, "Invalid parameter: messages with role 'tool' must be a response "
                                        "to a preceeding message with 'tool_calls'.", param=f"messages.[{i}].role")
            if m["tool_call_id"] not in pending:
                raise openai_error(400, f"Invalid parameter: 'tool_call_id' of '{m['tool_call_id']}' not found in "
                                        "'tool_calls' of previous message.", param=f"messages.[{i}].tool_call_id")
            pending.remove(m["tool_call_id"])
            continue
        if pending:
            raise _unanswered(pending, pending_at)
        offered = [c["id"] for c in m["tool_calls"]] if m["role"] == "assistant" else []
        pending, pending_at = list(offered), i
    if pending:
        raise _unanswered(pending, pending_at)


def _unanswered(ids: list[str | None], index: int) -> ApiError:
    return openai_error(400, "An assistant message with 'tool_calls' must be followed by tool messages "
                             "responding to each 'tool_call_id'. The following tool_call_ids did not "
                             f"have response messages: {', '.join(map(str, ids))}", param=f"messages.[{index}].role")


class Encoder:
    """Chat Completions chunks (SSE ``data:`` lines) and the non-streamed body for one plan."""

    def __init__(self, plan: Plan, parsed: Parsed, ids: Ids):
        self.plan, self.parsed = plan, parsed
        self.id = ids.new("chatcmpl", sep="-")
        self.created = int(time.time())
        self.role_sent = False
        self.templates = Templates()

    def _chunk(self, delta: dict, finish_reason=None) -> dict:
        if not self.role_sent:
            delta = {"role": "assistant", **delta}
            self.role_sent = True
        chunk = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                 "model": self.parsed.model,
                 "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}
        if self.parsed.include_usage:
            chunk["usage"] = None
        return chunk

    def start(self) -> list:
        return []

    def delta(self, d: Delta) -> list:
        if d.kind == "tool" and d.first:
            call = self.plan.tool_calls[d.call]
            return [(None, self._chunk({"content": None, "tool_calls": [
                {"index": d.call, "id": call["id"], "type": "function",
                 "function": {"name": call["name"], "arguments": d.text}}]}))]
        return [(None, self._chunk(self._piece(d.kind, d.call, d.text)))]

    def delta_sse(self, d: Delta) -> bytes:
        """``delta`` as SSE bytes: after the first chunk (the one with the role) every piece but a
        call's first is one chunk that differs from the last of its kind in its text alone."""
        if self.role_sent and not (d.kind == "tool" and d.first):
            template = self._template(d)
            if template:
                return template.fill(d.text)
        return sse_all(self.delta(d))

    def burst_sse(self, burst: list[Delta]) -> bytes:
        if self.role_sent and continuing(burst):
            template = self._template(burst[0])
            if template:
                return template.fill_all([d.text for d in burst])
        return b"".join([self.delta_sse(d) for d in burst])

    def _template(self, d: Delta) -> Template | Literal[False]:
        key = d.call if d.kind == "tool" else d.kind
        template = self.templates.made.get(key)
        if template is None:
            template = self.templates.make(key, [(None, self._chunk(self._piece(d.kind, d.call, TEXT)))])
        return template

    @staticmethod
    def _piece(kind: str, call: int, text: str) -> dict:
        if kind == "text":
            return {"content": text}
        if kind == "reasoning":
            return {"content": None, "reasoning_content": text}
        return {"content": None, "tool_calls": [{"index": call, "function": {"arguments": text}}]}

    def finish(self) -> list:
        events = [(None, self._chunk({}, self.plan.finish_reason))]
        if self.parsed.include_usage:
            events.append((None, {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                                  "model": self.parsed.model,
                                  "choices": [], "usage": self.usage()}))
        return events + [(None, "[DONE]")]

    def error(self, kind: str, message: str) -> list:
        return [(None, openai_error(STREAM_ERROR_STATUS[kind], message).body)]

    def usage(self) -> dict:
        p, c = self.plan.input_tokens, self.plan.output_tokens
        return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}

    def body(self) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": self.plan.text or None, "refusal": None}
        if self.plan.reasoning:
            message["reasoning_content"] = self.plan.reasoning
        if self.plan.tool_calls:
            message["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                                     for c in self.plan.tool_calls]
        return {"id": self.id, "object": "chat.completion", "created": self.created,
                "model": self.parsed.model,
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": self.plan.finish_reason}],
                "usage": self.usage()}

