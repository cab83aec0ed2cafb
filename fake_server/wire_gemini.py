"""Gemini API (``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` and
``…:generateContent``): parsing, strictness, frame encoding.

Gemini CLI speaks only this API (and pi can). The model and the method are in the path, not
the body, so the route carries them. A stream is SSE ``data:`` frames, each a whole
``GenerateContentResponse``, with no terminator: the stream just ends, its last frame
carrying ``finishReason`` and ``usageMetadata``. The Gemini API sends a function call whole
(its ``args`` an object, never split), so the pieces of a call's arguments before its last
are frames whose content has no parts — each numbered chunk is still one write — and the
call itself goes out with its last piece.

History is ``contents`` of turns with role ``user`` or ``model``; a model turn's
``functionCall`` parts are answered by ``functionResponse`` parts in the user turn right after
it, as many as there were calls. Results are paired with calls by ``id`` when the client
echoes one, else by name, else in order. A field may be spelt in lowerCamelCase or in
snake_case, as proto JSON allows (the Python SDK sends ``parameters_json_schema``).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from . import canonical as cn
from .errors import STREAM_ERROR_STATUS, ApiError, google_error
from .script import NO_ROUTE, Delta, Ids, Parsed, Plan, continuing
from .shell import ToolDef
from .sse import TEXT, Template, Templates, sse_all
from .strict import kind_of, schema_problem

NAME = "gemini"
PATHS = ("/v1beta/models/{model}:{method}", "/v1/models/{model}:{method}")
METHODS = {"streamGenerateContent": True, "generateContent": False}   # method → streamed
ROLES = {"user": "user", "model": "assistant"}
FINISH_REASONS = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}
THOUGHT_SIGNATURE = "c3RvcGJlbmNoLWZha2UtdGhvdWdodC1zaWduYXR1cmU="   # a fixed, opaque signature

CALL_AFTER_USER = ("Please ensure that function call turn comes immediately after a user turn or after a "
                   "function response turn.")
RESPONSE_AFTER_CALL = "Please ensure that function response turn comes immediately after a function call turn."
COUNTS_DIFFER = ("Please ensure that the number of function response parts is equal to the number of function "
                 "call parts of the function call turn.")


def error(status: int, message: str | None = None, *, retry_after: float | None = None) -> ApiError:
    return google_error(status, message, retry_after=retry_after)


def unknown_model(model: str) -> ApiError:
    return google_error(404, f"models/{model} is not found for API version v1beta, or is not supported for "
                             "generateContent. Call ListModels to see the list of available models and their "
                             "supported methods.")


def parse(body: dict[str, Any], route: Mapping[str, str] = NO_ROUTE) -> Parsed:
    method = route.get("method", "")
    if method not in METHODS:
        raise google_error(404, f"Method not found: {method or '(none)'}; this model serves "
                                f"{' and '.join(METHODS)}.")
    model = route.get("model", "")
    if not model:
        raise google_error(400, "* GenerateContentRequest.model: unexpected model name format")
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise google_error(400, "* GenerateContentRequest.contents: contents is not specified")
    turns = [_turn(c, i) for i, c in enumerate(contents)]
    check_balanced(turns)
    messages: list[cn.Message] = []
    system = _get(body, "systemInstruction")
    if system is not None:
        if not isinstance(system, dict):
            raise google_error(400, "Invalid value at 'system_instruction', must be a Content object")
        text = _text(_parts(system, "system_instruction"))
        if text:
            messages.append(cn.message("system", text))
    previous_calls: list[cn.Call] = []
    for i, (role, parts) in enumerate(turns):
        if role == "model":
            calls = [_get(p, "functionCall") for p in parts if _has(p, "functionCall")]
            previous_calls = [_call(c, cn.unnamed_id(i, k)) for k, c in enumerate(calls)]
            messages.append(cn.message("assistant", _text(parts), previous_calls))
            continue
        results = [_get(p, "functionResponse") for p in parts if _has(p, "functionResponse")]
        for result, call_id in zip(results, _pair(results, previous_calls), strict=True):
            messages.append(cn.message("tool", _result_text(result), tool_call_id=call_id))
        text = _text(parts)
        if text or not results:
            messages.append(cn.message("user", text))
        previous_calls = []
    tool_defs = _tools(body.get("tools"))
    stream = METHODS[method]
    canonical = cn.request(model, stream, messages, [t.name for t in tool_defs])
    return Parsed(NAME, canonical, tool_defs, stream, model=model)


def _turn(content: Any, i: int) -> tuple[str, list[dict]]:
    if not isinstance(content, dict):
        raise google_error(400, f"Invalid value at 'contents[{i}]', must be a Content object")
    role = content.get("role", "user")     # optional in a request: a turn without one is the user's
    if not isinstance(role, str) or role not in ROLES:
        raise google_error(400, "Please use a valid role: user, model.")
    return role, _parts(content, f"contents[{i}]")


def _parts(content: dict, where: str) -> list[dict]:
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise google_error(400, f"* GenerateContentRequest.{where}.parts: contents.parts must not be empty.")
    for j, part in enumerate(parts):
        if not isinstance(part, dict):
            raise google_error(400, f"Invalid value at '{where}.parts[{j}]', must be a Part object")
        _check_part(part, f"{where}.parts[{j}]")
    return parts


# What a part's fields hold: field → (its JSON type, the proto type Google's errors name).
PART_FIELDS = {"text": (str, "TYPE_STRING"), "id": (str, "TYPE_STRING"), "args": (dict, "TYPE_MESSAGE"),
               "response": (dict, "TYPE_MESSAGE")}


def _check_part(part: dict, where: str) -> None:
    """A part's text is a string; a function call or response is an object with a name, an
    optional string id, and an object for its arguments or response."""
    if "text" in part and not isinstance(part["text"], str):
        raise google_error(400, f"Invalid value at '{where}.text' (TYPE_STRING), {kind_of(part['text'])}")
    for key in ("functionCall", "functionResponse"):
        if not _has(part, key):
            continue
        value = _get(part, key)
        if not (isinstance(value, dict) and isinstance(value.get("name"), str)):
            raise google_error(400, f"* GenerateContentRequest.{where}.{_snake(key)}.name: Name cannot be empty.")
        for name in ("id", "args" if key == "functionCall" else "response"):
            kind, proto = PART_FIELDS[name]
            if value.get(name) is not None and not isinstance(value[name], kind):
                raise google_error(400, f"Invalid value at '{where}.{_snake(key)}.{name}' ({proto}), "
                                        f"{kind_of(value[name])}")


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _has(obj: dict, name: str) -> bool:
    return name in obj or _snake(name) in obj


def _get(obj: dict, name: str, default: Any = None) -> Any:
    """Field ``name`` (lowerCamelCase) of ``obj``, spelt either way."""
    return obj[name] if name in obj else obj.get(_snake(name), default)


def _text(parts: list[dict]) -> str:
    """The answer's or the prompt's text: text parts that are not thoughts."""
    return "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought"))


def _call(function_call: dict, unnamed: str) -> cn.Call:
    """A history's call; one sent without an id is ``unnamed`` until the server restores it."""
    return cn.call(function_call.get("id") or unnamed, function_call["name"],
                   json.dumps(function_call.get("args") or {}, ensure_ascii=False))


