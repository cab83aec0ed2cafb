"""The session log (contract log v1, ``docs/contract-log-v1.md``): writer and loader.

Why ``os.write`` on an ``O_APPEND`` descriptor: every event reaches the kernel as it
happens, so a killed process loses nothing it appended; ``checkpoint()`` adds ``fsync`` at
the semantic barriers (request, tool intent, settled step, settlement) so a lost machine
loses nothing before them either. Loading never writes: a torn tail is remembered and cut
off by the *first append* of the next writer, which records what it dropped.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import gc
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from . import failpoints
from .events import Event, Replayer, apply_all, events_decoder, kinds_by_tag, tag_of

FORMAT = "contract-log"
VERSION = 1


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LogDamage(Exception):
    """A log that cannot be loaded: names the file, the line and the problem."""

    def __init__(self, path: str | Path, line: int, problem: str):
        self.path, self.line, self.problem = str(path), line, problem
        super().__init__(f"{path}:{line}: {problem}")


class CheckpointFailed(Exception):
    """A durability barrier could not be made durable; the guarded effect must not start."""


@dataclass
class TornTail:
    offset: int  # byte offset where the torn line starts
    data: bytes


@dataclass
class LoadedLog:
    path: Path
    header: dict[str, Any]
    events: list[dict[str, Any]]  # empty after ``load(..., replay=)``: the events went into ``replayed``
    last_event: dict[str, Any] | None  # the last complete event, kept either way
    torn: TornTail | None = None
    skipped_lines: list[int] = field(default_factory=list)  # only with accept-mid-file-damage
    replayed: Any = None  # what ``load(..., replay=)`` built from the events


# msgspec decodes the lines of a 24 MB log about 4.5x faster than the standard library and
# 1.4x faster than orjson (benchmarks/refagent_bench.py prints all three); the writer uses
# the same library, so nothing is written that the loader would refuse (no NaN, no Infinity).
_DECODER = msgspec.json.Decoder(dict[str, Any])
_ENCODER = msgspec.json.Encoder()
# A newline not between "}" and "{": where the fast path cannot prove each line is one object.
_LOOSE_NEWLINE = re.compile(rb"\n(?:(?!\{)|(?<!\}\n))")


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    try:
        return _DECODER.decode(raw)
    except msgspec.DecodeError:  # not JSON, or not an object
        return None


# Set by a program (the CLI) that owns its process: what a load builds (the state, or the
# events) then goes to the permanent GC generation. It lives as long as the session and
# holds no cycles, so this spares every later collection from traversing it; a library
# user's heap is left as it was.
freeze_loaded = False


@contextlib.contextmanager
def paused_gc():
    """Bulk decoding allocates several objects per event, all acyclic: the cyclic
    collector would rescan the growing heap again and again (half the cold-load time on a
    132k-event log) and find nothing. Reference counting still frees all of it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze_loaded:
            gc.freeze()
        if was_enabled:
            gc.enable()


def load(path: str | Path, replay: Callable[[dict[str, Any]], Replayer] | None = None) -> LoadedLog:
    """Read a session log; tolerate a torn last line, refuse any other damage. Never writes.

    ``replay``, if given, is called with the header and returns what the events are then
    applied to, in order, while they are decoded and checked (``LoadedLog.replayed``).
    The events themselves are then not kept: a resume needs the state they add up to, not
    the ~100 MB a 132k-event log decodes to, and decoding a chunk into the memory the last
    one freed spares the page faults of that much fresh memory (about 3 µs per 4 KiB page
    on the 2-core VMs this is measured on: most of a one-call decode's time). When the log
    turns out damaged, ``LogDamage`` is raised and what ``replay`` built is to be dropped.
    """
    with paused_gc():
        return _load(Path(path), replay)


def _load(path: Path, replay: Callable[[dict[str, Any]], Replayer] | None) -> LoadedLog:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LogDamage(path, 0, f"cannot read the log: {exc.strerror or exc}") from None
    end = data.rfind(b"\n") + 1  # everything after the last newline is a torn write
    torn = TornTail(end, data[end:]) if end < len(data) else None
    header_end = data.find(b"\n") + 1
    if header_end == 0:
        raise LogDamage(path, 1, "no header line (the file is empty or its only line is torn)")
    header = _parse_line(data[: header_end - 1])
    if header is None:
        raise LogDamage(path, 1, "the header is not a JSON object")
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        found = f"format={header.get('format')!r}, version={header.get('version')!r}"
        raise LogDamage(path, 1, f"not a contract-log v1 header ({found})")
    into = replay(header) if replay is not None else None
    events: list[dict[str, Any]] = []
    last = _parse_fast(path, data, header_end, end, into, None if into is not None else events)
    skipped: list[int] = []
    if last is False:  # some line is not one JSON object: find it, then start the replay afresh
        events, torn, skipped = _parse_slow(path, data[header_end:end], header_end, torn)
        into = replay(header) if replay is not None else None
        _check_sequence(path, events, 0, skipped, into)
        last = events[-1] if events else None
        if into is not None:
            events = []
    return LoadedLog(path, header, events, last, torn, skipped, into)


