"""Factories for hand-made runs: a contract-v1 log, fake-server records and an Observation.

The checkers' tests build good and violating runs with these, and the runner's tests can
build observations the same way. Everything shares one fake monotonic clock so that the
order of log events, records, stops and kills is explicit in the test that builds them.
The log is produced as bytes and parsed by the real reader, so a hand-made log is held
to the format exactly as an agent's log is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from harness.model import (
    AgentKill,
    Observation,
    ProcessExit,
    Restart,
    SessionLog,
    StopDelivery,
    UserInput,
    WindowObservation,
)
from harness.readers.contract_v1 import read_contract_v1

CANARY = "sk-stopbench-canary-0f3a9c"


class Clock:
    """A fake ``time.monotonic_ns``: every reading is 1 ms after the previous one."""

    def __init__(self, start: int = 1_000_000_000):
        self.now = start

    def tick(self) -> int:
        self.now += 1_000_000
        return self.now


def call(call_id: str, command: str = "echo hi", name: str = "bash") -> dict[str, Any]:
    """A tool call as records and canonical messages carry it (arguments as JSON text)."""
    return {"id": call_id, "name": name, "arguments": json.dumps({"command": command})}


def msg(role: str, text: str = "", tool_calls: list | None = None, tool_call_id: str | None = None) -> dict:
    """One canonical message."""
    return {"role": role, "text": text, "tool_calls": list(tool_calls or []), "tool_call_id": tool_call_id}


def chat(messages: list[dict]) -> dict[str, Any]:
    """A Chat Completions request envelope, as a ``model_request`` event holds it."""
    out = []
    for m in messages:
        chat_msg: dict[str, Any] = {"role": m["role"], "content": m["text"]}
        if m["tool_calls"]:
            chat_msg["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in m["tool_calls"]
            ]
        if m["tool_call_id"]:
            chat_msg["tool_call_id"] = m["tool_call_id"]
        out.append(chat_msg)
    return {"model": "stopbench-1", "messages": out, "tools": [], "stream": True}


class LogBuilder:
    """Writes a contract-v1 log line by line; ``seq`` is assigned unless given."""

    def __init__(self, clock: Clock, session_id: str = "s-test", **header: Any):
        self.clock = clock
        self.header = {"format": "contract-log", "version": 1, "session_id": session_id,
                       "created": "2026-11-29T16:00:00.000000Z", "cwd": "/tmp/work", "model": "stopbench-1",
                       "adapter": "inproc", "parent": None} | header
        self.lines: list[bytes] = [json.dumps(self.header).encode()]
        self.seq = 0

    def event(self, type: str, seq: int | None = None, **fields: Any) -> dict[str, Any]:
        self.seq = self.seq + 1 if seq is None else seq
        event = {"seq": self.seq, "time": "2026-11-29T16:00:01.000000Z", "mono_ns": self.clock.tick(),
                 "type": type} | fields
        self.lines.append(json.dumps(event).encode())
        return event

    def raw(self, line: bytes) -> None:
        """Append a line exactly as given (damage, a torn write)."""
        self.lines.append(line)

    def to_bytes(self, torn: bytes | None = None) -> bytes:
        data = b"".join(line + b"\n" for line in self.lines)
        return data + torn if torn is not None else data

    def read(self) -> SessionLog:
        return read_contract_v1(self.to_bytes(), path="s-test.jsonl")


class RecordsBuilder:
    """Fake-server records in the shapes of ``fake_server``'s public interface."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.records: list[dict[str, Any]] = []
        self.count = 0

    def _add(self, kind: str, **fields: Any) -> dict[str, Any]:
        record = {"kind": kind, "mono_ns": self.clock.tick(), "source": "server"} | fields
        self.records.append(record)
        return record

    def request(self, messages: list[dict], status: int = 200, error: str | None = None) -> int:
        self.count += 1
        canonical = {"model": "stopbench-1", "stream": True, "messages": messages, "tools": ["bash"],
                     "shell_tool": "bash"}
        fields: dict[str, Any] = {"request": self.count, "api": "chat", "path": "/v1/chat/completions",
                                  "headers": {"Authorization": "[redacted]"}, "body": chat(messages),
                                  "canonical": canonical, "status": status}
        if error:
            fields["error"] = error
        self._add("request", **fields)
        return self.count

    def response(self, request: int, text: str = "", tool_calls: list | None = None,
                 finish_reason: str | None = None) -> dict[str, Any]:
        calls = list(tool_calls or [])
        return self._add("response", request=request, response_index=0, text=text, tool_calls=calls,
                         finish_reason=finish_reason or ("tool_calls" if calls else "stop"))

    def chunk(self, request: int, chunk: int, text: str = "", tool_call_id: str | None = None) -> dict[str, Any]:
        fields: dict[str, Any] = {"request": request, "chunk": chunk, "text": text}
        if tool_call_id:
            fields["tool_call_id"] = tool_call_id
        return self._add("chunk", **fields)

    def stream(self, request: int, pieces: list[str], complete: bool = True) -> None:
        """Chunks carrying ``pieces``, then the end of the stream."""
        for k, piece in enumerate(pieces, start=1):
            self.chunk(request, k, piece)
        self._add("stream_end", request=request, complete=complete)

    def disconnect(self, request: int, after_chunk: int) -> dict[str, Any]:
        return self._add("disconnect", request=request, after_chunk=after_chunk)

    def window(self, window: str, pids: list[int]) -> dict[str, Any]:
        tree = [{"pid": p, "ppid": 1, "pgid": pids[0], "sid": pids[0], "create_time": 1.0, "role": "node"}
                for p in pids]
        return self._add("window", window=window, pids=tree, marker=f"/tmp/{window}.done")

    def window_done(self, window: str, finished: bool) -> dict[str, Any]:
        return self._add("window_done", window=window, finished=finished)


