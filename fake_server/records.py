"""Append-only records with async waiters: what the harness synchronises on instead of sleeping.

Every record is a plain JSON dict with ``kind``, ``mono_ns`` (``time.monotonic_ns()``, the
clock all processes on the host share), ``source`` and ``index`` (1-based position). Waiters
are resolved at append time, so "chunk k of request n flushed" wakes the harness in the same
loop iteration the server flushed it.
"""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Callable

SUMMARY_KEYS = ("request", "chunk", "after_chunk", "window", "status", "complete", "problem")


class Records:
    def __init__(self):
        self._items: list[dict] = []
        self._waiters: list[tuple[Callable[[dict], bool], asyncio.Future]] = []
        self._requests = 0

    # --- writing --------------------------------------------------------------------------
    def append(self, record: dict) -> dict:
        """Store ``record`` (a copy, stamped and indexed) and wake the waiters it satisfies."""
        stored = {**record}
        stored.setdefault("mono_ns", time.monotonic_ns())
        stored.setdefault("source", "server")
        if stored.get("kind") == "request" and not isinstance(stored.get("request"), int):
            stored["request"] = self.next_request_number()
        stored["index"] = len(self._items) + 1
        self._items.append(stored)
        still_waiting = []
        for predicate, future in self._waiters:
            if future.done():
                continue
            if predicate(stored):
                future.set_result(stored)
            else:
                still_waiting.append((predicate, future))
        self._waiters = still_waiting
        return stored

    def next_request_number(self) -> int:
        self._requests += 1
        return self._requests

    # --- reading --------------------------------------------------------------------------
    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(list(self._items))

    def __getitem__(self, i):
        return self._items[i]

    def of_kind(self, kind: str) -> list[dict]:
        return [r for r in self._items if r.get("kind") == kind]

    def after(self, index: int) -> list[dict]:
        return self._items[max(index, 0):]

    def to_jsonl(self, path: str | Path):
        with open(path, "w", encoding="utf-8") as f:
            for record in self._items:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")

    def summary(self) -> str:
        lines = [f"  #{r['index']} {r.get('kind')} "
                 + " ".join(f"{k}={r[k]!r}" for k in SUMMARY_KEYS if k in r) for r in self._items[-40:]]
        skipped = len(self._items) - len(lines)
        head = f"  ({skipped} earlier records not shown)\n" if skipped > 0 else ""
        return head + ("\n".join(lines) if lines else "  (no records)")

    # --- waiting --------------------------------------------------------------------------
    async def wait_for(self, predicate: Callable[[dict], bool], what: str, timeout: float = 30) -> dict:
        """The first record (existing or future) satisfying ``predicate``; TimeoutError otherwise."""
        for record in self._items:
            if predicate(record):
                return record
        future = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no {what} within {timeout:g} s; records so far:\n{self.summary()}") from None

    async def wait_request(self, n: int, timeout: float = 30) -> dict:
        return await self.wait_for(lambda r: r.get("kind") == "request" and r.get("request") == n,
                                   f"request {n}", timeout)

    async def wait_chunk(self, request: int, chunk: int, timeout: float = 30) -> dict:
        return await self.wait_for(lambda r: r.get("kind") == "chunk" and r.get("request") == request
                                   and r.get("chunk") == chunk, f"chunk {chunk} of request {request}", timeout)

    async def wait_disconnect(self, request: int, timeout: float = 30) -> dict:
        return await self.wait_for(lambda r: r.get("kind") == "disconnect" and r.get("request") == request,
                                   f"disconnect of request {request}", timeout)

    async def wait_window(self, window: str, timeout: float = 30) -> dict:
        return await self.wait_for(lambda r: r.get("kind") == "window" and r.get("window") == window,
                                   f"window {window!r}", timeout)

    async def wait_after(self, index: int, timeout: float) -> list[dict]:
        """Records after ``index``, waiting up to ``timeout`` for at least one (long poll)."""
        if len(self._items) <= index and timeout > 0:
            try:
                await self.wait_for(lambda r: r["index"] > index, "record", timeout)
            except TimeoutError:
                pass
        return self.after(index)