# Lines are decoded, checked and replayed a chunk at a time: the objects decoded from a
# 64 KiB chunk are still in the CPU cache when the check and the replay read them (one
# decode of the whole log leaves ~100 MB of objects that every later walk fetches from
# memory), and, when they are not kept, the next chunk is decoded into the memory they held.
CHUNK_BYTES = 64 * 1024


def _parse_fast(path: Path, data: bytes, start: int, end: int, into: Replayer | None,
                keep: list[dict[str, Any]] | None) -> dict[str, Any] | None | Literal[False]:
    """Decode the lines of ``data[start:end]`` with msgspec's stream decoder, check them,
    apply them to ``into`` and add them to ``keep``; return the last event (None if there is
    none), or False when the slow path must decide, line by line.

    That decoder reads whitespace-separated values, not lines, so the lines are first
    proved to be one object each: every newline is between "}" and "{" (what the writer
    writes), and the count of values equals the count of lines. A raw newline cannot be in
    a JSON string, and inside a value "}" is never followed by "{", so no value spans a
    newline; every line starts a value; as many values as lines leaves one per line. Any
    other log (a blank line, CRLF, padding) is read by the slow path, which accepts exactly
    what a line-by-line decode accepts.

    With ``into``, lines are decoded to the structs its handlers read; a chunk holding a
    line those cannot take (an unknown type, a field missing) is decoded again as dicts,
    and the dicts' check names the line and the problem."""
    if start < end and data[end - 2] != 0x7D:  # the last line ends with "}"
        return False
    view = memoryview(data)
    structs = events_decoder(into.handlers) if into is not None else None
    seen = 0
    while start < end:
        stop = data.rfind(b"\n", start, start + CHUNK_BYTES) + 1 or data.find(b"\n", start) + 1
        # from the newline before the chunk (the header's, or the previous chunk's last) to
        # the chunk's own last one, excluded: the next chunk's search looks at that one
        if _LOOSE_NEWLINE.search(data, start - 1, stop - 1) is not None:
            return False
        chunk: list[Any] | None = None
        if structs is not None:
            with contextlib.suppress(msgspec.ValidationError):
                chunk = structs.decode_lines(view[start:stop])
        replay_structs = chunk is not None
        try:
            if chunk is None:
                chunk = _DECODER.decode_lines(view[start:stop])
        except msgspec.DecodeError:
            return False
        if len(chunk) != data.count(b"\n", start, stop):
            return False
        if replay_structs:
            _replay_structs(path, chunk, seen, into)  # type: ignore[arg-type]
        else:
            _check_sequence(path, chunk, seen, [], into)
        seen += len(chunk)
        if keep is not None:
            keep += chunk
        start = stop
    if not seen:
        return None
    return _parse_line(data[data.rfind(b"\n", 0, end - 1) + 1:end - 1])  # the last event, as a dict


def _parse_slow(path: Path, body: bytes, offset: int, torn: TornTail | None):
    """Line by line, to name the damaged line (or, last of all, to find a torn one)."""
    events: list[dict[str, Any]] = []
    skipped: list[int] = []
    lines = body.split(b"\n")[:-1]
    for i, raw in enumerate(lines):
        event = _parse_line(raw)
        if event is None:
            if i == len(lines) - 1 and torn is None:  # a terminated but unparsable last line is torn too
                return events, TornTail(offset, raw + b"\n"), skipped
            if failpoints.on("accept-mid-file-damage"):
                skipped.append(i + 2)
                offset += len(raw) + 1
                continue
            raise LogDamage(path, i + 2, "not a JSON object (damage before the last line)")
        events.append(event)
        offset += len(raw) + 1
    return events, torn, skipped


_UNUSABLE = (KeyError, TypeError, AttributeError, ValueError)  # a handler's, or msgspec's conversion's


def _unusable(type_: object, exc: Exception) -> str:
    return f"a {type_} event the agent cannot use ({type(exc).__name__}: {exc})"


