"""JSON-RPC 2.0 with an ACP agent over its stdin and stdout, one message per line, every
message both ways kept as evidence.

The client is written here, on asyncio pipes, not taken from an ACP SDK, on purpose: the
harness keeps every byte both ways with its monotonic time (taken before a write, on a
read) as evidence, and must go on recording when the agent breaks the protocol — a line
that is not JSON, an answer to no request, an advertised method answering -32601, a prompt
that never resolves. An SDK would validate such messages away or raise; here each is kept
in the transcript, noted as a protocol problem, and the step that waited reports it.

This module is the connection: framing, the transcript, request ids matched to responses,
an answer's result checked against what the agent advertised, and the life of one agent
process. What the messages mean for the turns is ``harness.drivers.acp_turns``; the steps are
the driver's (``harness.drivers.acp``).
"""

from __future__ import annotations

import asyncio
import codecs
import json
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.containment.procs import ExitStamp, signal_group, spawn
from harness.drivers.base import DriverError
from harness.drivers.output import OutputBuffer, pump
from harness.model import ProcessExit

METHOD_NOT_FOUND = -32601
CLOSE_GRACE_S = 5.0  # failsafe: an agent that does not end once its stdin is closed is killed after this
TRANSCRIPT_KEPT = 20000  # messages kept in the evidence (the first ones, then a count of the rest)
# Methods whose answer carries nothing the client needs: a null result (JSON-RPC's, not ACP's
# empty object) is noted and taken.
NULL_RESULT_TAKEN = frozenset({"session/load", "session/resume", "session/close"})

Answer = tuple[int, dict[str, Any]]  # (when the response was read, the response)


@dataclass
class AgentProcess:
    """One agent process and the JSON-RPC state of its connection."""

    proc: asyncio.subprocess.Process
    role: str
    argv: tuple[str, ...]
    started_ns: int
    stamp: ExitStamp
    stderr: OutputBuffer
    pending: dict[int, asyncio.Future[Answer]] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    # What the client expected of it: to go on serving, to end once it was "ended" (stdin
    # closed), or "killed". Never a turn's outcome: a long-lived ACP server's exit code tells
    # nothing of its turns (C8 judges none).
    expect: str = "serving"
    exit: ProcessExit | None = None
    closed: asyncio.Event = field(default_factory=asyncio.Event)  # its stdout ended

    async def reap(self) -> ProcessExit:
        """Wait for the process's exit; its ``ProcessExit``, made once."""
        if self.exit is not None:
            return self.exit
        returncode = await self.proc.wait()
        ended_ns = self.stamp.ns or time.monotonic_ns()
        self.stamp.close()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.exit = ProcessExit(
            pid=self.proc.pid, role=self.role, started_ns=self.started_ns, ended_ns=ended_ns,
            returncode=returncode if returncode >= 0 else None, signal=-returncode if returncode < 0 else None,
            expect=self.expect, stderr_tail=self.stderr.text[-2000:], argv=self.argv)
        return self.exit

    async def end(self) -> None:
        """Close its stdin (an ACP agent's cue to exit), then, past a failsafe, SIGKILL its
        group; returns once it has exited."""
        if self.expect == "serving":
            self.expect = "ended"
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), CLOSE_GRACE_S)
        except TimeoutError:
            signal_group(self.proc.pid, signal.SIGKILL)


