"""The store of a run's records, appended to by the server and waited on by the harness.

The record kinds and their JSON form are ``fake_server.records`` (plain values, what the model
and the reports read); this module is what only a running server and the harness that drives it
need: the append-only store with its async waiters. Waiters are resolved at append time, so
"chunk k of request n flushed" wakes the harness in the same loop iteration the server flushed
it. The waits have no timeout of their own: the caller owns the deadline
(``async with asyncio.timeout(s)`` or ``asyncio.wait_for``), and a wait cut short carries a note
listing the records seen so far.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .records import KINDS, RECORDS_VERSION, Chunk, Disconnect, Record, Request, Window, WindowDone

# The fields a summary (the note on a cut-short wait) shows of each record.
SUMMARY_KEYS = ("request", "chunk", "after_chunk", "late_ns", "window", "status", "complete", "reason", "problem")

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


class Records:
    """A run's records in the order they were stored, and the waits the harness synchronises on."""

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
