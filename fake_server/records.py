"""Typed, append-only records with async waiters: what the harness synchronises on instead of sleeping.

Every record is a frozen dataclass with a common base — ``kind``, ``mono_ns``
(``time.monotonic_ns()``, the clock all processes on the host share), ``source`` (``server``,
``inproc``, ``window``, ``beacon``) and ``index`` (1-based position in the store) — and one
class per kind. Typed records make a misspelt field an error where it is written, not a
``None`` where a check reads it; ``to_json``/``from_json`` keep the wire form (what the JSONL
export, the HTTP long poll and the beacon carry) the plain dicts consumers already read.
Records arriving from other processes are parsed with ``from_json`` at the edge, so a record in
the store always has every field its kind needs.

Waiters are resolved at append time, so "chunk k of request n flushed" wakes the harness in the
same loop iteration the server flushed it. The waits have no timeout of their own: the caller
owns the deadline (``async with asyncio.timeout(s)`` or ``asyncio.wait_for``), and a wait cut
short carries a note listing the records seen so far.
"""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import time
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from .canonical import Call, Canonical

RECORDS_VERSION = 2          # 1 was the untyped dicts of earlier versions (no version line)
SUMMARY_KEYS = ("request", "chunk", "after_chunk", "late_ns", "window", "status", "complete", "reason", "problem")


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
R = TypeVar("R", bound=Record)
AtOnce = Callable[[Record], None]  # called as a record is stored (``Records.wait_for``)
# What a chunk record says of its piece: text, tool_call_id, reasoning.
ChunkFields = tuple[str, "str | None", "str | None"]
# A chunk as ``append_chunks`` keeps it: mono_ns, request, chunk, and its fields.
ChunkRow = tuple[int, int, int, ChunkFields]


def _chunk_of(row: ChunkRow, index: int) -> Chunk:
    """The Chunk record of a row, built as ``Chunk(...)`` would, past the frozen dataclass's
    per-field ``__setattr__``: a stream may have a hundred thousand."""
    mono_ns, request, chunk, (text, tool_call_id, reasoning) = row
    record = object.__new__(Chunk)
    record.__dict__.update(mono_ns=mono_ns, source="server", index=index, request=request, chunk=chunk, text=text,
                           tool_call_id=tool_call_id, reasoning=reasoning)
    return record


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


# --- the store --------------------------------------------------------------------------------

