"""What the tests of the file-store readers share: parsing a store through its reader, and
the short signature of its canonical events."""

from __future__ import annotations

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
