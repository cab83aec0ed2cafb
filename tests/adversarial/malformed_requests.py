"""Malformed model requests for the four wires, from a seed: what a broken or hostile client
could send the fake server. Each request starts from a valid body of its wire and takes one
mutation — a node replaced by an odd value (a list where a string goes, a nesting thousands
deep, an integer of thousands of digits, a lone surrogate …), a key dropped or added, or the
bytes themselves broken (cut short, not UTF-8, nested past any parser's depth).

Deterministic for a seed (``random.Random``), so a failure names the request that caused it
(``Malformed.label``) and reruns the same; the hypothesis test draws its seeds.
"""
from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from typing import Any

TOOL_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
VALID: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", {
        "model": "m", "stream": True, "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "run it"}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
            {"role": "user", "content": "go on"}],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": TOOL_SCHEMA}}]}),
    "responses": ("/v1/responses", {
        "model": "m", "stream": True, "instructions": "be brief",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "run it"}]},
            {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
            {"role": "user", "content": "go on"}],
        "tools": [{"type": "function", "name": "exec_command", "parameters": TOOL_SCHEMA}]}),
    "anthropic": ("/v1/messages", {
        "model": "m", "max_tokens": 100, "stream": True, "system": [{"type": "text", "text": "be brief"}],
        "messages": [
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"},
                                              {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                               "input": {"command": "ls"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"},
                                         {"type": "text", "text": "go on"}]}],
        "tools": [{"name": "Bash", "input_schema": TOOL_SCHEMA}]}),
    "gemini": ("/v1beta/models/m:streamGenerateContent?alt=sse", {
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "run it"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "run_shell_command",
                                                          "args": {"command": "ls"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "run_shell_command",
                                                             "response": {"output": "a.txt"}}}]},
            {"role": "user", "parts": [{"text": "go on"}]}],
        "tools": [{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": TOOL_SCHEMA}]}]}),
}
WIRES = tuple(VALID)
FAMILY = {"chat": "openai", "responses": "openai", "anthropic": "anthropic", "gemini": "google"}
DEEP = 5_000            # past Python's recursion limit when walked naively
HUGE_DIGITS = 5_000     # past int()'s 4,300-digit limit


@dataclass(frozen=True)
class Malformed:
    wire: str
    path: str
    data: bytes
    label: str          # what was done to the valid body, to reproduce a failure by hand

    @property
    def headers(self) -> dict[str, str]:
        base = {"content-type": "application/json"}
        if self.wire == "anthropic":
            base["anthropic-version"] = "2023-06-01"
        return base


class _Raw:
    """A JSON text spliced into the body as it is (what ``json.dumps`` cannot make)."""

    def __init__(self, text: str):
        self.text = text


def odd_value(rng: random.Random) -> tuple[str, Any]:
    choices: list[tuple[str, Any]] = [
        ("null", None), ("true", True), ("zero", 0), ("negative", -1), ("float", 1.5),
        ("empty string", ""), ("empty list", []), ("empty object", {}),
        ("list of strings", ["user", "assistant"]), ("list of lists", [[1], [2]]),
        ("object", {"role": "user"}), ("long string", "x" * rng.choice((1000, 70_000))),
        ("lone surrogate", "\ud800"), ("nul", "a\x00b"), ("big float", 1e308),
        ("nested list", _Raw("[" * DEEP + "]" * DEEP)), ("nested object", _Raw('{"a":' * DEEP + "1" + "}" * DEEP)),
        ("huge integer", _Raw("9" * HUGE_DIGITS)), ("NaN", _Raw("NaN")), ("Infinity", _Raw("-Infinity")),
        ("number string", "123"), ("role name", rng.choice(["tool", "function", "model", "system", "developer"])),
        ("list of objects", [{"type": "text"}, {"type": "tool_use"}]),
        ("schema", {"type": ["object", None], "properties": [1, 2], "required": "command"}),
    ]
    return choices[rng.randrange(len(choices))]


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _set(body: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    parent = body
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return body


def _dumps(body: Any) -> str:
    """JSON text of ``body`` with its ``_Raw`` pieces spliced in as they are."""
    pieces: dict[str, str] = {}

    def swap(node: Any) -> Any:
        if isinstance(node, _Raw):
            key = f"@@raw{len(pieces)}@@"
            pieces[key] = node.text
            return key
        if isinstance(node, dict):
            return {k: swap(v) for k, v in node.items()}
        if isinstance(node, list):
            return [swap(v) for v in node]
        return node

    text = json.dumps(swap(body))
    for key, raw in pieces.items():
        text = text.replace(json.dumps(key), raw)
    return text


def malformed(rng: random.Random, wire: str | None = None) -> Malformed:
    wire = wire or rng.choice(WIRES)
    path, valid = VALID[wire]
    body = copy.deepcopy(valid)
    roll = rng.random()
    if roll < 0.12:
        return Malformed(wire, path, *_broken_bytes(rng, _dumps(body)))
    paths = _paths(body)
    where = rng.choice(paths)
    spot = ".".join(map(str, where)) or "(body)"
    if roll < 0.22 and where:
        parent = body
        for key in where[:-1]:
            parent = parent[key]
        del parent[where[-1]]
        return Malformed(wire, path, _dumps(body).encode(), f"{wire}: {spot} removed")
    if roll < 0.30:
        target = rng.choice([p for p in paths if _is_object(body, p)])
        name, value = odd_value(rng)
        key = rng.choice(["extra", "role", "content", "type", "id", "name", "text", "parts", "tool_calls"])
        _get(body, target)[key] = value
        return Malformed(wire, path, _dumps(body).encode(), f"{wire}: {'.'.join(map(str, target))}.{key} = {name}")
    name, value = odd_value(rng)
    return Malformed(wire, path, _dumps(_set(body, where, value)).encode(), f"{wire}: {spot} = {name}")


def _is_object(body: Any, path: tuple) -> bool:
    return isinstance(_get(body, path), dict)


def _get(body: Any, path: tuple) -> Any:
    for key in path:
        body = body[key]
    return body


def _broken_bytes(rng: random.Random, text: str) -> tuple[bytes, str]:
    data = text.encode()
    kind = rng.randrange(7)
    if kind == 0:
        cut = rng.randrange(len(data))
        return data[:cut], f"cut after {cut} bytes"
    if kind == 1:
        return data[:10] + b"\xff\xfe" + data[10:], "not UTF-8"
    if kind == 2:
        return b"[" * 100_000 + b"]" * 100_000, "a list nested 100,000 deep"
    if kind == 3:
        return b"", "empty"
    if kind == 4:
        return rng.choice([b"null", b"1", b'"x"', b"[]", b"true"]), "a JSON value that is not an object"
    if kind == 5:
        return b'{"model": ' + b"1" * HUGE_DIGITS + b"}", "a huge integer model"
    return b"\xef\xbb\xbf" + data, "a byte order mark first"


def requests(seed: int, n: int) -> list[Malformed]:
    rng = random.Random(seed)
    return [malformed(rng, WIRES[i % len(WIRES)]) for i in range(n)]