@dataclass
class RunBuilder:
    """One hand-made task run: a clock, a log, records and the harness's own observations."""

    clock: Clock = field(default_factory=Clock)
    log: LogBuilder | None = None
    records: RecordsBuilder | None = None
    inputs: list[UserInput] = field(default_factory=list)
    stops: list[StopDelivery] = field(default_factory=list)
    kills: list[AgentKill] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)
    exits: list[ProcessExit] = field(default_factory=list)
    windows: list[WindowObservation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.log = self.log or LogBuilder(self.clock)
        self.records = self.records or RecordsBuilder(self.clock)

    def user(self, text: str, queued: bool = False) -> UserInput:
        item = UserInput(text=text, mono_ns=self.clock.tick(), queued=queued)
        self.inputs.append(item)
        return item

    def stop(self, phase: str, exercised: bool = True, source: str = "user", **fields: Any) -> StopDelivery:
        item = StopDelivery(mono_ns=self.clock.tick(), source=source, how=fields.pop("how", "api"),
                            phase=phase, exercised=exercised, **fields)
        self.stops.append(item)
        return item

    def kill(self, at: str, **fields: Any) -> AgentKill:
        item = AgentKill(mono_ns=self.clock.tick(), pid=fields.pop("pid", 4242), at=at,
                         log_bytes=fields.pop("log_bytes", self.log.to_bytes()), **fields)
        self.kills.append(item)
        return item

    def restart(self, damage: str | None = None, bytes_before: bytes | None = None,
                bytes_after_load: bytes | None = None, damage_line: int | None = None) -> Restart:
        before = self.log.to_bytes() if bytes_before is None else bytes_before
        item = Restart(mono_ns=self.clock.tick(), bytes_before=before,
                       bytes_after_load=before if bytes_after_load is None else bytes_after_load,
                       damage=damage, damage_line=damage_line)
        self.restarts.append(item)
        return item

    def exit(self, expect: str, returncode: int | None, role: str = "run", **fields: Any) -> ProcessExit:
        started = fields.pop("started_ns", self.clock.tick())
        item = ProcessExit(pid=fields.pop("pid", 4343), role=role, started_ns=started,
                           ended_ns=fields.pop("ended_ns", self.clock.tick()), returncode=returncode,
                           signal=fields.pop("signal", None), expect=expect, **fields)
        self.exits.append(item)
        return item

    def observation(self, **overrides: Any) -> Observation:
        obs = Observation(
            task="hand-made", agent="test-agent", adapter="inproc", driver="inproc", api_key=CANARY,
            records=tuple(self.records.records), inputs=tuple(self.inputs), stops=tuple(self.stops),
            kills=tuple(self.kills), restarts=tuple(self.restarts), exits=tuple(self.exits),
            windows=tuple(self.windows), log=self.log.read(), log_path="s-test.jsonl",
        )
        return replace(obs, **overrides)
