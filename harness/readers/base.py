"""The reader seam: everything about one agent's session-store format, behind one interface.

A reader owns its format entirely — taking a snapshot of the store at a moment (a file's
bytes, or a consistent copy of a database), parsing a snapshot into canonical events
(``harness.model``'s grammar), damaging the store the ways a crash would (where the format
has such a notion), its format rules (C10), and what the store can and cannot record
(``capabilities``). The runner captures snapshots through the profile's reader at every kill
and restart; checkers see parsed logs and ask the reader (``LogFormat``) to compare
snapshots. No checker imports a reader or looks at a format's bytes, so a store shaped
nothing like contract-v1 is judged by its own rules.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness.model import (
    Capability,
    Change,
    FormatProblem,
    LogCapture,
    SessionLog,
    Snapshot,
)


class LogDamaged(Exception):
    """The store cannot be read: damage before its last record, a bad header, a gap — or a
    store of a version the reader was not written for. Names the file and where."""

    def __init__(self, path: str, line: int | None, problem: str, where: str | None = None):
        place = where or (f"{line}" if line is not None else "")
        super().__init__(f"{path}:{place}: {problem}" if place else f"{path}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


class UnknownVersion(LogDamaged):
    """The store is of a version the reader was not written for. Its reader's limit, never
    the agent's failure: the checks that need the log answer ``unknown``, naming both versions."""


class CannotDamage(Exception):
    """The format has no such damage (e.g. a torn tail in a database)."""


@dataclass(frozen=True)
class Damage:
    """What the harness did to a store: the kind, and where (so C10 can ask the agent's
    refusal to name it)."""

    kind: str  # "torn-tail", "mid-file"
    line: int | None
    where: str  # "line 5", "row 3 of table message"


class Reader(Protocol):
    """A session-store format. ``LogFormat``'s questions plus the I/O the runner needs."""

    name: str
    capabilities: frozenset[Capability]
    damage_kinds: frozenset[str]
    agent_versions: str  # which agent versions' stores it was written for, for refusals

    def snapshot(self, path: str) -> Snapshot | None:
        """The store as it is now; None when there is none at ``path``."""
        ...

    def parse(self, snapshot: Snapshot) -> SessionLog:
        """Canonical events of one snapshot; ``LogDamaged`` when it cannot be read."""
        ...

    def damage(self, path: str, kind: str) -> Damage:
        """Damage the store in place; ``CannotDamage`` when the format has no such damage."""
        ...

    def changed(self, before: Snapshot, after: Snapshot) -> Change | None: ...

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None: ...

    def format_problems(self, log: SessionLog) -> list[FormatProblem]: ...

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]: ...


def capture(reader: Reader, path: str | None, moment: str, *, looked_in: str | None = None) -> LogCapture:
    """The store at ``path`` now, parsed: the one way the runner captures a moment. With no
    ``path``, ``looked_in`` says where a store was looked for and not found (the profile's glob)."""
    snap = reader.snapshot(path) if path else None
    if snap is None:
        return LogCapture(moment=moment, snapshot=None, absent_from=path or looked_in)
    return parse_capture(reader, snap, moment)


def parse_capture(reader: Reader, snap: Snapshot, moment: str) -> LogCapture:
    try:
        return LogCapture(moment=moment, snapshot=snap, log=reader.parse(snap))
    except UnknownVersion as exc:
        return LogCapture(moment=moment, snapshot=snap, error=str(exc), version_unknown=True)
    except LogDamaged as exc:
        return LogCapture(moment=moment, snapshot=snap, error=str(exc))


def file_snapshot(reader_name: str, path: str) -> Snapshot | None:
    """A single file's bytes (for stores that are one file)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    return Snapshot(reader=reader_name, path=os.fspath(path), data=data, mono_ns=time.monotonic_ns())


def append_only_lost(before: Snapshot, after: Snapshot, kept: bytes) -> Change | None:
    """For a store that only appends: where ``after`` stops starting with ``kept`` — the
    complete records of ``before`` — byte for byte (None when it keeps them all)."""
    if after.data.startswith(kept):
        return None
    return first_byte_difference(kept, after.data[: len(kept)])


def first_byte_difference(before: bytes, after: bytes) -> Change | None:
    """Where two byte strings first differ, as line and byte (None when equal)."""
    if before == after:
        return None
    offset = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
                  min(len(before), len(after)))
    line = before.count(b"\n", 0, offset) + 1
    return Change(where=f"line {line}, byte {offset}", line=line,
                  detail=f"{len(before)} bytes became {len(after)}; from byte {offset}: {after[offset:offset + 80]!r}")


# --- format rules many stores share ------------------------------------------------------


def unanswered_results(log: SessionLog, result: str, *, answers: str = "tool_call",
                       earlier: str = "earlier call") -> list[FormatProblem]:
    """Each ``tool_result`` whose call no earlier ``answers`` event (a call, a start) names:
    ``result`` is what the store calls a result ("function response"), for the note."""
    problems = []
    seen: set[str] = set()
    for event in log.events:
        if event.type == answers:
            seen.add(event.get("call_id"))
        elif event.type == "tool_result" and event.get("call_id") not in seen:
            problems.append(FormatProblem(note=f"{result} for {event.get('call_id')} answers no {earlier}",
                                          event=event, line=event.line))
    return problems


def chain_problems(links: list[tuple[str, str | None, int]], record: str, *, linear: bool) -> list[FormatProblem]:
    """Records that name their parent (id, parent id, line), in file order: each names the
    record before it (``linear``, one chain) or an earlier one (a tree); only the first names none."""
    problems = []
    previous: str | None = None
    seen: set[str] = set()
    for rid, parent, line in links:
        if linear:
            wrong = parent != previous and previous is not None
            expected = f"not the {record} before it ({previous})"
        else:
            wrong = (parent is None and bool(seen)) or (parent is not None and parent not in seen)
            expected = f"which no earlier {record} is"
        if wrong:
            problems.append(FormatProblem(note=f"{record} {rid} names parent {parent}, {expected}", line=line))
        previous = rid
        seen.add(rid)
    return problems