def _pair(results: list[dict], calls: list[cn.Call]) -> list[str | None]:
    """The id of the call each result answers: its own id, else the first unanswered call of
    its name, else the next unanswered call."""
    left = list(calls)
    out: list[str | None] = []
    for result in results:
        call = next((c for c in left if result.get("id") is not None and c["id"] == result["id"]), None) \
            or next((c for c in left if c["name"] == result["name"]), None) or (left[0] if left else None)
        if call is not None:
            left.remove(call)
        out.append(result["id"] if result.get("id") is not None else call["id"] if call else None)
    return out


def _result_text(result: dict) -> str:
    """A function response's text: its ``output`` (or ``error``) when it is a string, else the
    whole ``response`` object as JSON."""
    response = result.get("response")
    if isinstance(response, dict):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                return response[key]
        return json.dumps(response, ensure_ascii=False)
    return "" if response is None else str(response)


def _tools(tools: Any) -> list[ToolDef]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise google_error(400, "Invalid value at 'tools', must be a list of Tool objects")
    out = []
    for i, tool in enumerate(tools):
        declarations = _get(tool, "functionDeclarations", []) if isinstance(tool, dict) else None
        if not isinstance(declarations, list):
            raise google_error(400, f"Invalid value at 'tools[{i}].function_declarations', must be a list")
        for j, d in enumerate(declarations):
            if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not d["name"]:
                raise google_error(400, f"* GenerateContentRequest.tools[{i}].function_declarations[{j}].name: "
                                        "Name cannot be empty.")
            schema = _get(d, "parametersJsonSchema", d.get("parameters"))
            problem = schema_problem(schema) if schema is not None else None
            if problem:
                raise google_error(400, f"* GenerateContentRequest.tools[{i}].function_declarations[{j}]."
                                        f"parameters: {problem}")
            out.append(ToolDef(d["name"], _lower_types(schema) if isinstance(schema, dict) else {}))
    return out


def _lower_types(schema: Any) -> Any:
    """A ``parameters`` schema with its OpenAPI type names (``OBJECT``, ``ARRAY`` …) in JSON
    Schema's lower case, so the shell-tool mapping reads either form."""
    if isinstance(schema, list):
        return [_lower_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: (v.lower() if k == "type" and isinstance(v, str) else
                v if k in ("enum", "default", "example") else _lower_types(v)) for k, v in schema.items()}


def check_balanced(turns: list[tuple[str, list[dict]]]) -> None:
    """The Gemini API's rules: a model turn with function calls follows a user turn (a prompt
    or function responses); a turn of function responses follows a turn of function calls; and
    the user turn after a function-call turn has exactly as many responses as it had calls."""
    def count(k: int, role: str, key: str) -> int:
        if k < 0 or k >= len(turns) or turns[k][0] != role:
            return 0
        return sum(1 for p in turns[k][1] if _has(p, key))

    for k in range(len(turns)):
        calls = count(k, "model", "functionCall")
        if calls and (k == 0 or turns[k - 1][0] != "user"):
            raise google_error(400, CALL_AFTER_USER)
        if count(k, "user", "functionResponse") and not count(k - 1, "model", "functionCall"):
            raise google_error(400, RESPONSE_AFTER_CALL)
        if calls and count(k + 1, "user", "functionResponse") != calls:
            raise google_error(400, COUNTS_DIFFER)


