"""Typed records and their JSON form: what the server writes and the harness judges.

Every record is a frozen dataclass with a common base — ``kind``, ``mono_ns``
(``time.monotonic_ns()``, the clock all processes on the host share), ``source`` (``server``,
``inproc``, ``window``, ``beacon``) and ``index`` (1-based position in the store) — and one
class per kind. Typed records make a misspelt field an error where it is written, not a
``None`` where a check reads it; ``to_json``/``from_json`` keep the wire form (what the JSONL
export, the HTTP long poll and the beacon carry) the plain dicts consumers already read.
Records arriving from other processes are parsed with ``from_json`` at the edge, so a record in
the store always has every field its kind needs.

This module is plain values (the model and the reports import it); the store the server
appends to and the harness waits on is ``fake_server.record_store``.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import time
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .canonical import Call, Canonical

RECORDS_VERSION = 2          # 1 was the untyped dicts of earlier versions (no version line)


class RecordError(ValueError):
    """A record (from JSON) that cannot be used: ``where`` it came from and the ``problem``."""

    def __init__(self, where: str, problem: str):
        self.where, self.problem = where, problem
        super().__init__(f"{where}: {problem}")


# --- record kinds ---------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Record:
    """What every record has. Optional fields (default ``None``) are left out of the JSON form
    when unset, so that form is exactly the dict each kind has always had."""
    kind: ClassVar[str]
    mono_ns: int = field(default_factory=time.monotonic_ns)
    source: str = "server"
    index: int = 0               # 0 until the store assigns its position

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue
            out[f.name] = _plain(value)
        return out

    @staticmethod
    def from_json(data: Any, where: str = "record") -> Record:
        """The record ``data`` describes; RecordError naming ``where`` and the problem otherwise
        (not an object, an unknown kind, a missing, unknown or mistyped field)."""
        if not isinstance(data, dict):
            raise RecordError(where, f"a record must be a JSON object, not {_json_type(data)}")
        kind = data.get("kind")
        cls = KINDS.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise RecordError(where, f"unknown record kind {kind!r} (known: {', '.join(sorted(KINDS))})")
        return _build(cls, data, f"{where} ({kind} record)")


@dataclass(frozen=True, kw_only=True)
class Request(Record):
    """A model request received (or refused). ``request`` is its number; a request posted
    without one (in-process playback) is numbered by the store it is appended to."""
    kind: ClassVar[str] = "request"
    request: int | None = None
    api: str
    path: str
    headers: dict[str, str]
    status: int
    body: Any = None             # the parsed JSON body, when it parsed
    body_text: str | None = None  # the start of a body that was not JSON
    canonical: Canonical | None = None  # absent when the wire refused the body
    error: str | None = None     # the refusal's message, when status is not 200
    # ``fake_server.bounded``: ``elided`` says what was cut (long texts, a body past its limit);
    # of a body left out, its size and digest are kept, and the text around its credentials.
    body_bytes: int | None = None
    body_sha256: str | None = None
    elided: list[str] | None = None
    body_excerpts: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class Response(Record):
    """Which scenario response answers request ``request``, and what it will say in full."""
    kind: ClassVar[str] = "response"
    request: int
    response_index: int
    text: str
    tool_calls: list[Call]
    finish_reason: str
    http_error: int | None = None   # the scripted refusal's status
    ending: str | None = None       # stall | disconnect | streamerror: how the stream ends early


@dataclass(frozen=True, kw_only=True)
class Chunk(Record):
    """Chunk ``chunk`` of request ``request`` was flushed to the client."""
    kind: ClassVar[str] = "chunk"
    request: int
    chunk: int
    text: str
    tool_call_id: str | None = None  # set for a piece of tool-call arguments
    reasoning: str | None = None     # set for a piece of reasoning


@dataclass(frozen=True, kw_only=True)
class StreamEnd(Record):
    """The server's last write for ``request``; ``complete`` is false for a scripted break."""
    kind: ClassVar[str] = "stream_end"
    request: int
    complete: bool


@dataclass(frozen=True, kw_only=True)
class Late(Record):
    """The script of request ``request`` ran late: the moment it set for chunk ``chunk`` (the
    end of a scripted pause) came ``late_ns`` after it was due, the server's loop being busy (too
    many streams for this machine). A stream that keeps falling behind gets a record each time
    it is later by a further ``fake_server.playout.LATE_NS``. A check that judges time against
    the script reads these: a stretched script is the machine's doing, not the agent's."""
    kind: ClassVar[str] = "late"
    request: int
    chunk: int
    late_ns: int


@dataclass(frozen=True, kw_only=True)
class Disconnect(Record):
    """The client went away while request ``request`` was being answered. ``mono_ns`` is when
    the loop first saw it go (``fake_server.hangup``), which can precede a chunk record the
    handler wrote in the meantime."""
    kind: ClassVar[str] = "disconnect"
    request: int
    after_chunk: int


