"""Factories for hand-made runs: a contract-v1 log, fake-server records and an Observation.

The checkers' tests build good and violating runs with these, and the runner's tests can
build observations the same way. Everything shares one fake monotonic clock so that the
order of log events, records, stops and kills is explicit in the test that builds them.
The store is produced as bytes and every capture (after a kill, before and after a restart,
the final store) goes through the profile's reader — by default the real contract-v1 reader,
taken from the readers' registry — so a hand-made log is held to its format exactly as an
agent's is. A test may give another reader and another store (``reader=``, ``store=``).
It lives with the tests: it builds observations for them, and no part of the harness imports it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from fake_server.records import Record
from harness.model import (
    AgentFailure,
    AgentKill,
    CanaryHit,
    Conventions,
    LogCapture,
    Observation,
    ProcessExit,
    Restart,
    SessionLog,
    Settlement,
    Snapshot,
    StopDelivery,
    UserInput,
    WindowObservation,
)
from harness.readers import READERS, Reader, parse_capture

CANARY = "sk-stopbench-canary-0f3a9c"
CONTRACT_V1: Reader = READERS["contract-v1"]
LOG_PATH = "s-test.jsonl"


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


def msg(role: str, text: str = "", tool_calls: list[dict[str, Any]] | None = None,
        tool_call_id: str | None = None) -> dict[str, Any]:
    """One canonical message."""
    return {"role": role, "text": text, "tool_calls": list(tool_calls or []), "tool_call_id": tool_call_id}


def chat(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A Chat Completions request envelope, as a contract-v1 ``model_request`` event holds it."""
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


class Store(Protocol):
    """A hand-made session store: whatever its format, it is bytes at any moment."""

    def to_bytes(self) -> bytes: ...


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

    def read(self, reader: Reader = CONTRACT_V1) -> SessionLog:
        return reader.parse(Snapshot(reader=reader.name, path=LOG_PATH, data=self.to_bytes(), mono_ns=self.clock.now))


