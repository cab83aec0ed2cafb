"""Anthropic Messages (``POST /v1/messages``): parsing, strictness, event encoding.

Claude Code sends ``HEAD /`` and then ``POST /v1/messages?beta=true`` with thinking enabled;
the stream follows the real sequence: message_start, ping, content blocks (start, deltas,
stop), message_delta with the stop reason, message_stop.

Besides the top-level ``system``, a message with role ``system`` may stand anywhere in
``messages``: Claude Code sends one with its default tool set (MCP instructions, reminders) and
the real API accepts it. Any other role is refused. Consecutive messages of one role are one
turn, as the API combines them; tool results pair with the tool uses of the turn before.
``docs/wire-rules.md`` lists each rule with its source.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from . import canonical as cn
from .errors import STREAM_ERROR_STATUS, ApiError, anthropic_error
from .script import NO_ROUTE, Delta, Ids, Parsed, Plan, continuing
from .shell import ToolDef
from .sse import TEXT, Template, Templates, sse_all
from .strict import schema_problem

NAME = "anthropic"
PATHS = ("/v1/messages", "/messages")
ROLES = ("user", "assistant", "system")
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
THINKING_SIGNATURE = "c3RvcGJlbmNoLWZha2Utc2lnbmF0dXJl"   # a fixed, opaque signature


def error(status: int, message: str | None = None, *, retry_after: float | None = None) -> ApiError:
    return anthropic_error(status, message, retry_after=retry_after)


def unknown_model(model: str) -> ApiError:
    return anthropic_error(404, f"model: {model}")


def _field(body: dict, key: str, kind: type, what: str):
    if key not in body:
        raise anthropic_error(400, f"{key}: Field required")
    value = body[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise anthropic_error(400, f"{key}: Input should be {what}")
    return value


def _blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _text(content) -> str:
    return "".join(b.get("text", "") for b in _blocks(content) if b.get("type") == "text"
                   and isinstance(b.get("text"), str))


def parse(body: dict[str, Any], route: Mapping[str, str] = NO_ROUTE) -> Parsed:
    model = _field(body, "model", str, "a valid string")
    _field(body, "max_tokens", int, "a valid integer")
    raw = _field(body, "messages", list, "a valid list")
    for i, m in enumerate(raw):
        _check_message(m, i, last=i == len(raw) - 1)
    check_balanced(raw)
    messages: list[cn.Message] = []
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        _check_content(system, "system")
    if system:
        messages.append(cn.message("system", system if isinstance(system, str) else _text(system)))
    for m in raw:
        blocks = _blocks(m["content"])
        if m["role"] != "user":
            calls = [cn.call(b.get("id"), b.get("name"), json.dumps(b.get("input", {}), ensure_ascii=False))
                     for b in blocks if b.get("type") == "tool_use"] if m["role"] == "assistant" else []
            messages.append(cn.message(m["role"], _text(m["content"]), calls))
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                content = b.get("content")
                text = content if isinstance(content, str) else _text(content)
                messages.append(cn.message("tool", text, tool_call_id=b.get("tool_use_id")))
        text = _text(m["content"])
        if text or not any(b.get("type") == "tool_result" for b in blocks):
            messages.append(cn.message("user", text))
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise anthropic_error(400, "tools: Input should be a valid list")
    tool_defs = [_tool(t, i) for i, t in enumerate(tools)]
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise anthropic_error(400, "stream: Input should be a valid boolean")
    canonical = cn.request(model, stream, messages, [t.name for t in tool_defs])
    return Parsed(NAME, canonical, tool_defs, stream, model=model)


# What each content block type must carry: field → (its JSON type(s), the type in Anthropic's words).
BLOCK_FIELDS: dict[str, dict[str, tuple[type | tuple[type, ...], str]]] = {
    "text": {"text": (str, "a valid string")},
    "tool_use": {"id": (str, "a valid string"), "name": (str, "a valid string"), "input": (dict, "a valid dictionary")},
    "tool_result": {"tool_use_id": (str, "a valid string")},
}
EMPTY_CONTENT = "all messages must have non-empty content except for the optional final assistant message"


def _check_message(m: Any, i: int, *, last: bool) -> None:
    """Message ``i`` has a known role and content Anthropic reads (see ``_check_content``),
    which is not empty unless it is the final assistant message (a prefill)."""
    if not isinstance(m, dict) or not isinstance(m.get("role"), str) or m["role"] not in ROLES:
        raise anthropic_error(400, f"messages.{i}.role: Input should be 'user', 'assistant' or 'system'")
    content = m.get("content")
    if not isinstance(content, (str, list)):
        raise _mistyped(content, f"messages.{i}.content", "a valid list")
    _check_content(content, f"messages.{i}.content")
    if not content and not (last and m["role"] == "assistant"):
        raise anthropic_error(400, f"messages.{i}: {EMPTY_CONTENT}")


OBJECT = "a valid dictionary or object to extract fields from"


def _mistyped(value: Any, where: str, words: str) -> ApiError:
    """Anthropic's refusal of field ``where``: missing (null), or not ``words``."""
    return anthropic_error(400, f"{where}: Field required" if value is None else f"{where}: Input should be {words}")