class Records:
    def __init__(self) -> None:
        self._items: list[Record | ChunkRow] = []
        self._rows = 0           # how many chunks in ``_items`` are still rows (``append_chunks``)
        # The records of every kind but chunks, by kind, in order: a request looks up the responses
        # before it (``of_kind``), and a scan of the whole store for them on every request would
        # make each one slower than the last.
        self._by_kind: dict[str, list[Record]] = {}
        self._waiters: list[tuple[Callable[[Record], bool], asyncio.Future[Record], AtOnce | None]] = []
        self._requests = 0

    # --- writing --------------------------------------------------------------------------
    def append(self, record: R) -> R:
        """Store ``record`` with its position (and a request number, if it has none yet) and
        wake the waiters it satisfies. Returns the record as stored."""
        changes: dict[str, Any] = {"index": len(self._items) + 1}
        if isinstance(record, Request) and record.request is None:
            changes["request"] = self.next_request_number()
        stored = dataclasses.replace(record, **changes)
        self._items.append(stored)
        if stored.kind != "chunk":
            self._by_kind.setdefault(stored.kind, []).append(stored)
        if self._waiters:
            self._wake(stored)
        return stored

    def append_chunks(self, request: int, first: int, fields: list[ChunkFields]) -> None:
        """``append(Chunk(...))`` for chunks ``first``, ``first + 1``, … of ``request`` (their
        ``text``, ``tool_call_id`` and ``reasoning``), all stamped now — the moment they were handed
        to the transport together — at a fraction of the cost: a long unpaced stream appends a
        hundred thousand, and building a frozen dataclass for each (then again with its index)
        would make the store the stream's bottleneck. Each is kept as a row of its fields and
        becomes its ``Chunk`` record, the same one, when it is first read (at once, if someone
        is waiting)."""
        now = time.monotonic_ns()
        if self._waiters:
            for chunk, piece in enumerate(fields, first):
                stored = _chunk_of((now, request, chunk, piece), len(self._items) + 1)
                self._items.append(stored)
                self._wake(stored)
        else:
            self._items.extend([(now, request, chunk, piece) for chunk, piece in enumerate(fields, first)])
            self._rows += len(fields)

    def _all(self) -> list[Record]:
        """Every record, the chunks kept as rows made records (in place, once)."""
        if self._rows:
            items = self._items
            for i, item in enumerate(items):
                if type(item) is tuple:
                    items[i] = _chunk_of(item, i + 1)
            self._rows = 0
        return self._items  # type: ignore[return-value]  # no rows are left in it

    def _wake(self, stored: Record) -> None:
        still_waiting = []
        for predicate, future, at_once in self._waiters:
            if future.done():
                continue
            if predicate(stored):
                if at_once is not None:
                    at_once(stored)
                future.set_result(stored)
            else:
                still_waiting.append((predicate, future, at_once))
        self._waiters = still_waiting

    def next_request_number(self) -> int:
        self._requests += 1
        return self._requests

    # --- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Record]:
        return iter(list(self._all()))

    def __getitem__(self, i: int) -> Record:
        return self._all()[i]

    def of_kind(self, kind: str) -> list[Record]:
        if kind not in KINDS:
            raise ValueError(f"unknown record kind {kind!r} (known: {', '.join(sorted(KINDS))})")
        if kind == "chunk":
            return [r for r in self._all() if r.kind == kind]
        return list(self._by_kind.get(kind, ()))

    def after(self, index: int) -> list[Record]:
        return self._all()[max(index, 0):]

    def to_json(self, after: int = 0) -> dict[str, Any]:
        """The records after ``after`` in the versioned form the HTTP long poll answers with."""
        return {"records_version": RECORDS_VERSION, "records": [r.to_json() for r in self.after(after)]}

    def to_jsonl(self, path: str | Path) -> None:
        """Every record as a JSON line, after a first line ``{"records_version": N}``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps({"records_version": RECORDS_VERSION}) + "\n")
            for record in self._all():
                f.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")

    def summary(self) -> str:
        lines = []
        for r in self._all()[-40:]:
            data = r.to_json()
            lines.append(f"  #{r.index} {r.kind} " + " ".join(f"{k}={data[k]!r}" for k in SUMMARY_KEYS if k in data))
        skipped = len(self._items) - len(lines)
        head = f"  ({skipped} earlier records not shown)\n" if skipped > 0 else ""
        return head + ("\n".join(lines) if lines else "  (no records)")

    # --- waiting --------------------------------------------------------------------------
    async def wait_for(self, predicate: Callable[[Record], bool], what: str, *,
                       at_once: AtOnce | None = None) -> Record:
        """The first record (existing or future) satisfying ``predicate``. Waits as long as it
        takes; a caller's deadline cancels it, and the cancellation carries a note naming
        ``what`` and the records seen so far. ``at_once`` is called with the record in the
        very call that stores it, before the server goes on and before any waiter resumes: for
        a harness that must act at that moment itself (freeze the agent at a beacon)."""
        for record in self._all():
            if predicate(record):
                if at_once is not None:
                    at_once(record)
                return record
        future: asyncio.Future[Record] = asyncio.get_running_loop().create_future()
        waiter = (predicate, future, at_once)
        self._waiters.append(waiter)
        try:
            return await future
        except asyncio.CancelledError as exc:
            exc.add_note(f"cancelled while waiting for {what}; records so far:\n{self.summary()}")
            raise
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    async def _wait(self, cls: type[R], predicate: Callable[[R], bool], what: str) -> R:
        record = await self.wait_for(lambda r: isinstance(r, cls) and predicate(r), what)
        assert isinstance(record, cls)
        return record

    async def wait_request(self, n: int) -> Request:
        return await self._wait(Request, lambda r: r.request == n, f"request {n}")

    async def wait_chunk(self, request: int, chunk: int) -> Chunk:
        return await self._wait(Chunk, lambda r: r.request == request and r.chunk == chunk,
                                f"chunk {chunk} of request {request}")

    async def wait_disconnect(self, request: int) -> Disconnect:
        return await self._wait(Disconnect, lambda r: r.request == request, f"disconnect of request {request}")

    async def wait_window(self, window: str) -> Window:
        return await self._wait(Window, lambda r: r.window == window, f"window {window!r}")

    async def wait_window_done(self, window: str) -> WindowDone:
        return await self._wait(WindowDone, lambda r: r.window == window, f"end of window {window!r}")

    async def wait_after(self, index: int) -> list[Record]:
        """The records after ``index``, once there is at least one (the long poll's wait)."""
        if len(self._items) <= index:
            await self.wait_for(lambda r: r.index > index, f"a record after #{index}")
        return self.after(index)
