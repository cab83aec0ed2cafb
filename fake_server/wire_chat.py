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

NAME = "chat"
PATHS = ("/v1/chat/completions", "/chat/completions")

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
         "tool": "tool", "function": "tool"}


def require(body: dict, key: str, kind: type, kind_name: str):
    """The value of a required field of the right JSON type, or OpenAI's own 400."""
    if key not in body:
        raise openai_error(400, f"Missing required parameter: '{key}'.", param=key,
                           code="missing_required_parameter")
    value = body[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise openai_error(400, f"Invalid type for '{key}': expected {kind_name}, but got "
                                f"{json_type(value)} instead.", param=key, code="invalid_type")
    return value


def json_type(value) -> str:
    return {bool: "a boolean", int: "an integer", float: "a decimal", str: "a string",
            list: "an array", dict: "an object", type(None): "null"}.get(type(value), "a value")


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
    canonical_messages: list[cn.Message] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise openai_error(400, f"Invalid value for 'messages[{i}].role': expected one of "
                                    "'system', 'developer', 'user', 'assistant', 'tool'.",
                               param=f"messages.[{i}].role", code="invalid_value")
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
            raise openai_error(400, f"Invalid type for 'messages[{i}].tool_calls': expected an array "
                                    "of objects.", param=f"messages.[{i}].tool_calls", code="invalid_type")
        canonical_messages.append(cn.message(ROLES[m["role"]], content_text(m.get("content")),
                                             [_call(c) for c in calls], m.get("tool_call_id")))
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise openai_error(400, f"Invalid type for 'tools': expected an array, but got "
                                f"{json_type(tools)} instead.", param="tools", code="invalid_type")
    tool_defs = []
    for i, t in enumerate(tools):
        function = t.get("function") if isinstance(t, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise openai_error(400, f"Missing required parameter: 'tools[{i}].function.name'.",
                               param=f"tools[{i}].function.name", code="missing_required_parameter")
        tool_defs.append(ToolDef(function["name"], function.get("parameters") or {}))
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise openai_error(400, f"Invalid type for 'stream': expected a boolean, but got "
                                f"{json_type(stream)} instead.", param="stream", code="invalid_type")
    options = body.get("stream_options") or {}
    check_balanced(canonical_messages)
    canonical = cn.request(model, stream, canonical_messages, [t.name for t in tool_defs])
    return Parsed(NAME, canonical, tool_defs, stream,
                  include_usage=bool(isinstance(options, dict) and options.get("include_usage")), model=model)


def _call(call: dict) -> cn.Call:
    function = call["function"] if isinstance(call.get("function"), dict) else {}
    return cn.call(call.get("id"), function.get("name"), function.get("arguments", ""))


def check_balanced(messages: list[cn.Message]) -> None:
    """OpenAI's rule: tool calls are answered by tool messages right after, and only then."""
    pending: list[str | None] = []
    pending_at = 0
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            if m["tool_call_id"] not in pending:
                raise openai_error(400, "Invalid parameter: messages with role 'tool' must be a response "
                                        "to a preceeding message with 'tool_calls'.",
                                   param=f"messages.[{i}].role")
            pending.remove(m["tool_call_id"])
            continue
        if pending:
            raise _unanswered(pending, pending_at)
        if m["role"] == "assistant" and m["tool_calls"]:
            pending, pending_at = [c["id"] for c in m["tool_calls"]], i
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