class AcpConnection:
    """The client's side of JSON-RPC with the agent's processes, one after another: every
    message both ways (``messages``), where the agent broke the protocol (``problems``),
    request ids unique across processes, and the capabilities the last ``initialize``
    answered (``agent_capabilities``). What the agent sends is handed on: its requests to
    ``on_request`` (which answers them), its notifications to ``on_notification``, and the id
    of each response matched to a request to ``on_response``."""

    def __init__(self, on_request: Callable[[AgentProcess, dict[str, Any], str, int], None],
                 on_notification: Callable[[str, Any, int], None], on_response: Callable[[int], None]):
        self.messages: list[dict[str, Any]] = []  # every message both ways: {dir, mono_ns, line}
        self.problems: list[dict[str, Any]] = []  # where the agent broke the protocol
        self.last_id = 0
        self.agent_capabilities: dict[str, Any] = {}
        self._on_request, self._on_notification, self._on_response = on_request, on_notification, on_response

    def text(self) -> list[str]:
        """The messages both ways, one a line (``>`` sent, ``<`` received)."""
        return [f"{m['mono_ns']} {'>' if m['dir'] == 'sent' else '<'} {m['line']}" for m in self.messages]

    def evidence(self) -> dict[str, Any]:
        """The transcript as the run's evidence: each message with its monotonic time and
        direction, and every protocol problem noted."""
        kept = self.messages[:TRANSCRIPT_KEPT]
        record: dict[str, Any] = {"messages": kept, "problems": list(self.problems),
                                  "agent_capabilities": self.agent_capabilities}
        if len(self.messages) > len(kept):
            record["not_kept"] = len(self.messages) - len(kept)
        return record

    async def spawn(self, argv: list[str], role: str, *, env: Mapping[str, str], cwd: str,
                    preexec: Callable[[], None] | None, watch: str) -> AgentProcess:
        """Start an agent process (``procs.spawn``: its own process group) and read it: its
        stdout as messages, its stderr into a buffer that watches for ``watch`` (the run's key)."""
        proc = await spawn(argv, env=env, cwd=cwd, preexec=preexec, stdin=asyncio.subprocess.PIPE)
        agent = AgentProcess(proc=proc, role=role, argv=tuple(argv), started_ns=time.monotonic_ns(),
                             stamp=ExitStamp(proc.pid), stderr=OutputBuffer((watch,)))
        assert proc.stdout is not None and proc.stderr is not None
        agent.tasks = [asyncio.create_task(self.read(agent, proc.stdout)),
                       asyncio.create_task(pump(proc.stderr, agent.stderr))]
        return agent

    def result_of(self, method: str, answer: dict[str, Any]) -> dict[str, Any]:
        """A response's result; an error response (or no result object) is a ``DriverError``
        naming the method, noted too when the agent had advertised the method."""
        error = answer.get("error")
        if isinstance(error, dict):
            what = f"{method} answered error {error_text(error)}"
            if error.get("code") == METHOD_NOT_FOUND and self.advertised(method):
                what += " although the agent advertised it"
            self.problem(what)
            raise DriverError(what)
        result = answer.get("result")
        if result is None and "result" in answer and method in NULL_RESULT_TAKEN:
            self.problem(f"{method} answered null, not an object (taken as an empty one)")
            return {}
        if not isinstance(result, dict):
            self.problem(f"{method} answered without a result object", answer=answer)
            raise DriverError(f"{method} answered without a result object")
        return result

    def advertised(self, method: str) -> bool:
        caps = self.agent_capabilities
        session = json_object(caps.get("sessionCapabilities"))
        # An omitted or null capability is not advertised; {} (or any object) is.
        return {"session/load": bool(caps.get("loadSession")),
                "session/resume": session.get("resume") is not None,
                "session/close": session.get("close") is not None}.get(method, False)

    def problem(self, what: str, **detail: Any) -> None:
        self.problems.append({"mono_ns": time.monotonic_ns(), "problem": what, **detail})

    def write(self, agent: AgentProcess, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        self.messages.append({"dir": "sent", "mono_ns": time.monotonic_ns(), "line": line})
        stdin = agent.proc.stdin
        if stdin is None or stdin.is_closing():
            self.problem(f"could not send {message.get('method') or 'a response'}: the agent's stdin is closed")
            return
        stdin.write(line.encode("utf-8") + b"\n")

    def request(self, agent: AgentProcess, method: str, params: dict[str, Any]) -> asyncio.Future[Answer]:
        """Send a request (its id is ``last_id`` then); the future of its response. A response
        that is an error is its result as it is; the agent's output ending first, a ``DriverError``."""
        self.last_id += 1
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        agent.pending[self.last_id] = future
        self.write(agent, {"jsonrpc": "2.0", "id": self.last_id, "method": method, "params": params})
        return future

    async def read(self, agent: AgentProcess, stream: asyncio.StreamReader) -> None:
        """Every line the agent writes, recorded as read, then handled; malformed ones noted."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        partial = ""
        try:
            while chunk := await stream.read(65536):
                read_ns = time.monotonic_ns()
                lines = (partial + decoder.decode(chunk)).split("\n")
                partial = lines.pop()
                for line in lines:
                    if line.strip():
                        self._received(agent, line.rstrip("\r"), read_ns)
            if partial.strip():
                self._received(agent, partial, time.monotonic_ns(), note="an unterminated last line")
        finally:
            agent.closed.set()
            for future in agent.pending.values():
                if not future.done():
                    future.set_exception(DriverError(f"the agent's output ended before it answered; stderr: "
                                                     f"{agent.stderr.tail()!r}"))
                    future.exception()  # whoever awaits it still gets it; nobody has to
            agent.pending.clear()

    def _received(self, agent: AgentProcess, line: str, read_ns: int, note: str | None = None) -> None:
        self.messages.append({"dir": "received", "mono_ns": read_ns, "line": line})
        if note:
            self.problem(note, line=line)
        try:
            message = json.loads(line)
        except ValueError:
            self.problem("a line that is not JSON", line=line)
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.problem("a message that is not JSON-RPC 2.0", line=line)
            return
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            self._on_request(agent, message, method, read_ns)
        elif isinstance(method, str):
            self._on_notification(method, message.get("params"), read_ns)
        elif "id" in message and ("result" in message or "error" in message):
            future = agent.pending.pop(message["id"], None) if isinstance(message["id"], int) else None
            if future is None:
                self.problem("a response to no request of the client", line=line)
            elif not future.done():
                future.set_result((read_ns, message))
                self._on_response(message["id"])
        else:
            self.problem("neither a request, a notification nor a response", line=line)


def json_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: what an agent sent may be anything."""
    return value if isinstance(value, dict) else {}


def error_text(error: dict[str, Any]) -> str:
    """A JSON-RPC error as the agent gave it: code, message and any data (its details)."""
    data = error.get("data")
    return f"{error.get('code')}: {error.get('message')}" + (f" ({json.dumps(data)[:300]})" if data else "")