class RecordsBuilder:
    """Fake-server records, typed as the server writes them (``fake_server.records``): each is
    built from its JSON form, so a hand-made record is held to the format exactly as the
    server's are."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.records: list[Record] = []
        self.count = 0

    def _add(self, kind: str, **fields: Any) -> Record:
        record = Record.from_json({"kind": kind, "mono_ns": self.clock.tick(), "source": "server"} | fields)
        self.records.append(record)
        return record

    def request(self, messages: list[dict[str, Any]], status: int = 200, error: str | None = None,
                parsed: bool | None = None) -> int:
        """A request record; a 400 for an unbalanced history is refused unread (no canonical
        messages), as the strict server does, unless ``parsed`` says otherwise."""
        self.count += 1
        canonical = {"model": "stopbench-1", "stream": True, "messages": messages, "tools": ["bash"],
                     "shell_tool": "bash"}
        fields: dict[str, Any] = {"request": self.count, "api": "chat", "path": "/v1/chat/completions",
                                  "headers": {"Authorization": "[redacted]"}, "body": chat(messages), "status": status}
        if parsed if parsed is not None else status < 400:
            fields["canonical"] = canonical
        if error:
            fields["error"] = error
        self._add("request", **fields)
        if error:
            self._add("error", request=self.count, problem=error)
        return self.count

    def response(self, request: int, text: str = "", tool_calls: list[dict[str, Any]] | None = None,
                 finish_reason: str | None = None) -> Record:
        calls = list(tool_calls or [])
        return self._add("response", request=request, response_index=0, text=text, tool_calls=calls,
                         finish_reason=finish_reason or ("tool_calls" if calls else "stop"))

    def chunk(self, request: int, chunk: int, text: str = "", tool_call_id: str | None = None) -> Record:
        fields: dict[str, Any] = {"request": request, "chunk": chunk, "text": text}
        if tool_call_id:
            fields["tool_call_id"] = tool_call_id
        return self._add("chunk", **fields)

    def stream(self, request: int, pieces: list[str], complete: bool = True) -> None:
        """Chunks carrying ``pieces``, then the end of the stream."""
        for k, piece in enumerate(pieces, start=1):
            self.chunk(request, k, piece)
        self._add("stream_end", request=request, complete=complete)

    def disconnect(self, request: int, after_chunk: int) -> Record:
        return self._add("disconnect", request=request, after_chunk=after_chunk)

    def window(self, window: str, pids: list[int]) -> Record:
        tree = [{"pid": p, "ppid": 1, "pgid": pids[0], "sid": pids[0], "create_time": 1.0, "role": "node"}
                for p in pids]
        return self._add("window", window=window, pids=tree, marker=f"/tmp/{window}.done")

    def window_done(self, window: str, finished: bool) -> Record:
        return self._add("window_done", window=window, finished=finished)


class _Unset:
    """The store as it is now (the default for every capture)."""


NOW = _Unset()
UNOBSERVED = None  # a capture that was not taken


class RunBuilder:
    """One hand-made task run: a clock, a store, records and the harness's own observations."""

    def __init__(self, clock: Clock | None = None, log: LogBuilder | None = None, reader: Reader = CONTRACT_V1,
                 store: Store | None = None, log_path: str = LOG_PATH):
        self.clock = clock or Clock()
        self.log = log or LogBuilder(self.clock)
        self.records = RecordsBuilder(self.clock)
        self.reader = reader
        self.store = store  # the store the reader reads; the contract-v1 log unless given
        self.log_path = log_path
        self.inputs: list[UserInput] = []
        self.stops: list[StopDelivery] = []
        self.settlements: list[Settlement] = []
        self.kills: list[AgentKill] = []
        self.restarts: list[Restart] = []
        self.exits: list[ProcessExit] = []
        self.windows: list[WindowObservation] = []
        self.canary_hits: list[CanaryHit] = []
        self.conventions = Conventions()
        self.failure: AgentFailure | None = None

    # --- the store, through the reader -------------------------------------------------

    def store_bytes(self) -> bytes:
        return (self.store or self.log).to_bytes()

    def capture(self, moment: str, data: bytes | _Unset | None = NOW) -> LogCapture:
        """The store now (or ``data``), parsed by the reader; None data: there was no store at
        the log path."""
        if data is None:
            return LogCapture(moment=moment, snapshot=None, absent_from=self.log_path)
        snapshot = Snapshot(reader=self.reader.name, path=self.log_path,
                            data=self.store_bytes() if isinstance(data, _Unset) else data, mono_ns=self.clock.tick())
        return parse_capture(self.reader, snapshot, moment)

    # --- what the harness did and saw ---------------------------------------------------

    def user(self, text: str, queued: bool = False) -> UserInput:
        item = UserInput(text=text, mono_ns=self.clock.tick(), queued=queued)
        self.inputs.append(item)
        return item

    def stop(self, phase: str, exercised: bool = True, source: str = "user", **fields: Any) -> StopDelivery:
        item = StopDelivery(mono_ns=self.clock.tick(), source=source, how=fields.pop("how", "api"),
                            phase=phase, exercised=exercised, **fields)
        self.stops.append(item)
        return item

    def settle(self, reason: str | None, source: str | None = None, how: str | None = None,
               pid: int | None = None) -> Settlement:
        """How the driver saw the turn end (the terminal's line, the API's event, an exit)."""
        shown = how or f"screen: [turn ended: {reason}{f' ({source})' if source else ''}]"
        item = Settlement(mono_ns=self.clock.tick(), reason=reason, source=source, how=shown, pid=pid)
        self.settlements.append(item)
        return item

    def kill(self, at: str, log_bytes: bytes | _Unset | None = NOW, captured: bool = True,
             **fields: Any) -> AgentKill:
        """A SIGKILL at a beacon; the store is captured right after (as it is now, or as
        ``log_bytes``), unless ``captured`` is False."""
        number = len(self.kills) + 1
        ns = self.clock.tick()
        log = self.capture(f"after kill {number}", log_bytes) if captured else None
        item = AgentKill(mono_ns=ns, pid=fields.pop("pid", 4242), at=at, log=log, **fields)
        self.kills.append(item)
        return item

    def restart(self, damage: str | None = None, before: bytes | _Unset | None = NOW,
                after_load: bytes | _Unset | None = NOW, damage_line: int | None = None,
                damage_where: str | None = None) -> Restart:
        """The agent started again: the store before (as it is now, or ``before``) and once it
        had loaded (the same as before, unless ``after_load`` says otherwise; None: not taken)."""
        number = len(self.restarts) + 1
        ns = self.clock.tick()
        first = self.capture(f"before restart {number}", before)
        if isinstance(after_load, _Unset):
            loaded = first.snapshot.data if first.snapshot else None
            second = self.capture(f"after restart {number} loaded", loaded) if loaded is not None else None
        else:
            second = self.capture(f"after restart {number} loaded", after_load) if after_load is not None else None
        item = Restart(mono_ns=ns, before=first, after_load=second, damage=damage, damage_line=damage_line,
                       damage_where=damage_where)
        self.restarts.append(item)
        return item

    def exit(self, expect: str, returncode: int | None, role: str = "run", **fields: Any) -> ProcessExit:
        started = fields.pop("started_ns", self.clock.tick())
        item = ProcessExit(pid=fields.pop("pid", 4343), role=role, started_ns=started,
                           ended_ns=fields.pop("ended_ns", self.clock.tick()), returncode=returncode,
                           signal=fields.pop("signal", None), expect=expect, **fields)
        self.exits.append(item)
        return item

    def canary(self, where: str, line: int, excerpt: str, profile_file: bool = False) -> CanaryHit:
        """The runner's file scan found the canary key."""
        item = CanaryHit(where=where, line=line, excerpt=excerpt, profile_file=profile_file)
        self.canary_hits.append(item)
        return item

    def fail(self, awaited: str, what: str, *, after_restart: bool = False, exit: ProcessExit | None = None,
             records: int = 3, step: str = "step 9 (wait)", kind: str = "wait") -> AgentFailure:
        """The run ended early because of the agent."""
        self.failure = AgentFailure(step=step, awaited=awaited, what=what, after_restart=after_restart, exit=exit,
                                    records=tuple(self.records.records[-records:]), kind=kind)
        return self.failure

    def observation(self, *, black_box: bool = False, **overrides: Any) -> Observation:
        """The run as the runner would assemble it; ``black_box``: for an agent with no reader."""
        final = self.capture("final")
        obs = Observation(
            task="hand-made", agent="test-agent", adapter="inproc", driver="inproc", api_key=CANARY,
            records=tuple(self.records.records), inputs=tuple(self.inputs), stops=tuple(self.stops),
            settlements=tuple(self.settlements), kills=tuple(self.kills), restarts=tuple(self.restarts),
            exits=tuple(self.exits), windows=tuple(self.windows), log_format=self.reader, log=final.log,
            log_snapshot=final.snapshot,
            log_error=final.error, log_version_unknown=final.version_unknown, log_path=self.log_path,
            canary_hits=tuple(self.canary_hits),
            failure=self.failure, conventions=self.conventions,
        )
        if black_box:
            obs = without_reader(obs)
        return replace(obs, **overrides)


def without_reader(obs: Observation) -> Observation:
    """The same run for an agent whose profile has no reader: no log, no captures."""
    return replace(obs, log_format=None, log=None, log_snapshot=None, log_error=None, log_version_unknown=False,
                   kills=tuple(dataclasses.replace(k, log=None) for k in obs.kills),
                   restarts=tuple(dataclasses.replace(r, before=None, after_load=None) for r in obs.restarts))


def with_conventions(obs: Observation, **declared: Any) -> Observation:
    """The same run under a profile that declares its own conventions."""
    exit_codes: Mapping[str, int] = declared.pop("exit_codes", {})
    return replace(obs, conventions=Conventions(exit_codes=exit_codes, **declared))
