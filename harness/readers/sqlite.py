"""What the SQLite session stores of real agents share (opencode's ``opencode.db``, llm's
``logs.db``): a path ``db#session`` naming one session of a database that holds many, a
consistent snapshot taken without writing or write-locking the agent's file, the snapshot
opened again for reading, and row-level comparison of two snapshots."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.model import Change, Snapshot
from harness.readers.base import LogDamaged


def split(path: str) -> tuple[str, str | None]:
    """``…/store.db#session`` → (database, session); a bare path names no session."""
    db, _, session = os.fspath(path).partition("#")
    return db, session or None


def snapshot(reader_name: str, path: str) -> Snapshot | None:
    """A consistent copy of the database (SQLite's backup API from a read-only connection)."""
    db, _ = split(path)
    if not Path(db).exists():
        return None
    try:
        source = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        raise LogDamaged(db, None, f"cannot open the database read-only ({exc})") from None
    try:
        copy = sqlite3.connect(":memory:")
        try:
            source.backup(copy)
            data = copy.serialize()
        finally:
            copy.close()
    except sqlite3.Error as exc:
        raise LogDamaged(db, None, f"cannot copy the database ({exc})") from None
    finally:
        source.close()
    return Snapshot(reader=reader_name, path=os.fspath(path), data=rollback_mode(bytes(data)),
                    mono_ns=time.monotonic_ns())


def rollback_mode(image: bytes) -> bytes:
    """A copy of a WAL database still says "WAL" in its header (bytes 18-19 = 2), and an
    in-memory image in WAL mode cannot be opened: mark it a rollback-journal database."""
    if len(image) >= 20 and image[18:20] == b"\x02\x02":
        return image[:18] + b"\x01\x01" + image[20:]
    return image


class opened:
    """A snapshot as an in-memory database (``with opened(snap) as con``); LogDamaged when it is not one."""

    def __init__(self, snap: Snapshot):
        self.snapshot = snap

    def __enter__(self) -> sqlite3.Connection:
        self.con = sqlite3.connect(":memory:")
        try:
            self.con.deserialize(rollback_mode(self.snapshot.data))
            self.con.execute("select count(*) from sqlite_master").fetchone()
        except sqlite3.Error as exc:
            self.con.close()
            raise LogDamaged(split(self.snapshot.path)[0], None, f"not a readable SQLite database ({exc})") from None
        return self.con

    def __exit__(self, *exc: object) -> None:
        self.con.close()


def rows(snap: Snapshot, tables: Iterable[str]) -> dict[tuple[str, str], Any]:
    """Every row of ``tables``, keyed by (table, first column); a missing table is skipped."""
    with opened(snap) as con:
        out: dict[tuple[str, str], Any] = {}
        for table in tables:
            try:
                for row in con.execute(f'select * from "{table}"'):
                    out[(table, str(row[0]))] = row
            except sqlite3.Error:
                continue
        return out


def first_changed_row(before: Snapshot, after: Snapshot, tables: Iterable[str]) -> Change | None:
    """The first row of ``tables`` (in key order) that appeared, vanished or changed."""
    old, new = rows(before, tables), rows(after, tables)
    for key in sorted(old.keys() | new.keys()):
        if old.get(key) != new.get(key):
            table, rid = key
            state = "appeared" if key not in old else "vanished" if key not in new else "changed"
            return Change(where=f"table {table}, row {rid}", detail=f"{table} row {rid} {state}")
    return None
