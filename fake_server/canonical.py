"""The canonical request: one shape for what an agent sent, whichever wire API it spoke.

Response matching, token estimates, side-request detection and every check the harness makes
on a request ("the next request is balanced", "the partial text is in the history") read this
shape, never a wire's own body, so that a check written once holds for Chat Completions,
Responses and Anthropic Messages alike. Each wire module converts its body with the
constructors below; nothing else builds these dicts.

The shape (plain JSON, so it travels in ``request`` records unchanged)::

    {"model": str, "stream": bool,
     "messages": [{"role": "system" | "user" | "assistant" | "tool",
                   "text": str,                      # text parts joined; "" when there are none
                   "tool_calls": [{"id": str | None, "name": str | None, "arguments": str}],
                   "tool_call_id": str | None}],     # set on role "tool": the call it answers
     "tools": [str],                                 # names of the tools offered, in order
     "shell_tool": str | None}                       # the tool a shell frame maps onto, if any

Roles are normalised: OpenAI ``developer`` is ``system``; a tool result is always its own
``tool`` message (Anthropic ``tool_result`` blocks, Responses ``function_call_output`` items),
and tool ``arguments`` are JSON text (Anthropic's ``input`` object is serialised).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TypedDict

ROLES = ("system", "user", "assistant", "tool")
OUTLINE_TEXT_CHARS = 160     # enough to recognise a request by, short enough for a record


class Call(TypedDict):
    id: str | None
    name: str | None
    arguments: str


class Message(TypedDict):
    role: str
    text: str
    tool_calls: list[Call]
    tool_call_id: str | None


class Canonical(TypedDict):
    model: str
    stream: bool
    messages: list[Message]
    tools: list[str]
    shell_tool: str | None


def call(id: str | None, name: str | None, arguments: str) -> Call:
    return {"id": id, "name": name, "arguments": arguments}


# The id a wire gives a call its client sent without one (the Gemini API allows that), until
# ``restore_ids`` finds the call this server issued.
UNNAMED = "unnamed:"


def unnamed_id(turn: int, position: int) -> str:
    return f"{UNNAMED}{turn}.{position}"


def restore_ids(canonical: Canonical, issued: Iterable[Call]) -> None:
    """Give back the ids a client dropped from its history (pi on the Gemini wire sends calls
    and results without them): each unnamed call takes the id of the call this server issued
    with the same name and arguments (earliest first, each once), and so does its result, so
    that a history speaks of the same calls on every wire. An unnamed call the server never
    issued keeps its made-up id."""
    named = {c["id"] for m in canonical["messages"] for c in m["tool_calls"]
             if c["id"] and not c["id"].startswith(UNNAMED)}
    pool = [c for c in issued if c["id"] not in named]
    found: dict[str, str] = {}
    for m in canonical["messages"]:
        for c in m["tool_calls"]:
            if not (c["id"] or "").startswith(UNNAMED):
                continue
            match = next((i for i in pool
                          if i["name"] == c["name"] and _same_arguments(i["arguments"], c["arguments"])), None)
            if match is not None:
                pool.remove(match)
                found[str(c["id"])] = str(match["id"])
                c["id"] = match["id"]
    for m in canonical["messages"]:
        if m["tool_call_id"] in found:
            m["tool_call_id"] = found[m["tool_call_id"]]


def _same_arguments(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return a == b


def message(role: str, text: str = "", tool_calls: Iterable[Call] = (), tool_call_id: str | None = None) -> Message:
    if role not in ROLES:
        raise ValueError(f"canonical role must be one of {', '.join(ROLES)}, not {role!r}")
    return {"role": role, "text": text, "tool_calls": list(tool_calls), "tool_call_id": tool_call_id}


def request(model: str, stream: bool, messages: list[Message], tools: Iterable[str]) -> Canonical:
    """A canonical request; ``shell_tool`` is filled in once the scenario's mapping has looked."""
    return {"model": model, "stream": stream, "messages": messages, "tools": list(tools), "shell_tool": None}


def last_turn(canonical: Canonical) -> Message | None:
    """The last message that is not a system message: the turn a response answers.

    Agents insert system messages mid-conversation (reminders, notes after a tool ran); the
    turn the model is asked to continue is still the user's or the tool's message before them.
    """
    for m in reversed(canonical["messages"]):
        if m["role"] != "system":
            return m
    return None


def last_text(canonical: Canonical, role: str) -> str:
    """The text of the last message with ``role`` ("" when there is none)."""
    for m in reversed(canonical["messages"]):
        if m["role"] == role:
            return m["text"]
    return ""


def outline(canonical: Canonical) -> list[dict]:
    """Roles and the start of each text: what a record keeps of a request it does not number."""
    out = []
    for m in canonical["messages"]:
        text = m["text"]
        entry: dict = {"role": m["role"],
                       "text": text if len(text) <= OUTLINE_TEXT_CHARS else text[:OUTLINE_TEXT_CHARS] + "…"}
        if m["tool_calls"]:
            entry["tool_calls"] = [c["name"] for c in m["tool_calls"]]
        out.append(entry)
    return out


def estimate_tokens(canonical: Canonical) -> int:
    """About a quarter of the characters, as a stand-in for a tokenizer (never 0)."""
    chars = sum(len(m["text"]) for m in canonical["messages"])
    return max(1, chars // 4)
