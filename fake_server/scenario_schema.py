"""The scenario file's schema: msgspec Structs that take only the keys a ``scenario.toml`` has,
with their types and ranges, and what each item must be in the words a scenario author reads.

A frame is a table holding exactly one frame key (``text``, ``shell``, ``finish`` …) with
that kind's options, so a frame is decoded in two steps: its kind is the key it holds, then
the table is decoded as that kind's Struct (:data:`FRAMES`). :func:`decode` turns msgspec's
refusal into the item (``responses[0].frames[1].shell.window.hold_s``) and the problem; what
types cannot say (a JSON text, a role, a status, a frame that must come last) is checked
after, in ``fake_server.scenario_loader``, with the same words (:func:`must`).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, NoReturn, TypeVar

import msgspec

from .scenario import DEFAULT_CHUNK_CHARS

FINISH_REASONS = ("stop", "length", "tool_calls")
MATCH_ROLES = ("user", "tool", "assistant")     # system messages are passed over (see Match)
ERROR_KINDS = ("server_error", "rate_limit", "overloaded", "invalid_request")
HTTP_ERROR_STATUSES = (400, 401, 403, 404, 408, 409, 429, 500, 502, 503, 529)
# The longest pause, chunk interval, Retry-After or window hold a scenario may ask for, in
# seconds: a step waits for a beacon under a budget of about a minute, so a longer one (or
# NaN, or inf) only makes a task that can never pass, with the agent blamed for it.
MAX_SECONDS = 600.0

Seconds = Annotated[float, msgspec.Meta(ge=0, le=MAX_SECONDS)]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Said = Annotated[str, msgspec.Meta(pattern=r"\S")]   # holds more than blanks
Count = Annotated[int, msgspec.Meta(ge=0)]
Positive = Annotated[int, msgspec.Meta(ge=1)]


class _Table(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A scenario table: its keys, nothing else."""


