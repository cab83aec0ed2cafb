"""What the JSONL session stores of real agents share: line splitting with a torn tail,
damage, append-only comparison and the rule for continuing after a torn tail.

Codex CLI, Claude Code and Qwen Code each keep a session as one JSON object per line,
appended as things happen. Their readers subclass :class:`JsonlStore` and supply
``read_records`` (lines → canonical events); everything here is about bytes and lines.

A last line with no newline, or one that is not a JSON object, is a torn tail: kept in
``SessionLog.torn_tail``, never parsed. A line before the last that is the start of a JSON
object cut short is a torn tail a restart left in place, starting a new line after it (these
formats record no cut, so that is one of the two ways to continue that
``JsonlStore.continuation_problems`` accepts): kept in ``SessionLog.cut_records``, never parsed.
Any other line that is not a JSON object is damage: :class:`LogDamaged` names the file and the line.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.model import (
    Capability,
    Change,
    FormatProblem,
    LogCapture,
    SessionEvent,
    SessionLog,
    Snapshot,
    event_of,
)
from harness.readers.base import (
    CannotDamage,
    Damage,
    LogDamaged,
    append_only_lost,
    file_snapshot,
    first_byte_difference,
)


@dataclass(frozen=True)
class Line:
    number: int  # 1-based
    record: dict[str, Any]
    raw: bytes


def split_lines(data: bytes) -> tuple[list[tuple[int, bytes]], bytes | None]:
    """Complete lines as (number, bytes without newline), and the torn tail (as on disk) or None."""
    if not data:
        return [], None
    pieces = data.split(b"\n")
    if pieces[-1]:
        lines, torn = pieces[:-1], pieces[-1]
    else:
        lines, torn = pieces[:-1], None
        if lines and not _is_object(lines[-1]):
            lines, torn = lines[:-1], lines[-1] + b"\n"
    numbered = [(i, raw) for i, raw in enumerate(lines, start=1)]
    return numbered, torn


def complete_prefix(data: bytes) -> bytes:
    _, torn = split_lines(data)
    return data[: len(data) - len(torn)] if torn is not None else data


def _is_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


def load_lines(path: str, data: bytes, *,
               skip_blank: bool = False) -> tuple[list[Line], bytes | None, tuple[tuple[int, bytes], ...]]:
    """Every complete line as a JSON object, the torn tail, and the records a crash cut short
    that a restart left in place (line, bytes); ``LogDamaged`` at the first line that is none
    of these."""
    numbered, torn = split_lines(data)
    out = []
    cut: list[tuple[int, bytes]] = []
    for number, raw in numbered:
        if skip_blank and not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except ValueError as err:
            if is_cut_record(raw):
                cut.append((number, raw))
                continue
            raise LogDamaged(path, number, f"unreadable line (not JSON: {err}); only the last line may be torn, "
                                           "or a record cut short before a new line") from None
        if not isinstance(value, dict):
            raise LogDamaged(path, number, f"unreadable line (a JSON {type(value).__name__}, not an object)")
        out.append(Line(number, value, raw))
    return out, torn, tuple(cut)


_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = (b"true", b"false", b"null")
_ESCAPES = b'"\\/bfnrt'
_HEX = frozenset(b"0123456789abcdefABCDEF")
_SPACE = frozenset(b" \t\r\n")


def is_cut_record(raw: bytes) -> bool:
    """Whether ``raw`` is a JSON object cut short: a proper prefix of some JSON object text (what
    a crash mid-write leaves), as opposed to damage — bytes no JSON text starts with."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.reason != "unexpected end of data":  # only a character cut short at the end is a cut
            return False
        raw = raw[:err.start]
    return raw.startswith(b"{") and _ends_inside_a_value(raw)