@dataclass(frozen=True)
class WindowProc:
    """One process of a window's tree, as the process described itself when it started."""
    pid: int
    ppid: int
    pgid: int
    sid: int
    create_time: float           # seconds since the epoch, as psutil's Process.create_time()
    role: str                    # root | child | term-ignorer | escapee


@dataclass(frozen=True, kw_only=True)
class Window(Record):
    """A bash window is open: every process of its tree is running."""
    kind: ClassVar[str] = "window"
    window: str
    pids: tuple[WindowProc, ...]
    marker: str


@dataclass(frozen=True, kw_only=True)
class WindowDone(Record):
    """A window ended: ``finished`` if it was allowed to run out, else the ``signal`` that ended it."""
    kind: ClassVar[str] = "window_done"
    window: str
    finished: bool
    signal: str | None = None


@dataclass(frozen=True, kw_only=True)
class Error(Record):
    """Something the server refused or could not do, with the problem in words. ``window``
    names the window a refused beacon record claimed to be (a forged window record)."""
    kind: ClassVar[str] = "error"
    problem: str
    request: int | None = None
    path: str | None = None
    method: str | None = None
    status: int | None = None
    window: str | None = None


@dataclass(frozen=True, kw_only=True)
class Side(Record):
    """A side request (a title, an auto-memory update …) answered with a canned completion.

    It is not the task's conversation, so it is not numbered and uses up no scripted response;
    ``messages`` outlines what it asked, ``reason`` says how it was recognised."""
    kind: ClassVar[str] = "side"
    api: str
    path: str
    stream: bool
    reason: str
    messages: list[dict[str, Any]]
    tools: list[str]
    text: str


KINDS: dict[str, type[Record]] = {cls.kind: cls for cls in (
    Request, Response, Chunk, StreamEnd, Late, Disconnect, Window, WindowDone, Error, Side)}


# --- JSON conversion ------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    if isinstance(value, WindowProc):
        return dataclasses.asdict(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _json_type(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


@functools.cache
def _schema(cls: type) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The field types of ``cls`` and its required fields (those without a default), worked out
    once per class: every record from another process goes through ``_build``."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    required = tuple(f.name for f in fields
                     if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    return {f.name: hints[f.name] for f in fields}, required


def _build(cls: type, data: dict, where: str) -> Any:
    types_of, required = _schema(cls)
    unknown = sorted(set(data) - set(types_of) - {"kind"})
    if unknown:
        raise RecordError(where, f"unknown field(s) {', '.join(unknown)}")
    missing = [name for name in required if name not in data]
    if missing:
        raise RecordError(where, f"missing field(s) {', '.join(missing)}")
    values = {name: _conform(value, types_of[name], where, name) for name, value in data.items() if name != "kind"}
    return cls(**values)


def _conform(value: Any, hint: Any, where: str, name: str) -> Any:
    """``value`` checked against (and, for nested records, built as) the type ``hint`` of field
    ``name``; RecordError naming the record (``where``) and the field otherwise."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _conform(value, inner, where, name)
    if origin is tuple and args[0] is WindowProc:
        if not isinstance(value, list):
            raise RecordError(f"{where}: field '{name}'", f"must be an array, not {_json_type(value)}")
        return tuple(_build(WindowProc, _object(v, f"{where}: field '{name}'[{i}]"), f"{where}: field '{name}'[{i}]")
                     for i, v in enumerate(value))
    expected = {int: (int,), float: (int, float), str: (str,), bool: (bool,)}.get(hint)
    if expected is not None:
        if not isinstance(value, expected) or (isinstance(value, bool) and hint is not bool):
            raise RecordError(f"{where}: field '{name}'", f"must be {_json_type(hint())}, not {_json_type(value)}")
        return float(value) if hint is float else value
    container = list if origin is list else dict
    if not isinstance(value, container):
        raise RecordError(f"{where}: field '{name}'", f"must be {_json_type(container())}, not {_json_type(value)}")
    return value


def _object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise RecordError(where, f"must be an object, not {_json_type(value)}")
    return value


def read_jsonl(path: str | Path) -> list[Record]:
    """The records of a JSONL export; RecordError naming the file and line when it is not one."""
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            where = f"{path} line {number}"
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordError(where, f"not JSON ({exc.msg})") from None
            if number == 1:
                version = data.get("records_version") if isinstance(data, dict) else None
                if version != RECORDS_VERSION:
                    raise RecordError(where, f"expected the header {{\"records_version\": {RECORDS_VERSION}}}, "
                                             f"found {line.strip()[:80]!r}")
                continue
            records.append(Record.from_json(data, where))
    return records