def _check_content(content: Any, where: str) -> None:
    """A string, or a list of blocks each with a type and the fields its type needs, text
    blocks not empty."""
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise anthropic_error(400, f"{where}: Input should be a valid list")
    for j, b in enumerate(content):
        at = f"{where}.{j}"
        if not isinstance(b, dict):
            raise _mistyped(b, at, OBJECT)
        kind = b.get("type")
        if not isinstance(kind, str):
            raise _mistyped(kind, f"{at}.type", "a valid string")
        for name, (types, words) in BLOCK_FIELDS.get(kind, {}).items():
            if not isinstance(b.get(name), types):
                raise _mistyped(b.get(name), f"{at}.{kind}.{name}", words)
        if kind == "text" and not b["text"]:
            raise anthropic_error(400, "messages: text content blocks must be non-empty")
        if kind == "tool_result" and b.get("content") is not None:
            _check_content(b["content"], f"{at}.tool_result.content")


def _tool(tool: Any, i: int) -> ToolDef:
    """Tool ``i``: a name, and for a custom tool (no ``type``, or ``custom``) an input schema."""
    if not isinstance(tool, dict):
        raise _mistyped(tool, f"tools.{i}", OBJECT)
    name = tool.get("name")
    if not isinstance(name, str):
        raise _mistyped(name, f"tools.{i}.name", "a valid string")
    schema = tool.get("input_schema")
    if schema is None and tool.get("type", "custom") == "custom":
        raise anthropic_error(400, f"tools.{i}.custom.input_schema: Field required")
    problem = schema_problem(schema) if schema is not None else None
    if problem:
        raise anthropic_error(400, f"tools.{i}.custom.input_schema: JSON schema is invalid: {problem}")
    return ToolDef(name, schema or {})


def check_balanced(raw: list[dict]) -> None:
    """Anthropic's rules, on the turns the API reads (``_turns``): each ``tool_use`` of an
    assistant turn is answered by a ``tool_result`` in the very next turn, a user turn, where the
    results come first, before any other block; and every ``tool_result`` answers a ``tool_use``
    of the turn before it."""
    turns = _turns(raw)
    for k, (i, role, blocks) in enumerate(turns):
        if role == "user":
            previous = turns[k - 1] if k > 0 else None
            offered = {b.get("id") for b in previous[2] if b.get("type") == "tool_use"} \
                if previous and previous[1] == "assistant" else set()
            for j, b in enumerate(blocks):
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in offered:
                    raise anthropic_error(400, f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                                               f"`tool_result` blocks: {b.get('tool_use_id')}. Each `tool_result` "
                                               "block must have a corresponding `tool_use` block in the "
                                               "previous message.")
            continue
        uses = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if not uses:
            continue
        following = turns[k + 1] if k + 1 < len(turns) else None
        answered = set()
        for b in following[2] if following and following[1] == "user" else []:
            if b.get("type") != "tool_result":
                break               # results come first: one after other content answers nothing
            answered.add(b.get("tool_use_id"))
        missing = [u for u in uses if u not in answered]
        if missing:
            raise anthropic_error(400, f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                                       f"immediately after: {', '.join(map(str, missing))}. Each `tool_use` block must "
                                       "have a corresponding `tool_result` block in the next message.")


def _turns(raw: list[dict]) -> list[tuple[int, str, list[dict]]]:
    """The conversation as the API reads it — (index of its first message, role, blocks) per
    turn: system messages passed over, consecutive messages of one role joined into one turn
    (the API combines them)."""
    turns: list[tuple[int, str, list[dict]]] = []
    for i, m in enumerate(raw):
        if m["role"] == "system":
            continue
        if turns and turns[-1][1] == m["role"]:
            turns[-1][2].extend(_blocks(m["content"]))
        else:
            turns.append((i, m["role"], _blocks(m["content"])))
    return turns