def _ends_inside_a_value(data: bytes) -> bool:
    """Whether ``data`` is JSON text that stops before its first value is complete, with nothing
    on the way that no JSON text could hold."""
    stack: list[int] = []  # the open containers, b"{" or b"["
    want = "value"  # what may come next
    i, n = 0, len(data)
    while i < n:
        c = data[i]
        if c in _SPACE:
            i += 1
            continue
        if want in ("value", "value or close"):
            if want == "value or close" and c == ord("]"):
                stack.pop()
                i, want = i + 1, "after value"
            elif c in b"{[":
                stack.append(c)
                i, want = i + 1, "key or close" if c == ord("{") else "value or close"
            elif c == ord('"'):
                end = _string_end(data, i)
                if end is None or end < 0:
                    return end is None
                i, want = end, "after value"
            elif c in b"-0123456789":
                j = i
                while j < n and data[j] in b"-+.eE0123456789":
                    j += 1
                number = data[i:j]
                if j == n:  # cut inside the number, or right after it
                    return bool(_NUMBER.fullmatch(number) or _NUMBER.fullmatch(number + b"0"))
                if not _NUMBER.fullmatch(number):
                    return False
                i, want = j, "after value"
            else:
                literal = next((w for w in _LITERALS if data.startswith(w, i) or w.startswith(data[i:])), None)
                if literal is None:
                    return False
                if not data.startswith(literal, i):
                    return True  # cut inside the literal
                i, want = i + len(literal), "after value"
        elif want in ("key", "key or close"):
            if want == "key or close" and c == ord("}"):
                stack.pop()
                i, want = i + 1, "after value"
            elif c != ord('"'):
                return False
            else:
                end = _string_end(data, i)
                if end is None or end < 0:
                    return end is None
                i, want = end, "colon"
        elif want == "colon":
            if c != ord(":"):
                return False
            i, want = i + 1, "value"
        else:  # after a value inside a container
            if c == ord(","):
                want = "key" if stack[-1] == ord("{") else "value"
            elif c != (ord("}") if stack[-1] == ord("{") else ord("]")):
                return False
            else:
                stack.pop()
            i += 1
        if want == "after value" and not stack:
            return False  # the first value is complete: nothing was cut
    return True


def _string_end(data: bytes, start: int) -> int | None:
    """The offset after the string opening at ``start``; None when ``data`` ends inside it
    (a cut); -1 when it holds what no JSON string may (a control character, a bad escape)."""
    i, n = start + 1, len(data)
    while i < n:
        c = data[i]
        if c == ord('"'):
            return i + 1
        if c < 0x20:
            return -1
        if c == ord("\\"):
            if i + 1 == n:
                return None
            e = data[i + 1]
            if e == ord("u"):
                digits = data[i + 2:i + 6]
                if not all(d in _HEX for d in digits):
                    return -1
                if len(digits) < 4:
                    return None
                i += 6
                continue
            if e not in _ESCAPES:
                return -1
            i += 2
            continue
        i += 1
    return None


