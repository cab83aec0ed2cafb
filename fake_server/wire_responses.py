"""OpenAI Responses API (``POST /v1/responses``): parsing, strictness, event encoding.

Codex CLI speaks only this API, so its event sequence follows the real one: every output item
is opened (``output_item.added``), filled by deltas, and closed (``.done`` events, then
``output_item.done``) before the next one opens, and the stream ends with
``response.completed`` (or ``response.incomplete`` / ``response.failed``).
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

from . import canonical as cn
from .errors import STREAM_ERROR_STATUS, openai_error
from .script import NO_ROUTE, Delta, Ids, Parsed, Plan, continuing
from .shell import ToolDef
from .sse import NUMBER, TEXT, Template, Templates, sse_all
from .strict import schema_problem
from .wire_chat import content_text, error, json_type, require, unknown_model

NAME = "responses"
PATHS = ("/v1/responses", "/responses")
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
__all__ = ["NAME", "PATHS", "Encoder", "error", "parse", "unknown_model"]


def parse(body: dict[str, Any], route: Mapping[str, str] = NO_ROUTE) -> Parsed:
    model = require(body, "model", str, "a string")
    if "input" not in body:
        raise openai_error(400, "Missing required parameter: 'input'.", param="input",
                           code="missing_required_parameter")
    raw_input = body["input"]
    if isinstance(raw_input, str):
        raw_input = [{"role": "user", "content": raw_input}]
    if not isinstance(raw_input, list):
        raise openai_error(400, f"Invalid type for 'input': expected a string or an array, but got "
                                f"{json_type(raw_input)} instead.", param="input", code="invalid_type")
    messages: list[cn.Message] = []
    instructions = require(body, "instructions", (str, type(None)), "a string", optional=True)
    if instructions:
        messages.append(cn.message("system", instructions))
    for i, item in enumerate(raw_input):
        _item(item, i, messages)
    tools = require(body, "tools", (list, type(None)), "an array", optional=True) or []
    tool_defs = [_tool(t, i) for i, t in enumerate(tools)]
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise openai_error(400, f"Invalid type for 'stream': expected a boolean, but got {json_type(stream)} "
                                "instead.", param="stream", code="invalid_type")
    check_balanced(messages)
    canonical = cn.request(model, stream, messages, [t.name for t in tool_defs])
    return Parsed(NAME, canonical, tool_defs, stream, model=model,
                  one_tool_call=body.get("parallel_tool_calls") is False)


def _item(item: Any, i: int, messages: list[cn.Message]) -> None:
    """Add input item ``i`` to ``messages`` in canonical form; OpenAI's 400 for one of the wrong shape."""
    where = f"input[{i}]"
    if not isinstance(item, dict):
        raise openai_error(400, f"Invalid type for '{where}': expected an object, but got "
                                f"{json_type(item)} instead.", param=where, code="invalid_type")
    kind = require(item, "type", str, "a string", where=where, optional=True) or "message"
    if kind == "message":
        if not isinstance(item.get("role"), str) or item["role"] not in ROLES:
            raise openai_error(400, f"Invalid value for '{where}.role'.", param=f"{where}.role", code="invalid_value")
        content = require(item, "content", (str, list), "one of a string or array of objects", where=where)
        messages.append(cn.message(ROLES[item["role"]], content_text(content)))
    elif kind == "function_call":
        call = cn.call(require(item, "call_id", str, "a string", where=where),
                       require(item, "name", str, "a string", where=where),
                       require(item, "arguments", str, "a string", where=where))
        if messages and messages[-1]["role"] == "assistant":
            messages[-1]["tool_calls"].append(call)
        else:
            messages.append(cn.message("assistant", "", [call]))
    elif kind == "function_call_output":
        call_id = require(item, "call_id", str, "a string", where=where)
        output = require(item, "output", (str, list), "one of a string or array of objects", where=where)
        messages.append(cn.message("tool", content_text(output), tool_call_id=call_id))
    # reasoning and other item types carry nothing the canonical form keeps


def _tool(tool: Any, i: int) -> ToolDef:
    """Tool ``i``: a function tool has a name and a parameters schema; another (a custom tool,
    web search …) is named by its name, or its type when it has none."""
    where = f"tools[{i}]"
    if not isinstance(tool, dict):
        raise openai_error(400, f"Invalid type for '{where}': expected an object, but got "
                                f"{json_type(tool)} instead.", param=where, code="invalid_type")
    kind = require(tool, "type", str, "a string", where=where)
    if kind != "function":
        return ToolDef(tool["name"] if isinstance(tool.get("name"), str) else kind, {})
    name = require(tool, "name", str, "a string", where=where)
    parameters = tool.get("parameters")
    problem = schema_problem(parameters) if parameters is not None else None
    if problem:
        raise openai_error(400, f"Invalid schema for function '{name}': {problem}.",
                           param=f"{where}.parameters", code="invalid_function_parameters")
    return ToolDef(name, parameters or {})