class Encoder:
    """Gemini ``GenerateContentResponse`` frames and the non-streamed body for one plan."""

    def __init__(self, plan: Plan, parsed: Parsed, ids: Ids):
        self.plan, self.parsed = plan, parsed
        self.response_id = ids.new("resp")
        self.parts: list[dict] = []          # the answer so far, consecutive text merged (the body)
        self.tail: list[str] = []            # the pieces of the last part's text (``_add_text``)
        self.received: dict[int, int] = {}   # how much of each call's arguments was sent
        self.templates = Templates()
        self._empty: bytes | None = None     # the frame of a call's pieces before its last

    def _frame(self, parts: list[dict], finish: bool = False) -> dict:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        frame: dict[str, Any] = {"candidates": [candidate]}
        if finish:
            candidate["finishReason"] = FINISH_REASONS[self.plan.finish_reason]
            frame["usageMetadata"] = self.usage()
        frame["modelVersion"] = self.parsed.model
        frame["responseId"] = self.response_id
        return frame

    def usage(self) -> dict:
        p, c = self.plan.input_tokens, self.plan.output_tokens
        return {"promptTokenCount": p, "candidatesTokenCount": c, "totalTokenCount": p + c}

    def start(self) -> list:
        return []

    def delta(self, d: Delta) -> list:
        if d.kind == "tool":
            return [(None, self._frame(self._call_piece(d)))]
        self._add_text(d)
        return [(None, self._frame([self._text_part(d.kind, d.text)]))]

    def delta_sse(self, d: Delta) -> bytes:
        """``delta`` as SSE bytes: a text or reasoning piece is one frame that differs from the
        last of its kind in its text alone; a call's pieces before its last are one empty frame."""
        if d.kind == "tool":
            parts = self._call_piece(d)
            if parts:
                return sse_all([(None, self._frame(parts))])
            if self._empty is None:
                self._empty = sse_all([(None, self._frame([]))])
            return self._empty
        template = self._template(d)
        if not template:
            return sse_all(self.delta(d))
        self._add_text(d)
        return template.fill(d.text)

    def burst_sse(self, burst: list[Delta]) -> bytes:
        first = burst[0]
        if first.kind != "tool" and self._continues_part(first) and continuing(burst):
            template = self._template(first)
            if template:
                texts = [d.text for d in burst]
                self.tail.extend(texts)
                return template.fill_all(texts)
        return b"".join([self.delta_sse(d) for d in burst])

    def _template(self, d: Delta) -> Template | Literal[False]:
        """The template of a text or reasoning piece."""
        template = self.templates.made.get(d.kind)
        if template is None:
            template = self.templates.make(d.kind, [(None, self._frame([self._text_part(d.kind, TEXT)]))])
        return template

    @staticmethod
    def _text_part(kind: str, text: str) -> dict:
        return {"text": text, "thought": True} if kind == "reasoning" else {"text": text}

    def _call_piece(self, d: Delta) -> list[dict]:
        """The parts a piece of a call's arguments adds: none until the call's last piece, then
        the whole call (Gemini sends a call in one part)."""
        self.received[d.call] = self.received.get(d.call, 0) + len(d.text)
        call = self.plan.tool_calls[d.call]
        if self.received[d.call] != len(call["arguments"]):
            return []
        self._merge_tail()
        part: dict[str, Any] = {"functionCall": {"id": call["id"], "name": call["name"],
                                 "args": json.loads(call["arguments"] or "{}")},
                                "thoughtSignature": THOUGHT_SIGNATURE}
        self.parts.append(part)
        return [part]

    def _add_text(self, d: Delta) -> None:
        """The body's parts merge consecutive text of one kind; the last part's pieces are kept
        in ``tail`` until it is complete (joining them once, not once per piece)."""
        if self._continues_part(d):
            self.tail.append(d.text)
            return
        self._merge_tail()
        self.parts.append(self._text_part(d.kind, d.text))
        self.tail = [d.text]

    def _continues_part(self, d: Delta) -> bool:
        """Whether text piece ``d`` goes on the body's last part (one of its kind)."""
        last = self.parts[-1] if self.parts else None
        return last is not None and "text" in last and bool(last.get("thought")) == (d.kind == "reasoning")

    def _merge_tail(self) -> None:
        if self.tail:
            self.parts[-1]["text"] = "".join(self.tail)
            self.tail = []

    def finish(self) -> list:
        return [(None, self._frame([{"text": ""}], finish=True))]

    def error(self, kind: str, message: str) -> list:
        return [(None, google_error(STREAM_ERROR_STATUS[kind], message).body)]

    def body(self) -> dict:
        self._merge_tail()
        return self._frame(self.parts, finish=True)
