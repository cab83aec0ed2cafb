"""Validate what the fake server sent against the OpenAI OpenAPI description.

The description is read from ``shared/specs/openai-openapi.yaml`` in the nearest folder
above the repository root that has one (``../shared`` for a checkout, further up for a git
worktree kept in a subfolder) and never copied into the project; where it is absent, callers skip.
"""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

SPEC_NAME = Path("shared", "specs", "openai-openapi.yaml")
ROOT = Path(__file__).resolve().parents[2]
SPEC_PATH = next((folder / SPEC_NAME for folder in ROOT.parents if (folder / SPEC_NAME).exists()),
                 ROOT.parent / SPEC_NAME)
ABSENT_REASON = f"OpenAI OpenAPI description not found at {SPEC_PATH}"


class OpenApi:
    def __init__(self, path: Path = SPEC_PATH):
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        with open(path, encoding="utf-8") as f:
            self.components = honour_nullable(yaml.load(f, Loader=loader)["components"])
        self._validators: dict[str, jsonschema.Draft202012Validator] = {}
        schemas = self.components["schemas"]
        self.event_schema = {}
        for member in schemas["ResponseStreamEvent"]["anyOf"]:
            name = member["$ref"].rsplit("/", 1)[1]
            enum = schemas[name].get("properties", {}).get("type", {}).get("enum") or []
            for event_type in enum:
                self.event_schema[event_type] = name

    def validator(self, name: str):
        """One validator per schema name, built once (the spec object lives as long as the tests)."""
        if name not in self._validators:
            schema = {"$ref": f"#/components/schemas/{name}", "components": self.components}
            self._validators[name] = jsonschema.Draft202012Validator(schema)
        return self._validators[name]

    def check(self, name: str, instance, where: str):
        errors = sorted(self.validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path))
        if errors:
            details = "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:200]}"
                                for e in errors[:5])
            raise AssertionError(f"{where} does not conform to {name}: {details}\n{json.dumps(instance)[:800]}")

    def check_exchange(self, request_no: int | str, exchange: dict) -> int:
        """Validate one model request's answer (``request_no`` names it in errors); returns how
        many payloads were checked."""
        api = exchange["api"]
        if api in ("anthropic", "gemini"):     # the description is OpenAI's alone
            return 0
        where = f"request {request_no} ({api})"
        if not exchange["sse"]:
            body = json.loads(exchange["payloads"][0])
            if exchange["status"] != 200:
                name = "ErrorResponse"
            else:
                name = "CreateChatCompletionResponse" if api == "chat" else "Response"
            self.check(name, body, where)
            return 1
        checked = 0
        for event_name, data in sse_events(b"".join(exchange["payloads"])):
            if data == "[DONE]":
                continue
            payload = json.loads(data)
            if api == "chat":
                name = "ErrorResponse" if "error" in payload else "CreateChatCompletionStreamResponse"
            else:
                assert event_name == payload["type"], f"{where}: SSE event name {event_name} != {payload['type']}"
                name = self.event_schema.get(payload["type"])
                assert name, f"{where}: event type {payload['type']} is not a ResponseStreamEvent"
            self.check(name, payload, f"{where} event {checked + 1}")
            checked += 1
        return checked


def honour_nullable(node):
    """Rewrite OpenAPI 3.0 ``nullable: true`` (still used in places) as JSON Schema: "or null"."""
    if isinstance(node, list):
        return [honour_nullable(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: honour_nullable(v) for k, v in node.items()}
    if node.pop("nullable", False) is True:
        return {"anyOf": [node, {"type": "null"}]}
    return node


def sse_events(raw: bytes):
    """(event name or None, data text) for each server-sent event in ``raw``."""
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        yield name, "\n".join(data)