def check_balanced(messages: list[cn.Message]) -> None:
    """The Responses rule: every function_call has its output somewhere later, and vice versa."""
    called: set[str | None] = set()
    answered: set[str | None] = set()
    for m in messages:
        if m["role"] == "tool":
            if m["tool_call_id"] not in called:
                raise openai_error(400, "No tool call found for function call output with call_id "
                                        f"{m['tool_call_id']}.", param="input")
            answered.add(m["tool_call_id"])
        for call in m["tool_calls"]:
            called.add(call["id"])
    for m in messages:
        for call in m["tool_calls"]:
            if call["id"] not in answered:
                raise openai_error(400, f"No tool output found for function call {call['id']}.", param="input")


class Encoder:
    def __init__(self, plan: Plan, parsed: Parsed, ids: Ids):
        self.plan, self.parsed, self.ids = plan, parsed, ids
        self.id = ids.new("resp")
        self.created = int(time.time())
        self.sequence = 0
        self.output: list[dict] = []
        self.open: dict | None = None       # the item being streamed
        self.open_kind = ""
        self.open_call = -1
        self.pieces: list[str] = []         # the open item's text (or arguments) so far
        self.templates = Templates()

    def _event(self, kind: str, **fields) -> tuple[str, dict]:
        event = {"type": kind, **fields, "sequence_number": self.sequence}
        self.sequence += 1
        return kind, event

    def response(self, status: str, **extra) -> dict:
        p = self.plan
        extra = dict(extra)
        if status != "in_progress":
            extra["usage"] = {"input_tokens": p.input_tokens,
                              "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                              "output_tokens": p.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                              "total_tokens": p.input_tokens + p.output_tokens}
        return {"id": self.id, "object": "response", "created_at": self.created, "status": status,
                "completed_at": self.created if status == "completed" else None, "error": None,
                "incomplete_details": None, "instructions": None, "max_output_tokens": None,
                "model": self.parsed.model, "output": list(self.output),
                "parallel_tool_calls": not self.parsed.one_tool_call,
                "previous_response_id": None, "reasoning": {"effort": None, "summary": None},
                "store": False, "temperature": 1, "text": {"format": {"type": "text"}},
                "tool_choice": "auto", "tools": [], "top_p": 1, "truncation": "disabled",
                "metadata": {}, **extra}

    def start(self) -> list:
        return [self._event("response.created", response=self.response("in_progress")),
                self._event("response.in_progress", response=self.response("in_progress"))]

    def delta(self, d: Delta) -> list:
        events = []
        if self._opens(d):
            events += self._close()
            events += self._open(d)
        assert self.open is not None
        self.pieces.append(d.text)
        events.append(self._delta_event(d.kind, self.open["id"], len(self.output), d.text, self.sequence))
        self.sequence += 1
        return events

    def delta_sse(self, d: Delta) -> bytes:
        """``delta`` as SSE bytes: a piece of the open item is one event that differs from the
        item's last in its text and sequence number alone."""
        if not self._opens(d):
            template = self._template(d)
            if template:
                self.pieces.append(d.text)
                self.sequence += 1
                return template.fill_numbered(d.text, self.sequence - 1)
        return sse_all(self.delta(d))

    def burst_sse(self, burst: list[Delta]) -> bytes:
        if not self._opens(burst[0]) and continuing(burst):
            template = self._template(burst[0])
            if template:
                texts = [d.text for d in burst]
                self.pieces.extend(texts)
                first, self.sequence = self.sequence, self.sequence + len(texts)
                return template.fill_all_numbered(texts, first)
        return b"".join([self.delta_sse(d) for d in burst])

    def _template(self, d: Delta) -> Template | Literal[False]:
        """The template of a further piece of the open item."""
        assert self.open is not None
        item_id = self.open["id"]
        template = self.templates.made.get(item_id)
        if template is None:
            event = self._delta_event(d.kind, item_id, len(self.output), TEXT, NUMBER)
            template = self.templates.make(item_id, [event], numbered=True)
        return template

    def _opens(self, d: Delta) -> bool:
        """Whether ``d`` starts an item (closing the open one first)."""
        return self.open is None or d.kind != self.open_kind or (d.kind == "tool" and d.first)

    @staticmethod
    def _delta_event(kind: str, item_id: str, index: int, text: str, sequence: int) -> tuple[str, dict]:
        fields: dict[str, Any]
        if kind == "text":
            name, fields = "response.output_text.delta", {"item_id": item_id, "output_index": index,
                                                          "content_index": 0, "delta": text, "logprobs": []}
        elif kind == "reasoning":
            name, fields = "response.reasoning_summary_text.delta", {"item_id": item_id, "output_index": index,
                                                                     "summary_index": 0, "delta": text}
        else:
            name, fields = "response.function_call_arguments.delta", {"item_id": item_id, "output_index": index,
                                                                      "delta": text}
        return name, {"type": name, **fields, "sequence_number": sequence}

    def _open(self, d: Delta) -> list:
        index = len(self.output)
        self.open_kind = d.kind
        if d.kind == "text":
            self.open = {"id": self.ids.new("msg"), "type": "message", "status": "in_progress",
                         "role": "assistant", "content": [{"type": "output_text", "text": "", "annotations": [],
                                                           "logprobs": []}]}
            added = {**self.open, "content": []}
            return [self._event("response.output_item.added", output_index=index, item=added),
                    self._event("response.content_part.added", item_id=self.open["id"], output_index=index,
                                content_index=0, part={"type": "output_text", "text": "", "annotations": [],
                                                       "logprobs": []})]
        if d.kind == "reasoning":
            self.open = {"id": self.ids.new("rs"), "type": "reasoning",
                         "summary": [{"type": "summary_text", "text": ""}]}
            added = {**self.open, "summary": []}
            return [self._event("response.output_item.added", output_index=index, item=added),
                    self._event("response.reasoning_summary_part.added", item_id=self.open["id"], output_index=index,
                                summary_index=0, part={"type": "summary_text", "text": ""})]
        call = self.plan.tool_calls[d.call]
        self.open = {"id": self.ids.new("fc"), "type": "function_call", "status": "in_progress",
                     "call_id": call["id"], "name": call["name"], "arguments": ""}
        return [self._event("response.output_item.added", output_index=index, item=dict(self.open))]

    def _close(self) -> list:
        if self.open is None:
            return []
        item, index = self.open, len(self.output)
        self.open = None
        joined, self.pieces = "".join(self.pieces), []   # the item's text, kept in pieces while it was open
        if item["type"] == "message":
            item["content"][0]["text"] = joined
        elif item["type"] == "reasoning":
            item["summary"][0]["text"] = joined
        else:
            item["arguments"] = joined
        events = []
        if item["type"] == "message":
            part = item["content"][0]
            events += [self._event("response.output_text.done", item_id=item["id"], output_index=index,
                                   content_index=0, text=part["text"], logprobs=[]),
                       self._event("response.content_part.done", item_id=item["id"], output_index=index,
                                   content_index=0, part=part)]
        elif item["type"] == "reasoning":
            part = item["summary"][0]
            events += [self._event("response.reasoning_summary_text.done", item_id=item["id"], output_index=index,
                                   summary_index=0, text=part["text"]),
                       self._event("response.reasoning_summary_part.done", item_id=item["id"], output_index=index,
                                   summary_index=0, part=part)]
        else:
            events.append(self._event("response.function_call_arguments.done", item_id=item["id"],
                                      output_index=index, name=item["name"], arguments=item["arguments"]))
        if "status" in item:
            item["status"] = "completed"
        self.output.append(item)
        events.append(self._event("response.output_item.done", output_index=index, item=item))
        return events

    def finish(self) -> list:
        events = self._close()
        if self.plan.finish_reason == "length":
            return events + [self._event("response.incomplete", response=self.response(
                "incomplete", incomplete_details={"reason": "max_output_tokens"}))]
        return events + [self._event("response.completed", response=self.response("completed"))]

    def error(self, kind: str, message: str) -> list:
        error = openai_error(STREAM_ERROR_STATUS[kind], message).body["error"]
        code = error["code"] or error["type"]
        return [self._event("error", code=code, message=message, param=None),
                self._event("response.failed", response=self.response(
                    "failed", error={"code": code, "message": message}))]

    def body(self) -> dict:
        """The non-streamed body: the response object as the (silently played) stream left it."""
        self._close()
        if self.plan.finish_reason == "length":
            return self.response("incomplete", incomplete_details={"reason": "max_output_tokens"})
        return self.response("completed")
