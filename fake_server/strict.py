"""What every wire refuses before, and while, reading a body: JSON that the providers' parsers
refuse, and shapes no provider reads.

A request body is read once, by ``load_body``: text that is not JSON, JSON's non-numbers
(``NaN``, ``Infinity``, which Python's parser takes but a strict one does not), an integer past
Python's 4,300-digit limit, a nesting deeper than ``MAX_DEPTH`` and a string that is not Unicode
(a lone surrogate escape, which cannot be encoded back) are each a ``BodyProblem`` naming what
and where, which the wire turns into its provider's 400. After it, a body is plain JSON every
wire module can walk without recursing past the interpreter's limit, and every string in it can
be written back out.

The wire modules check each field they read with the functions here (``kind_of``,
``schema_problem``) and word the refusal in their provider's own style.
"""
from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 128     # far deeper than any request or tool schema agents send
JSON_TYPES: dict[type, str] = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
                               list: "an array", dict: "an object", type(None): "null"}


class BodyProblem(ValueError):
    """Why a request body cannot be read, in words that name the place."""


def kind_of(value: Any) -> str:
    """The JSON type of ``value`` in words ("an array", "null" …)."""
    return JSON_TYPES.get(type(value), "a value")


def _refuse_constant(name: str) -> Any:
    raise BodyProblem(f"{name} is not a JSON value")


def load_body(raw: bytes) -> Any:
    """The JSON value of ``raw``; BodyProblem saying why it is not one a provider would read."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyProblem(f"the body is not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise BodyProblem(f"the JSON is nested more than {MAX_DEPTH} levels deep") from None
    except BodyProblem:
        raise
    except ValueError as exc:       # JSONDecodeError, and an integer past the digit limit
        raise BodyProblem(str(exc).split("; use sys.")[0]) from None
    problem = _walk_problem(value)
    if problem:
        raise BodyProblem(problem)
    return value


def _walk_problem(value: Any) -> str | None:
    """Too deep a nesting or a string that is not Unicode, anywhere in ``value`` (iteratively:
    the depth is what is being checked)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if len(path) > MAX_DEPTH:
            return f"the JSON is nested more than {MAX_DEPTH} levels deep (at {where(path[:8])}…)"
        if isinstance(node, str):
            if not _unicode(node):
                return f"the string at {where(path)} is not valid Unicode (a lone surrogate)"
        elif isinstance(node, dict):
            for key, item in node.items():
                if not _unicode(key):
                    return f"a key at {where(path)} is not valid Unicode (a lone surrogate)"
                stack.append((item, (*path, key)))
        elif isinstance(node, list):
            stack.extend((item, (*path, i)) for i, item in enumerate(node))
    return None


def _unicode(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def where(path: tuple[str | int, ...]) -> str:
    """A place in a body as the OpenAI API names it: ``messages[1].content``."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else f".{key}" if out else str(key)
    return out or "the top level"


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not a JSON Schema a provider accepts for a tool's parameters, or None.

    Only the shape is checked — an object, whose ``type`` is a name or a list of names,
    ``properties`` an object of schemas and ``required`` a list of names, all the way down —
    which is what every provider refuses and every agent sends right."""
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, at = stack.pop()
        here = at or "the schema"
        if not isinstance(node, dict):
            if isinstance(node, bool) and at:     # true / false are schemas too, inside one
                continue
            return f"{here} must be an object, not {kind_of(node)}"
        kind = node.get("type")
        if kind is not None and not (isinstance(kind, str) or
                                     isinstance(kind, list) and all(isinstance(k, str) for k in kind)):
            return f"{at + '.' if at else ''}type must be a string or an array of strings"
        required = node.get("required")
        if required is not None and not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
            return f"{at + '.' if at else ''}required must be an array of strings"
        properties = node.get("properties")
        if properties is not None:
            if not isinstance(properties, dict):
                return f"{at + '.' if at else ''}properties must be an object"
            stack.extend((v, f"{at + '.' if at else ''}properties.{k}") for k, v in properties.items())
        items = node.get("items")
        if isinstance(items, list):             # draft 4's tuple form
            stack.extend((v, f"{at + '.' if at else ''}items[{i}]") for i, v in enumerate(items))
        elif items is not None:
            stack.append((items, f"{at + '.' if at else ''}items"))
    return None