def _replay_structs(path: Path, events: list[Event], before: int, into: Replayer) -> None:
    """``_check_sequence`` for events decoded to ``into``'s structs (their type is a string
    by construction)."""
    handler_of = into.handlers.get
    seq = before
    event = Event()
    try:
        for event in events:
            seq += 1
            if event.seq != seq:
                break
            handler = handler_of(type(event))
            if handler is not None:
                handler(event)
        else:
            return
    except _UNUSABLE as exc:
        raise LogDamage(path, seq + 1, _unusable(tag_of(type(event)), exc)) from None
    raise LogDamage(path, seq + 1, f"seq {event.seq!r} where {seq} was expected")


def _check_sequence(path: Path, events: list[dict[str, Any]], before: int, skipped: list[int],
                    into: Replayer | None) -> None:
    """Events ``before + 1``… each have the next ``seq`` and a string ``type``; each is
    handed to ``into``'s handler for its type as soon as it passed. An event whose fields
    that handler cannot use is damage too, named like the rest."""
    if skipped:  # the accept-mid-file-damage mutant checks nothing around what it skipped
        if into is not None:
            apply_all(into, (e for e in events if isinstance(e.get("type"), str)))
        return
    handlers = into.handlers if into is not None else {}
    kind_of = kinds_by_tag(frozenset(handlers)).get
    convert = msgspec.convert
    seq = before
    event: dict[str, Any] = {}
    problem = ""
    try:
        for event in events:
            seq += 1
            kind = event["type"]
            if event["seq"] != seq or type(kind) is not str:
                break
            struct = kind_of(kind)
            if struct is not None:
                handlers[struct](convert(event, struct))
        else:
            return
    except _UNUSABLE as exc:
        problem = _unusable(event.get("type"), exc)
    if event.get("seq") != seq:
        problem = f"seq {event.get('seq')!r} where {seq} was expected"
    elif type(event.get("type")) is not str:
        problem = "event has no type"
    raise LogDamage(path, seq + 1, problem)


class LogWriter:
    """Appends events to one session log; the only code that writes it."""

    def __init__(self, path: Path, next_seq: int, torn: TornTail | None = None):
        self.path = path
        self.next_seq = next_seq
        self._torn = torn
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._skipped_seq = False

    @classmethod
    def create(cls, path: Path, header: dict[str, Any]) -> LogWriter:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            if not failpoints.on("no-header"):
                os.write(fd, _encode(header))
            os.fsync(fd)
        finally:
            os.close(fd)
        return cls(path, 1)

    @classmethod
    def reopen(cls, loaded: LoadedLog) -> LogWriter:
        next_seq = loaded.last_event["seq"] + 1 if loaded.last_event else 1
        return cls(loaded.path, next_seq, loaded.torn)

    def append(self, type_: str, **fields: Any) -> dict[str, Any]:
        """Write one event now (to the kernel, not yet fsync'd) and return it."""
        if self._torn is not None:
            torn, self._torn = self._torn, None
            self._drop_torn_tail(torn)
        event = self._stamp(type_, fields)
        os.write(self._fd, _encode(event))
        return event

    def copy(self, event: dict[str, Any]) -> None:
        """Write an event of another log unchanged (a fork keeps its parent's events as they were)."""
        if event.get("seq") != self.next_seq:
            raise ValueError(f"copying seq {event.get('seq')} where {self.next_seq} comes next")
        os.write(self._fd, _encode(event))
        self.next_seq += 1

    def checkpoint(self) -> None:
        """A durability barrier: everything appended so far is on disk, or this raises."""
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise CheckpointFailed(f"fsync of {self.path} failed: {exc.strerror or exc}") from exc

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _stamp(self, type_: str, fields: dict[str, Any]) -> dict[str, Any]:
        event = {"seq": self.next_seq, "time": utc_now(), "mono_ns": time.monotonic_ns(), "type": type_}
        event.update(fields)
        self.next_seq += 1
        if type_ == "turn_started" and failpoints.on("seq-gap") and not self._skipped_seq:
            self._skipped_seq = True
            self.next_seq += 1
        return event

    def _drop_torn_tail(self, torn: TornTail) -> None:
        if failpoints.on("append-after-torn-line"):
            return
        os.ftruncate(self._fd, torn.offset)
        event = self._stamp(
            "torn_tail_dropped", {"offset": torn.offset, "dropped": base64.b64encode(torn.data).decode("ascii")}
        )
        os.write(self._fd, _encode(event))


def _encode(value: dict[str, Any]) -> bytes:
    return _ENCODER.encode(value) + b"\n"