class ShellToolTable(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    name: NonEmpty
    field: NonEmpty = "command"
    argv: bool = False


class FinishActionTable(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    tool: NonEmpty | None = None
    arguments: dict[str, Any] = {}
    shell: NonEmpty | None = None


class MatchTable(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    last: str | None = None
    tools: bool | None = None
    contains: NonEmpty | None = None


class ResponseTable(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    match: MatchTable = MatchTable()
    repeat: bool = False
    frames: list[dict[str, Any]] = []   # each decoded as its kind's Struct (FRAMES)


class ScenarioFile(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    name: NonEmpty
    model: NonEmpty | None = None
    shell_tool: ShellToolTable | None = None
    finish_action: dict[str, Any] | None = None   # parse_finish_action's, shared with profiles
    side_requests: list[Said] = []
    responses: list[ResponseTable] = []
    shell_fence: NonEmpty | None = None


# --- frames: one Struct per kind, named by the key it holds --------------------------------

class _Paced(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    chunk: Positive = DEFAULT_CHUNK_CHARS
    interval_s: Seconds = 0.0


class TextFrame(_Paced, frozen=True, forbid_unknown_fields=True, kw_only=True):
    text: NonEmpty


class ReasoningFrame(_Paced, frozen=True, forbid_unknown_fields=True, kw_only=True):
    reasoning: NonEmpty


class ToolCallTable(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    name: NonEmpty
    arguments: str | dict[str, Any] = {}


class ToolCallFrame(_Paced, frozen=True, forbid_unknown_fields=True, kw_only=True):
    tool_call: ToolCallTable


class WindowTable(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    id: str
    depth: Count = 1
    fanout: Positive = 1
    ignore_term: bool = False
    escape: bool = False
    hold_s: Seconds = 60.0
    marker: NonEmpty | None = None


class ShellWindowTable(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    window: WindowTable


class ShellFrame(_Paced, frozen=True, forbid_unknown_fields=True, kw_only=True):
    shell: NonEmpty | ShellWindowTable
    extra: dict[str, Any] = {}


class PauseFrame(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    pause: Seconds


class StallFrame(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    stall: bool


class DisconnectFrame(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    disconnect: bool


class ErrorFrame(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    error: str
    message: NonEmpty | None = None


class HttpErrorFrame(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    http_error: int
    message: NonEmpty | None = None
    retry_after: Seconds | None = None


class UsageTable(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    input_tokens: Count | None = None
    output_tokens: Count | None = None


class FinishFrame(_Table, frozen=True, forbid_unknown_fields=True, kw_only=True):
    finish: bool | str
    usage: UsageTable | None = None


FRAMES: dict[str, type[_Table]] = {
    "text": TextFrame, "reasoning": ReasoningFrame, "tool_call": ToolCallFrame, "shell": ShellFrame,
    "pause": PauseFrame, "stall": StallFrame, "disconnect": DisconnectFrame, "error": ErrorFrame,
    "http_error": HttpErrorFrame, "finish": FinishFrame,
}
# The Struct of each nested table, by the key it sits under ("": the table decoded).
_FILE_TABLES: dict[str, type[msgspec.Struct]] = {
    "": ScenarioFile, "shell_tool": ShellToolTable, "responses": ResponseTable, "match": MatchTable}
_FRAME_TABLES: dict[str, type[msgspec.Struct]] = {
    "tool_call": ToolCallTable, "shell": ShellWindowTable, "window": WindowTable, "usage": UsageTable}

# What each item must be, by its key (``key[]``: an element of the list under ``key``);
# ``{value}`` is what the file holds there.
_STRING = "must be a non-empty string"
_TABLE = "must be a table"
_FLAG = "must be true or false"
_SECONDS = f"must be a number of seconds from 0 to {MAX_SECONDS:g}, not {{value}}"
MUST = {
    "name": _STRING, "model": _STRING, "shell_fence": _STRING, "contains": _STRING, "field": _STRING,
    "text": _STRING, "reasoning": _STRING, "message": _STRING, "marker": _STRING, "id": _STRING,
    "tool": _STRING, "side_requests[]": _STRING,
    "side_requests": "must be an array of strings, not {value}",
    "responses": "at least one [[responses]] table is required",
    "frames": "must be an array of [[responses.frames]] tables, not {value}",
    "responses[]": _TABLE, "frames[]": _TABLE, "match": _TABLE, "shell_tool": _TABLE, "finish_action": _TABLE,
    "tool_call": _TABLE, "window": _TABLE, "extra": _TABLE, "usage": _TABLE,
    "tools": _FLAG, "repeat": _FLAG, "argv": _FLAG, "ignore_term": _FLAG, "escape": _FLAG,
    "last": f"must be one of {', '.join(MATCH_ROLES)}, not {{value}} (the last turn is the last message that is "
            "not a system message)",
    "chunk": "must be an integer >= 1, not {value}", "fanout": "must be an integer >= 1, not {value}",
    "depth": "must be an integer >= 0, not {value}", "input_tokens": "must be an integer >= 0, not {value}",
    "output_tokens": "must be an integer >= 0, not {value}",
    "interval_s": _SECONDS, "pause": _SECONDS, "retry_after": _SECONDS, "hold_s": _SECONDS,
    "shell": "must be a non-empty command, or a table { window = { … } }",
    "stall": "must be true", "disconnect": "must be true",
    "error": f"must be one of {', '.join(ERROR_KINDS)}, not {{value}}",
    "http_error": f"must be one of {', '.join(map(str, HTTP_ERROR_STATUSES))}, not {{value}}",
    "finish": f"must be true or one of {', '.join(FINISH_REASONS)}, not {{value}}",
}
_ACTION_MUST = {**MUST, "arguments": _TABLE}
_FRAME_MUST = {**MUST, "arguments": "must be a table or a JSON object string"}
_AT = re.compile(r"^(?P<problem>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
# Top-level keys named "scenario.KEY" (the scenario's own values, not tables of their own)
_OF_SCENARIO = frozenset({"name", "model", "shell_fence"})

Fail = Callable[[str, str], NoReturn]
T = TypeVar("T", bound=msgspec.Struct)


def must(key: str, value: Any = None) -> str:
    """What the item under ``key`` must be, saying the ``value`` the file holds."""
    return MUST[key].replace("{value}", repr(value))


def decode_file(data: Mapping[str, Any], fail: Fail) -> ScenarioFile:
    return _decode(data, ScenarioFile, "", _FILE_TABLES, MUST, fail)


def decode_frame(raw: Mapping[str, Any], kind: str, item: str, fail: Fail) -> msgspec.Struct:
    return _decode(raw, FRAMES[kind], item, {"": FRAMES[kind], **_FRAME_TABLES}, _FRAME_MUST, fail)


def decode_finish_action(raw: Mapping[str, Any], item: str, fail: Fail) -> FinishActionTable:
    return _decode(raw, FinishActionTable, item, {"": FinishActionTable}, _ACTION_MUST, fail)


def unknown_keys(table: Mapping[str, Any], struct: type[msgspec.Struct]) -> str:
    """The problem with a table holding keys ``struct`` does not take: all of them, and those it does."""
    allowed = set(struct.__struct_encode_fields__)
    return (f"unknown key(s) {', '.join(sorted(map(str, set(table) - allowed)))} "
            f"(allowed: {', '.join(sorted(allowed))})")


def _decode(data: Mapping[str, Any], struct: type[T], item: str, tables: Mapping[str, type[msgspec.Struct]],
            words: Mapping[str, str], fail: Fail) -> T:
    """``data`` as ``struct``, or ``fail(item, problem)`` in a scenario author's words."""
    try:
        return msgspec.convert(data, struct)
    except msgspec.ValidationError as exc:
        m = _AT.match(str(exc))
        assert m is not None
        problem = m["problem"]
        keys: list[str | int] = [k or int(i) for k, i in re.findall(r"\.(\w+)|\[(\d+)\]", m["path"] or "")]
        value: Any = data
        for key in keys:
            value = value[key]
        where = _item(item, keys)
        if missing := re.match(r"Object missing required field `(.+)`", problem):
            fail(where or "scenario", f"'{missing[1]}' is required")
        if problem.startswith("Object contains unknown field"):
            named = [k for k in keys if isinstance(k, str)]
            fail(where or "scenario", unknown_keys(value, tables[named[-1] if named else ""]))
        key = f"{keys[-2]}[]" if keys and isinstance(keys[-1], int) else str(keys[-1]) if keys else ""
        if key not in words:
            fail(where or "scenario", problem.replace("`", ""))
        fail(where, words[key].replace("{value}", repr(value)))


def _item(prefix: str, keys: list[str | int]) -> str:
    """``responses[0].frames[1]``: the item at ``keys`` below ``prefix``."""
    if not prefix and len(keys) == 1 and keys[0] in _OF_SCENARIO:
        prefix = "scenario"
    text = prefix
    for key in keys:
        text += f"[{key}]" if isinstance(key, int) else f".{key}" if text else key
    return text