PIECES_FIELD = {"text": "text", "thinking": "thinking", "tool_use": "_json"}  # where a block's pieces end up


class Encoder:
    def __init__(self, plan: Plan, parsed: Parsed, ids: Ids):
        self.plan, self.parsed = plan, parsed
        self.id = ids.new("msg")
        self.blocks: list[dict] = []
        self.open_kind = ""
        self.is_open = False
        self.pieces: list[str] = []         # the open block's text (or JSON) so far
        self.templates = Templates()

    def _message(self, content: list, stop_reason, output_tokens: int) -> dict:
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.parsed.model,
                "content": content, "stop_reason": stop_reason, "stop_sequence": None,
                "usage": {"input_tokens": self.plan.input_tokens, "output_tokens": output_tokens,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}

    def start(self) -> list:
        return [("message_start", {"type": "message_start", "message": self._message([], None, 1)}),
                ("ping", {"type": "ping"})]

    def delta(self, d: Delta) -> list:
        events = []
        if self._opens(d):
            events += self._close()
            events.append(self._open(d))
        self.pieces.append(d.text)
        events.append(self._delta_event(d.kind, len(self.blocks) - 1, d.text))
        return events

    def delta_sse(self, d: Delta) -> bytes:
        """``delta`` as SSE bytes: a piece of the open block is one event that differs from the
        block's last in its text alone."""
        if not self._opens(d):
            template = self._template(d)
            if template:
                self.pieces.append(d.text)
                return template.fill(d.text)
        return sse_all(self.delta(d))

    def burst_sse(self, burst: list[Delta]) -> bytes:
        if not self._opens(burst[0]) and continuing(burst):
            template = self._template(burst[0])
            if template:
                texts = [d.text for d in burst]
                self.pieces.extend(texts)
                return template.fill_all(texts)
        return b"".join([self.delta_sse(d) for d in burst])

    def _template(self, d: Delta) -> Template | Literal[False]:
        """The template of a further piece of the open block."""
        index = len(self.blocks) - 1
        template = self.templates.made.get(index)
        if template is None:
            template = self.templates.make(index, [self._delta_event(d.kind, index, TEXT)])
        return template

    def _opens(self, d: Delta) -> bool:
        """Whether ``d`` starts a block (closing the open one first)."""
        return not self.is_open or d.kind != self.open_kind or (d.kind == "tool" and d.first)

    @staticmethod
    def _delta_event(kind: str, index: int, text: str) -> tuple[str, dict]:
        delta = ({"type": "text_delta", "text": text} if kind == "text" else
                 {"type": "thinking_delta", "thinking": text} if kind == "reasoning" else
                 {"type": "input_json_delta", "partial_json": text})
        return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}

    def _open(self, d: Delta):
        self.open_kind, self.is_open = d.kind, True
        block: dict[str, Any]
        if d.kind == "text":
            block = {"type": "text", "text": ""}
        elif d.kind == "reasoning":
            block = {"type": "thinking", "thinking": "", "signature": ""}
        else:
            call = self.plan.tool_calls[d.call]
            block = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": {}, "_json": ""}
        self.blocks.append(block)
        shown = {k: v for k, v in block.items() if k != "_json"}
        return "content_block_start", {"type": "content_block_start", "index": len(self.blocks) - 1,
                                       "content_block": shown}

    def _close(self) -> list:
        if not self.is_open:
            return []
        self.is_open = False
        index, block = len(self.blocks) - 1, self.blocks[-1]
        joined, self.pieces = "".join(self.pieces), []   # the block's text, kept in pieces while it was open
        block[PIECES_FIELD[block["type"]]] = joined
        events = []
        if block["type"] == "thinking":
            block["signature"] = THINKING_SIGNATURE
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                "type": "signature_delta", "signature": THINKING_SIGNATURE}}))
        if block["type"] == "tool_use":
            block["input"] = json.loads(block.pop("_json") or "{}")
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        return events

    def finish(self) -> list:
        events = self._close()
        stop_reason = STOP_REASONS[self.plan.finish_reason]
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                         "usage": {"output_tokens": self.plan.output_tokens}}))
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def error(self, kind: str, message: str) -> list:
        body = anthropic_error(STREAM_ERROR_STATUS[kind], message).body
        return [("error", {"type": "error", "error": body["error"]})]

    def body(self) -> dict:
        """The non-streamed body, from the blocks the silently played stream built."""
        self._close()
        return self._message(self.blocks, STOP_REASONS[self.plan.finish_reason], self.plan.output_tokens)
