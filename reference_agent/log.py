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
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import failpoints

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
    events: list[dict[str, Any]]
    torn: TornTail | None = None
    skipped_lines: list[int] = field(default_factory=list)  # only with accept-mid-file-damage


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# Set by a program (the CLI) that owns its process: decoded logs then go to the permanent
# GC generation. They live as long as the session and hold no cycles, so this spares every
# later collection from traversing them; a library user's heap is left as it was.
freeze_loaded = False


@contextlib.contextmanager
def paused_gc():
    """Bulk decoding allocates about ten objects per event, all acyclic: the cyclic
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


def load(path: str | Path) -> LoadedLog:
    """Read a session log; tolerate a torn last line, refuse any other damage. Never writes."""
    with paused_gc():
        return _load(Path(path))


def _load(path: Path) -> LoadedLog:
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
        raise LogDamage(
            path, 1, f"not a contract-log v1 header (format={header.get('format')!r}, version={header.get('version')!r})"
        )
    body = data[header_end:end]
    events = _parse_fast(body)
    skipped: list[int] = []
    if events is None:
        events, torn, skipped = _parse_slow(path, body, header_end, torn)
    _check_sequence(path, events, skipped)
    return LoadedLog(path, header, events, torn, skipped)


def _parse_fast(body: bytes) -> list[dict[str, Any]] | None:
    """One ``json.loads`` for the whole body (cold replay speed); None if any line is bad."""
    if not body:
        return []
    try:
        events = json.loads(b"[" + body[:-1].replace(b"\n", b",") + b"]")
    except ValueError:
        return None
    if len(events) != body.count(b"\n") or not all(type(e) is dict for e in events):
        return None  # a line held two values, or a non-object: let the slow path name it
    return events


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


def _check_sequence(path: Path, events: list[dict[str, Any]], skipped: list[int]) -> None:
    if skipped:  # the accept-mid-file-damage mutant checks nothing around what it skipped
        return
    seqs = [e.get("seq") for e in events]
    if seqs == list(range(1, len(seqs) + 1)) and all(type(e.get("type")) is str for e in events):
        return
    for i, event in enumerate(events, start=1):  # name the first bad line
        if event.get("seq") != i:
            raise LogDamage(path, i + 1, f"seq {event.get('seq')!r} where {i} was expected")
        if not isinstance(event.get("type"), str):
            raise LogDamage(path, i + 1, "event has no type")


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
        next_seq = loaded.events[-1]["seq"] + 1 if loaded.events else 1
        return cls(loaded.path, next_seq, loaded.torn)

    def append(self, type_: str, **fields: Any) -> dict[str, Any]:
        """Write one event now (to the kernel, not yet fsync'd) and return it."""
        if self._torn is not None:
            self._drop_torn_tail()
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

    def _drop_torn_tail(self) -> None:
        torn, self._torn = self._torn, None
        if failpoints.on("append-after-torn-line"):
            return
        os.ftruncate(self._fd, torn.offset)
        event = self._stamp(
            "torn_tail_dropped", {"offset": torn.offset, "dropped": base64.b64encode(torn.data).decode("ascii")}
        )
        os.write(self._fd, _encode(event))


def _encode(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
