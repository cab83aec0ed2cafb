"""What the tests of the file-store readers share: parsing a store through its reader, the
short signature of its canonical events, and a recorded SQLite store rebuilt from its dump."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from harness.model import SessionLog
from harness.readers import get_reader

ABBR = {"turn_started": "T", "assistant_message": "A", "tool_call": "C", "tool_started": "S", "tool_result": "R",
        "step_settled": "P", "stop_requested": "Q", "turn_ended": "E"}


def parse(reader: str, path: str) -> SessionLog:
    r = get_reader(reader)
    assert r is not None
    snap = r.snapshot(path)
    assert snap is not None
    return r.parse(snap)


def signature(log: SessionLog) -> str:
    """Each event as its type's letter (ABBR) and its turn: ``T1 A1 C1 R1``."""
    return " ".join(f"{ABBR[e.type]}{e.turn}" for e in log.events)


def restore_dump(dump: Path, db: Path) -> str:
    """The SQLite database ``db`` rebuilt from the SQL dump ``dump``, unsynced: a dump without a
    transaction of its own commits statement by statement, and a sync to disk after each would
    take most of a second for a hundred lines (a scratch copy needs none)."""
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA synchronous = OFF")
        con.executescript(dump.read_text(encoding="utf-8"))
    finally:
        con.close()
    return str(db)