def text_of(content: Any) -> str:
    """The text of a message content: a string, or a list of parts with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


class JsonlStore:
    """Byte-level behaviour common to append-only JSONL stores."""

    name = "jsonl"
    capabilities: frozenset[Capability] = frozenset()
    damage_kinds = frozenset({"torn-tail", "mid-file"})
    agent_versions = ""
    # A plausible start of one more record, written without its end (a crash mid-write).
    torn_fragment = b'{"type":"assistant","message":{"role":"assis'

    def snapshot(self, path: str) -> Snapshot | None:
        return file_snapshot(self.name, path)

    def damage(self, path: str, kind: str) -> Damage:
        data = Path(path).read_bytes()
        if kind == "torn-tail":
            if data and not data.endswith(b"\n"):
                raise CannotDamage(f"{path} already ends in a torn line")
            Path(path).write_bytes(data + self.torn_fragment)
            line = data.count(b"\n") + 1
            return Damage(kind, line, f"line {line}")
        if kind != "mid-file":
            raise CannotDamage(f"{self.name} has no damage {kind!r} (known: {', '.join(sorted(self.damage_kinds))})")
        lines = data.split(b"\n")
        complete = len(lines) - 1
        if complete < 3:
            raise CannotDamage(f"mid-file damage needs at least three lines in the store, it has {complete}")
        target = complete // 2  # 0-based, never the first or the last line
        lines[target] = b'{"type": \x00 not json' + b"#" * max(0, len(lines[target]) - 20)
        Path(path).write_bytes(b"\n".join(lines))
        return Damage(kind, target + 1, f"line {target + 1}")

    def changed(self, before: Snapshot, after: Snapshot) -> Change | None:
        return first_byte_difference(before.data, after.data)

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None:
        """Append-only: every complete line of ``before`` stays, byte for byte, at the start."""
        return append_only_lost(before, after, complete_prefix(before.data))

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        return []

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]:
        """A restart on a torn tail must not write onto the torn line (the store would then
        hold a broken line before its end). These formats have no record of a cut, so cutting
        the torn bytes, or leaving them and starting a new line, are both accepted."""
        prior = before.log
        if prior is None or before.snapshot is None or prior.torn_tail is None:
            return []
        torn = prior.torn_tail.rstrip(b"\n")
        line = complete_prefix(before.snapshot.data).count(b"\n") + 1
        onto = after.torn_tail is not None and after.torn_tail != prior.torn_tail and after.torn_tail.startswith(torn)
        # A torn line left in place must stay as it was: one that grew was written onto.
        onto = onto or any(number == line and raw != torn for number, raw in after.cut_records)
        if onto:
            return [FormatProblem(line=line, note=f"{before.moment}: the restart appended onto the torn last line "
                                                  f"(line {line}) instead of cutting it or starting a new line")]
        return []

    # --- for subclasses -----------------------------------------------------------------
    def lines(self, snapshot: Snapshot) -> tuple[list[Line], bytes | None, tuple[tuple[int, bytes], ...]]:
        return load_lines(snapshot.path, snapshot.data)


class Events:
    """Canonical events in the making: numbers them from 1, stamps the current turn, and
    places each on the harness's clock when the store stamps it with the wall clock."""

    def __init__(self) -> None:
        self.items: list[SessionEvent] = []
        self.turn: int | None = None
        # Wall clock minus CLOCK_MONOTONIC, read now: an ISO timestamp the agent wrote on this
        # host maps onto the clock the harness stamps kills and Stops with (to the store's
        # millisecond resolution; kills land at beacons well inside a turn).
        self._wall_minus_mono = time.time_ns() - time.monotonic_ns()

    def add(self, kind: str, line: int, *, turn: int | None = None, where: str | None = None,
            derived: dict[str, Any] | None = None, **data: Any) -> SessionEvent:
        """One more event: ``data`` as its record holds it, ``derived`` what the reader
        concluded from other records (``SessionEvent.derived``)."""
        turn = self.turn if turn is None else turn
        event = event_of(kind, seq=len(self.items) + 1, line=line, turn=turn,
                         mono_ns=self._mono(data.get("timestamp")),
                         data={"turn": turn, **data} if turn is not None else dict(data), where=where, derived=derived)
        self.items.append(event)
        return event

    def _mono(self, stamp: Any) -> int | None:
        if not isinstance(stamp, str):
            return None
        try:
            wall = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return None
        if wall.tzinfo is None:
            return None
        return int(wall.timestamp() * 1_000_000) * 1_000 - self._wall_minus_mono

    def start_turn(self, line: int, **data: Any) -> SessionEvent:
        self.turn = (self.turn or 0) + 1
        return self.add("turn_started", line, **data)


def local_stamp(stamp: Any) -> Any:
    """An ISO stamp written with the host's local time and no offset (``datetime.now()``, as
    gptme and OpenHands write them), given this host's offset so ``Events`` can place it on
    the harness's clock; anything else as it was."""
    if not isinstance(stamp, str):
        return stamp
    try:
        wall = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    return (wall if wall.tzinfo else wall.astimezone()).isoformat()

