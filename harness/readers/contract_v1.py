"""Reader for session logs in the contract-log v1 format (``docs/contract-log-v1.md``).

This is written from the format page alone and shares no code with the reference agent's
writer: a misreading of the page in one is caught by the other.

The reader is strict about structure (header, one JSON object per line, known event types,
contiguous ``seq``) because that is what rule 5 calls damage; it is lenient about the
fields inside an event, which ``format_problems`` reports separately so the format check
can name every bad field instead of refusing the whole log at the first one. Everything the
format says about continuing a log after a crash (cut a torn tail, record what was cut,
never rewrite a complete line) lives here too, so C10 judges this format by these rules and
another store by its own.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.model import (
    EVENT_TYPES,
    Capability,
    Change,
    FormatProblem,
    LogCapture,
    SessionEvent,
    SessionHeader,
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

FORMAT = "contract-log"
VERSION = 1
HEADER_FIELDS = ("session_id", "created", "cwd", "model")


class ContractV1Reader:
    """contract-log v1: one JSONL file, append-only, with every event the contract names."""

    name = "contract-v1"
    capabilities = frozenset(Capability)
    damage_kinds = frozenset({"torn-tail", "mid-file"})
    agent_versions = "contract-log v1 writers"

    def snapshot(self, path: str) -> Snapshot | None:
        return file_snapshot(self.name, path)

    def parse(self, snapshot: Snapshot) -> SessionLog:
        return read_contract_v1(snapshot.data, path=snapshot.path)

    def damage(self, path: str, kind: str) -> Damage:
        data = Path(path).read_bytes()
        if kind == "torn-tail":
            # A write cut short: the start of one more event, no newline.
            Path(path).write_bytes(data + b'{"seq": ' + str(data.count(b"\n")).encode() + b', "type": "tool_res')
            line = data.count(b"\n") + 1
            return Damage(kind, line, f"line {line}")
        if kind != "mid-file":
            raise CannotDamage(f"contract-v1 has no damage {kind!r} (known: {', '.join(sorted(self.damage_kinds))})")
        lines = data.split(b"\n")
        complete = len(lines) - 1  # the part after the last newline is not a line
        if complete < 3:
            raise CannotDamage(f"mid-file damage needs at least three lines in the log, it has {complete}")
        target = (complete - 1) // 2  # 0-based: after the header, before the last line
        lines[target] = b'{"seq": \x00 not json' + b"#" * max(0, len(lines[target]) - 20)
        Path(path).write_bytes(b"\n".join(lines))
        return Damage(kind, target + 1, f"line {target + 1}")

    def changed(self, before: Snapshot, after: Snapshot) -> Change | None:
        return first_byte_difference(before.data, after.data)

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None:
        """Append-only: every complete line of ``before`` stays, byte for byte, at the start."""
        return append_only_lost(before, after, complete_prefix(before.data))

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        return [FormatProblem(note=p, event=e, line=e.line) for e in log.events for p in event_field_problems(e)]

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]:
        """A restart on a torn tail must cut it (never append onto it) and record the cut
        bytes and their offset in a ``torn_tail_dropped`` event first."""
        prior = before.log
        if prior is None or before.snapshot is None or prior.torn_tail is None:
            return []
        if after.torn_tail is not None and after.torn_tail != prior.torn_tail \
                and after.torn_tail.startswith(prior.torn_tail.rstrip(b"\n")):
            return [FormatProblem(note=f"{before.moment}: the restart appended onto the torn last line instead "
                                       "of cutting it")]
        if len(after.events) <= len(prior.events):
            return []
        follower = after.events[len(prior.events)]
        offset = len(complete_prefix(before.snapshot.data))
        if follower.type != "torn_tail_dropped":
            return [FormatProblem(event=follower, line=follower.line,
                                  note=f"{before.moment}: appended after a torn last line without a "
                                       "torn_tail_dropped event first")]
        try:
            dropped: bytes | None = base64.b64decode(str(follower.get("dropped")), validate=True)
        except ValueError:
            dropped = None
        if dropped != prior.torn_tail or follower.get("offset") != offset:
            return [FormatProblem(event=follower, line=follower.line,
                                  note=f"torn_tail_dropped should hold the {len(prior.torn_tail)} torn bytes "
                                       f"cut at offset {offset}")]
        return []


def read_contract_v1(source: str | os.PathLike[str] | bytes, *, path: str | None = None) -> SessionLog:
    """Read a contract-v1 log from a file path or from its bytes.

    ``path`` names the source in errors and in the result when ``source`` is bytes.
    A torn last line (no final newline, or not JSON) is kept in ``torn_tail``, never parsed.
    """
    if isinstance(source, bytes):
        data, name = source, path or "<bytes>"
    else:
        name = path or os.fspath(source)
        with open(source, "rb") as f:
            data = f.read()
    lines, torn_tail = _split_lines(data)
    if not lines:
        raise LogDamaged(name, 1, "missing header: the log has no complete first line")
    header = _parse_header(name, lines[0])
    events = tuple(_parse_event(name, number, raw) for number, raw in enumerate(lines[1:], start=2))
    for expected_seq, event in enumerate(events, start=1):
        if event.seq != expected_seq:
            raise LogDamaged(name, event.line, f"seq {event.seq} where {expected_seq} was expected (sequence gap)")
    return SessionLog(path=name, header=header, events=events, torn_tail=torn_tail)


def complete_prefix(data: bytes) -> bytes:
    """The bytes up to the end of the last complete line: what survives a torn tail."""
    _, torn = _split_lines(data)
    return data[: len(data) - len(torn)] if torn is not None else data


def _split_lines(data: bytes) -> tuple[list[bytes], bytes | None]:
    """Complete lines (without their newline) and the torn tail, if any.

    The last line is torn when it has no final newline or is not valid JSON; it is returned
    exactly as on disk (including its newline, if it had one) so ``offset + len`` is the file size.
    """
    if not data:
        return [], None
    pieces = data.split(b"\n")
    if pieces[-1]:  # no final newline: the last piece is a torn write
        return pieces[:-1], pieces[-1]
    lines = pieces[:-1]
    if not _parses_as_object(lines[-1]):
        return lines[:-1], lines[-1] + b"\n"
    return lines, None


def _parses_as_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


def _load_object(path: str, number: int, raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError as err:
        raise LogDamaged(path, number, f"unreadable line (not JSON: {err})") from None
    if not isinstance(value, dict):
        raise LogDamaged(path, number, f"unreadable line (a JSON {type(value).__name__}, not an object)")
    return value


def _parse_header(path: str, raw: bytes) -> SessionHeader:
    data = _load_object(path, 1, raw)
    if "seq" in data and "format" not in data:
        raise LogDamaged(path, 1, "missing header: line 1 is an event")
    if data.get("format") != FORMAT or data.get("version") != VERSION:
        raise LogDamaged(
            path, 1,
            f"not a contract-log v1 header (format={data.get('format')!r}, version={data.get('version')!r})",
        )
    missing = [f for f in HEADER_FIELDS if not isinstance(data.get(f), str)]
    if missing:
        raise LogDamaged(path, 1, f"header lacks {', '.join(missing)}")
    parent = data.get("parent")
    return SessionHeader(
        session_id=data["session_id"], created=data["created"], cwd=data["cwd"], model=data["model"],
        adapter=data.get("adapter"), parent=parent if isinstance(parent, dict) else None, raw=data,
    )


def _parse_event(path: str, number: int, raw: bytes) -> SessionEvent:
    data = _load_object(path, number, raw)
    seq, kind = data.get("seq"), data.get("type")
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise LogDamaged(path, number, f"event has no integer seq (seq={seq!r})")
    if kind not in EVENT_TYPES:
        raise LogDamaged(path, number, f"unknown event type {kind!r}")
    mono = data.get("mono_ns")
    turn = data.get("turn")
    if kind == "model_request":
        request = data.get("request")
        chat = request.get("messages") if isinstance(request, dict) else None
        data = data | {"messages": [_canonical(m) for m in chat or [] if isinstance(m, dict)]}
    return event_of(
        kind, seq=seq, line=number,
        mono_ns=mono if isinstance(mono, int) else None,
        turn=turn if isinstance(turn, int) else None,
        data=data,
    )


def _canonical(message: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions message (what contract-v1 keeps of a request) as a canonical one."""
    content = message.get("content")
    if isinstance(content, list):
        text = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    else:
        text = content if isinstance(content, str) else ""
    calls = [{"id": c.get("id"), "name": (c.get("function") or {}).get("name"),
              "arguments": (c.get("function") or {}).get("arguments")}
             for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    return {"role": message.get("role"), "text": text, "tool_calls": calls,
            "tool_call_id": message.get("tool_call_id")}


# Fields each event type must carry, with the JSON types they may have (None = null allowed).
_STR, _INT, _BOOL, _LIST, _DICT, _NULL = str, int, bool, list, dict, type(None)
EVENT_FIELDS: Mapping[str, Mapping[str, tuple[type, ...]]] = {
    "turn_started": {"turn": (_INT,), "input": (_STR,), "inbox": (_LIST,)},
    "session_resumed": {"turn": (_INT,), "gap_s": (_INT, float), "note": (_STR,)},
    "model_request": {"turn": (_INT,), "step": (_INT,), "request": (_DICT,)},
    "assistant_message": {
        "turn": (_INT,), "step": (_INT,), "text": (_STR,), "tool_calls": (_LIST,),
        "finish_reason": (_STR, _NULL), "interrupted": (_BOOL,),
    },
    "tool_call": {"turn": (_INT,), "step": (_INT,), "call_id": (_STR,), "name": (_STR,), "arguments": (_DICT,)},
    "tool_started": {"turn": (_INT,), "call_id": (_STR,), "pid": (_INT,), "pgid": (_INT,)},
    "tool_result": {
        "turn": (_INT,), "call_id": (_STR,), "output": (_STR,), "exit_code": (_INT, _NULL), "aborted": (_BOOL,),
    },
    "step_settled": {"turn": (_INT,), "step": (_INT,)},
    "stop_requested": {"turn": (_INT,), "source": (_STR,)},
    "turn_ended": {"turn": (_INT,), "reason": (_STR,)},
    "inbox_queued": {"item_id": (_STR,), "text": (_STR,)},
    "inbox_delivered": {"item_id": (_STR,), "turn": (_INT,)},
    "inbox_canceled": {"item_id": (_STR,)},
    "torn_tail_dropped": {"offset": (_INT,), "dropped": (_STR,)},
}
COMMON_FIELDS: Mapping[str, tuple[type, ...]] = {"time": (_STR,), "mono_ns": (_INT,)}


# Fields a turn_ended must carry for some reasons: who aborted, and what went wrong.
SETTLEMENT_FIELDS: Mapping[str, Mapping[str, tuple[type, ...]]] = {
    "aborted": {"source": (_STR,)},
    "error": {"error": (_STR,)},
    "blocked": {"error": (_STR,)},
}


def event_field_problems(event: SessionEvent) -> list[str]:
    """What is missing or mistyped in one event, per the format page's table (empty if fine)."""
    problems = []
    required = {**COMMON_FIELDS, **EVENT_FIELDS.get(event.type, {})}
    if event.type == "turn_ended":
        required |= SETTLEMENT_FIELDS.get(event.get("reason"), {})
    for name, types in required.items():
        if name not in event.data:
            problems.append(f"{event.type} lacks {name}")
            continue
        value = event.data[name]
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            problems.append(f"{event.type}.{name} is {type(value).__name__}, not {'/'.join(_type_names(types))}")
    return problems


def _type_names(types: tuple[type, ...]) -> list[str]:
    return ["null" if t is _NULL else t.__name__ for t in types]
