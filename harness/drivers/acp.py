"""The ACP driver: the harness as an Agent Client Protocol client, the way an editor drives
a coding agent — JSON-RPC 2.0, one message per line, over the agent's stdin and stdout.

The agent is started as the headless driver starts it (``procs.spawn``: the run's
containment, environment and fresh HOME, its own process group), then ``initialize`` and
``session/new`` (the session id is the one ``session/new`` answers). ``send`` is
``session/prompt``; the turn settles when that request's response arrives, its
``stopReason`` the settlement (an error response settles ``error``). Stop is the profile's
cancel (``session/cancel``, or ``$/cancel_request`` naming the prompt). A kill is SIGKILL to
the agent's process group; ``restart`` starts a new process, ``initialize``, and takes the
session up again with ``session/load`` (or ``session/resume``): the updates a load replays
are the agent's durable history as any client sees it, kept as a file the ``acp-replay``
reader reads (``log_path``). ``close`` ends the session (``session/close`` when advertised)
and the process, and loads the session once more in a fresh process, so the final store is
what the agent kept of the whole run.

The client is written here, on asyncio pipes, not taken from an ACP SDK, on purpose: the
harness keeps every byte both ways with its monotonic time (taken before a write, on a
read) as evidence, and must go on recording when the agent breaks the protocol — a line
that is not JSON, an answer to no request, an advertised method answering -32601, a prompt
that never resolves. An SDK would validate such messages away or raise; here each is kept
in the transcript, noted as a protocol problem, and the step that waited reports it.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.containment.procs import ExitStamp, ProcRef, kill_tree, signal_group, spawn
from harness.drivers.base import AgentContext, DriverBase, DriverError, Unsupported, values_for
from harness.drivers.output import OutputBuffer, pump
from harness.model import ProcessExit, Settlement, StopDelivery, TurnUpdate, UserInput
from harness.model.history import History

PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "stopbench", "version": "1"}
METHOD_NOT_FOUND = -32601
# ACP's stopReason → the contract's settlement reason.
STOP_REASONS = {"end_turn": "completed", "cancelled": "aborted", "max_tokens": "max_tokens",
                "max_turn_requests": "error", "refusal": "blocked"}
# The updates that are a turn's own content; the others (available commands, the mode, the
# session's title or usage) are the session's, and may come at any time.
TURN_CONTENT = frozenset({"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"})
CLOSE_GRACE_S = 5.0  # failsafe: an agent that does not end once its stdin is closed is killed after this
# Methods whose answer carries nothing the client needs: a null result (JSON-RPC's, not ACP's
# empty object) is noted and taken.
NULL_RESULT_TAKEN = frozenset({"session/load", "session/resume", "session/close"})
# A load's replayed updates: in a folder of the run's own beside the agent's sessions folder,
# where the agent never looks (nor a native reader's glob).
REPLAY_DIR, REPLAY_NAME = "acp-replays", "replay-{n}.jsonl"
TRANSCRIPT_KEPT = 20000  # messages kept in the evidence (the first ones, then a count of the rest)


@dataclass
class _Turn:
    """One ``session/prompt``: its request id, its response when it came, what streamed."""

    number: int
    request_id: int
    response: asyncio.Future[tuple[int, dict[str, Any]]]
    cancelled: bool = False
    ended: bool = False
    text: list[str] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)  # tool call id → its last status


@dataclass
class _Agent:
    """One agent process and the JSON-RPC state of its connection."""

    proc: asyncio.subprocess.Process
    role: str
    argv: tuple[str, ...]
    started_ns: int
    stamp: ExitStamp
    stderr: OutputBuffer
    pending: dict[int, asyncio.Future[tuple[int, dict[str, Any]]]] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    # What the client expected of it: to go on serving, to end once it was "ended" (stdin
    # closed), or "killed". Never a turn's outcome: a long-lived ACP server's exit code tells
    # nothing of its turns (C8 judges none).
    expect: str = "serving"
    exit: ProcessExit | None = None
    closed: asyncio.Event = field(default_factory=asyncio.Event)  # its stdout ended


class AcpDriver(DriverBase):
    name = "acp"
    output_names = ("the ACP transcript", "stderr")

    def __init__(self, ctx: AgentContext, history: History):
        super().__init__(ctx, history)
        if ctx.profile.acp is None:
            raise Unsupported(f"profile {ctx.profile.name!r} has no [acp] command")
        self.spec = ctx.profile.acp
        self._agent: _Agent | None = None
        self._agents: list[_Agent] = []
        self._refs: list[ProcRef] = []
        self._next_id = 0
        self.messages: list[dict[str, Any]] = []  # every message both ways: {dir, mono_ns, line}
        self.problems: list[dict[str, Any]] = []  # where the agent broke the protocol
        self.agent_capabilities: dict[str, Any] = {}
        self._turns: list[_Turn] = []
        self._replay: list[dict[str, Any]] | None = None  # the updates of a load in progress
        self._replays = 0

    # -- observation -------------------------------------------------------------------------
    def transcript(self) -> str:
        """The messages both ways, one a line (``>`` sent, ``<`` received), then stderr."""
        lines = [f"{m['mono_ns']} {'>' if m['dir'] == 'sent' else '<'} {m['line']}" for m in self.messages]
        return "\n".join(lines + [a.stderr.text for a in self._agents])

    def protocol(self) -> dict[str, Any]:
        """The ACP transcript as the run's evidence: each message with its monotonic time and
        direction, and every protocol problem noted."""
        kept = self.messages[:TRANSCRIPT_KEPT]
        record: dict[str, Any] = {"messages": kept, "problems": list(self.problems),
                                  "agent_capabilities": self.agent_capabilities}
        if len(self.messages) > len(kept):
            record["not_kept"] = len(self.messages) - len(kept)
        return record

    def processes(self) -> list[ProcRef]:
        return list(self._refs)

    def turn_running(self) -> bool:
        turn = self._turns[-1] if self._turns else None
        return turn is not None and not turn.ended and self._alive()

    def text_since_input(self) -> str:
        return "".join(self._turns[-1].text) if self._turns else ""

    @property
    def log_path(self) -> str | None:
        """The replay of the latest load; None between a kill and the next load (what the
        killed agent kept is known only once a new process has loaded it). With ``reader =
        "native"``, the agent's own store, found as the profile says (``[session]``)."""
        return self._log_path if self._replayed else super().log_path

    @property
    def store_glob(self) -> str | None:
        return None if self._replayed else super().store_glob  # a replay is nowhere on disk before a load

    @property
    def _replayed(self) -> bool:
        return self.spec.reader == "acp-replay"

    def _alive(self) -> bool:
        return self._agent is not None and self._agent.proc.returncode is None and not self._agent.closed.is_set()

    def _agent_pid(self) -> int | None:
        return self._agent.proc.pid if self._agent is not None and self._agent.proc.returncode is None else None

    def _discover(self) -> None:
        """The session id is the one ``session/new`` answered; nothing else names it."""

    def fit_record(self) -> dict[str, Any]:
        """What the driver noted; the profile's ``[session]`` rules name no session here
        (``session/new`` does), so they are not reported as matched or missed."""
        return self.fit.to_json()

    def _outputs(self) -> tuple[str, str]:
        return "", "".join(a.stderr.text for a in self._agents)

    # -- the connection ----------------------------------------------------------------------
    async def _spawn(self, role: str) -> _Agent:
        argv = self.spec.render(values_for(self.ctx))
        proc = await spawn(argv, env=self.ctx.env, cwd=str(self.ctx.cwd), preexec=self.ctx.preexec,
                           stdin=asyncio.subprocess.PIPE)
        agent = _Agent(proc=proc, role=role, argv=tuple(argv), started_ns=time.monotonic_ns(),
                       stamp=ExitStamp(proc.pid), stderr=OutputBuffer((str(self.ctx.values.get("api_key") or ""),)))
        self._refs.append(ProcRef.of(proc.pid, role))
        self._agents.append(agent)
        self._agent = agent
        assert proc.stdout is not None and proc.stderr is not None
        agent.tasks = [asyncio.create_task(self._read(agent, proc.stdout)),
                       asyncio.create_task(pump(proc.stderr, agent.stderr))]
        return agent

    def _write(self, agent: _Agent, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        self.messages.append({"dir": "sent", "mono_ns": time.monotonic_ns(), "line": line})
        stdin = agent.proc.stdin
        if stdin is None or stdin.is_closing():
            self._problem(f"could not send {message.get('method') or 'a response'}: the agent's stdin is closed")
            return
        stdin.write(line.encode("utf-8") + b"\n")

    async def _request(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Send a request and wait for its response: (when it was read, the message). A
        response that is an error is returned as it is; the agent's output ending first is a
        ``DriverError``."""
        future = self._send_request(method, params)
        return await future

    def _send_request(self, method: str, params: dict[str, Any]) -> asyncio.Future[tuple[int, dict[str, Any]]]:
        agent = self._live()
        self._next_id += 1
        future: asyncio.Future[tuple[int, dict[str, Any]]] = asyncio.get_running_loop().create_future()
        agent.pending[self._next_id] = future
        self._write(agent, {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return future

    def _live(self) -> _Agent:
        if self._agent is None or not self._alive():
            raise DriverError("the ACP agent is not running")
        return self._agent

    async def _read(self, agent: _Agent, stream: asyncio.StreamReader) -> None:
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

    def _received(self, agent: _Agent, line: str, read_ns: int, note: str | None = None) -> None:
        self.messages.append({"dir": "received", "mono_ns": read_ns, "line": line})
        if note:
            self._problem(note, line=line)
        try:
            message = json.loads(line)
        except ValueError:
            self._problem("a line that is not JSON", line=line)
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._problem("a message that is not JSON-RPC 2.0", line=line)
            return
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            self._answer_request(agent, message, method)
        elif isinstance(method, str):
            if method == "session/update":
                self._on_update(message.get("params"), read_ns)
        elif "id" in message and ("result" in message or "error" in message):
            future = agent.pending.pop(message["id"], None) if isinstance(message["id"], int) else None
            if future is None:
                self._problem("a response to no request of the client", line=line)
            elif not future.done():
                future.set_result((read_ns, message))
                for turn in self._turns:  # a prompt's answer ends its turn: what comes later is after it
                    if turn.request_id == message["id"]:
                        turn.ended = True
        else:
            self._problem("neither a request, a notification nor a response", line=line)

    def _problem(self, what: str, **detail: Any) -> None:
        self.problems.append({"mono_ns": time.monotonic_ns(), "problem": what, **detail})

    def _answer_request(self, agent: _Agent, message: dict[str, Any], method: str) -> None:
        """The agent's requests to the client. A permission is answered as the profile says —
        ``cancelled`` once the turn it is for was stopped, as the protocol requires; the
        client offers no file system or terminal, so anything else is ``-32601``."""
        if method != "session/request_permission":
            self._write(agent, {"jsonrpc": "2.0", "id": message["id"],
                                "error": {"code": METHOD_NOT_FOUND, "message": f"{method} is not offered"}})
            return
        turn = self._turns[-1] if self._turns else None
        options = [o for o in _table(message.get("params")).get("options", []) if isinstance(o, dict)]
        wanted = ("allow_once", "allow_always") if self.spec.permission == "allow" else ("reject_once", "reject_always")
        chosen = next((o.get("optionId") for kind in wanted for o in options if o.get("kind") == kind), None)
        if turn is None or turn.cancelled or turn.ended or chosen is None:
            outcome: dict[str, Any] = {"outcome": "cancelled"}
        else:
            outcome = {"outcome": "selected", "optionId": chosen}
        self._write(agent, {"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}})

    def _on_update(self, params: Any, read_ns: int) -> None:
        """A ``session/update``: into the replay of a load in progress, else into the turn it
        belongs to — text, tool call statuses, and anything sent after the turn settled."""
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(update, dict):
            self._problem("a session/update without an update", params=params)
            return
        if self._replay is not None:
            self._replay.append(update)
            return
        turn = self._turns[-1] if self._turns else None
        kind = str(update.get("sessionUpdate"))
        if turn is None or kind not in TURN_CONTENT:  # the session's commands, mode, title: no turn's
            return
        how = f"ACP transcript: session/update {kind}, message {len(self.messages)}"
        if kind == "agent_message_chunk" and not turn.ended:
            content = update.get("content")
            if isinstance(content, dict) and isinstance(content.get("text"), str):
                turn.text.append(content["text"])
        if kind in ("tool_call", "tool_call_update") and isinstance(update.get("toolCallId"), str):
            call_id = update["toolCallId"]
            status = update.get("status") or turn.calls.get(call_id) or ("pending" if kind == "tool_call" else None)
            if status is not None and (status != turn.calls.get(call_id) or turn.ended):
                turn.calls[call_id] = str(status)
                self.history.record(TurnUpdate(mono_ns=read_ns, turn=turn.number, kind="tool_call", how=how,
                                               call_id=call_id, status=str(status), after_end=turn.ended))
                return
        if turn.ended:
            self.history.record(TurnUpdate(mono_ns=read_ns, turn=turn.number, kind=kind, how=how, after_end=True))

    async def _connect(self, role: str) -> _Agent:
        """A new agent process, initialized; one that answers ``initialize`` with an error is ended."""
        agent = await self._spawn(role)
        params = {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": dict(self.spec.client_capabilities),
                  "clientInfo": CLIENT_INFO}
        _, answer = await self._request("initialize", params)
        try:
            result = self._result_of("initialize", answer)
        except DriverError:
            await self._end(agent)
            raise
        caps = result.get("agentCapabilities")
        self.agent_capabilities = caps if isinstance(caps, dict) else {}
        return agent

    def _result_of(self, method: str, answer: dict[str, Any]) -> dict[str, Any]:
        """A response's result; an error response (or no result object) is a ``DriverError``
        naming the method, noted too when the agent had advertised the method."""
        error = answer.get("error")
        if isinstance(error, dict):
            what = f"{method} answered error {_said(error)}"
            if error.get("code") == METHOD_NOT_FOUND and self._advertised(method):
                what += " although the agent advertised it"
            self._problem(what)
            raise DriverError(what)
        result = answer.get("result")
        if result is None and "result" in answer and method in NULL_RESULT_TAKEN:
            self._problem(f"{method} answered null, not an object (taken as an empty one)")
            return {}
        if not isinstance(result, dict):
            self._problem(f"{method} answered without a result object", answer=answer)
            raise DriverError(f"{method} answered without a result object")
        return result

    def _advertised(self, method: str) -> bool:
        caps = self.agent_capabilities
        session = _table(caps.get("sessionCapabilities"))
        # An omitted or null capability is not advertised; {} (or any object) is.
        return {"session/load": bool(caps.get("loadSession")),
                "session/resume": session.get("resume") is not None,
                "session/close": session.get("close") is not None}.get(method, False)

    # -- steps -------------------------------------------------------------------------------
    async def send(self, text: str, *, timeout_s: float | None = None, expect: str = "completed") -> None:
        if timeout_s is not None:
            raise Unsupported("ACP has no per-turn timeout")
        if self.turn_running():
            raise DriverError("a turn is still running; ACP takes one prompt at a time")
        if self._agent is None:
            await self._open_session()
        if self._session_id is None:
            raise DriverError("no ACP session to prompt")
        self._record_input(text)
        future = self._send_request("session/prompt", {"sessionId": self._session_id,
                                                       "prompt": [{"type": "text", "text": text}]})
        self._turns.append(_Turn(number=len(self._turns) + 1, request_id=self._next_id, response=future))

    async def _open_session(self) -> None:
        """Start the agent, ``initialize``, ``session/new``. An error answer (an agent that
        wants authentication, say) ends the process: the step fails as the agent's, with its
        exit and stderr, never as the harness's."""
        agent = await self._connect("chat")
        try:
            _, answer = await self._request("session/new", {"cwd": str(self.ctx.cwd), "mcpServers": []})
            session_id = self._result_of("session/new", answer).get("sessionId")
            if not isinstance(session_id, str):
                self._problem("session/new answered no sessionId", answer=answer)
                raise DriverError("session/new answered no sessionId")
        except DriverError:
            await self._end(agent)
            raise
        self._session_id = session_id
        self.session_found_by = "the sessionId session/new answered (ACP)"

    async def queue(self, text: str) -> str:
        raise Unsupported("ACP has no queue: a prompt is sent once the turn before it has ended")

    async def cancel_queued(self, item_id: str) -> None:
        raise Unsupported("ACP has no queue to withdraw an item from")

    async def stop(self, source: str, *, phase: str, request: int | None, window: str | None,
                   chunks_seen: int | None = None, signal_name: str | None = None,
                   by: str = "harness") -> StopDelivery:
        if not self._turns or self._agent is None:
            raise DriverError("Stop before any turn was started")
        if signal_name:
            raise Unsupported("an ACP agent is stopped by a cancel message, not a signal")
        turn = self._turns[-1]
        running = self.turn_running()
        if self.spec.cancel == "$/cancel_request":
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": "$/cancel_request",
                                       "params": {"requestId": turn.request_id}}
        else:
            message = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": self._session_id}}
        stop_ns = time.monotonic_ns()
        if running:
            turn.cancelled = True
            self._write(self._agent, message)
        return self._record_stop(source, f"acp:{self.spec.cancel}", phase, running, stop_ns, request, window,
                                 chunks_seen=chunks_seen, by=by)

    async def settle(self) -> Settlement:
        """The prompt's response: its ``stopReason`` is how the turn ended."""
        if not self._turns:
            raise DriverError("nothing to settle: no turn was started")
        turn = self._turns[-1]
        read_ns, answer = await turn.response
        turn.ended = True
        where = f"ACP transcript: session/prompt {turn.request_id}"
        error = answer.get("error")
        if isinstance(error, dict):
            return self._record_settlement(Settlement(
                mono_ns=read_ns, reason="error", source=None, pid=self._agent_pid(),
                how=f"{where} answered error {_said(error)}"))
        stop_reason = _table(answer.get("result")).get("stopReason")
        reason = STOP_REASONS.get(str(stop_reason))
        if reason is None:
            self._problem(f"session/prompt {turn.request_id} answered stopReason {stop_reason!r}, not one of "
                          f"{', '.join(STOP_REASONS)}")
        return self._record_settlement(Settlement(mono_ns=read_ns, reason=reason, source=None,
                                                  how=f"{where} stopReason {stop_reason!r}", pid=self._agent_pid()))

    async def idle(self) -> None:
        """The current prompt was answered, or the agent's output ended."""
        if self._agent is None:
            return
        waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._agent.closed.wait())]
        if self._turns:
            waits.append(asyncio.ensure_future(asyncio.wait([self._turns[-1].response])))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def exited(self) -> ProcessExit | None:
        agent = self._agent
        if agent is None or agent.proc.returncode is None:
            return None
        return await self._reap(agent)

    async def _reap(self, agent: _Agent) -> ProcessExit:
        """Wait for the agent's exit and record it once."""
        if agent.exit is not None:
            return agent.exit
        returncode = await agent.proc.wait()
        ended_ns = agent.stamp.ns or time.monotonic_ns()
        agent.stamp.close()
        await asyncio.gather(*agent.tasks, return_exceptions=True)
        agent.exit = ProcessExit(
            pid=agent.proc.pid, role=agent.role, started_ns=agent.started_ns, ended_ns=ended_ns,
            returncode=returncode if returncode >= 0 else None, signal=-returncode if returncode < 0 else None,
            expect=agent.expect, stderr_tail=agent.stderr.text[-2000:], argv=agent.argv)
        if agent.exit not in self.history.of(ProcessExit):
            self.history.record(agent.exit)
        return agent.exit

    async def kill(self) -> tuple[int, int]:
        """SIGKILL to the agent's process group; then what it kept is read the only way ACP
        offers — a fresh process loads the session and is ended — so the store the step
        captures right after the kill is that replay."""
        agent = self._agent
        if agent is None or agent.proc.returncode is not None:
            raise DriverError("SIGKILL asked for, but the agent process had already exited")
        agent.expect = "killed"
        kill_ns = time.monotonic_ns()
        signal_group(agent.proc.pid, signal.SIGKILL)
        await self._reap(agent)
        if self._turns:
            self._turns[-1].ended = True
        if self._replayed:
            self._log_path = None
        try:
            await self._read_durable("load after kill")
        except DriverError as exc:
            self._problem(f"loading the session after the kill failed: {exc}")
        return kill_ns, agent.proc.pid

    async def _read_durable(self, role: str) -> None:
        """Load the session in a fresh process and end it: its replay becomes ``log_path``.
        Nothing to read when the agent does not advertise ``loadSession``, the profile takes
        sessions up with ``session/resume`` (which replays nothing), or the checks read the
        agent's own store (a load here could write to it behind the captures' back)."""
        if (self._session_id is None or not self._replayed or self.spec.resume_method != "session/load"
                or not self._advertised("session/load")):
            return
        agent = await self._connect(role)
        try:
            await self._take_up_session()
        finally:
            await self._end(agent)

    async def restart(self, *, expect: str = "ready", text: str = "") -> bool:
        """A new process takes the session up again: ``initialize``, then the profile's resume
        method with the same session id; the updates a load replays are kept for the reader.
        An error answer (``-32601`` included) ends the new process and is the step's failure."""
        if self._session_id is None:
            raise DriverError("restart asked for, but session/new never named a session")
        if self._alive():
            raise DriverError("restart asked for while the agent is still running")
        agent = await self._connect("resume")
        try:
            await self._take_up_session()
        except DriverError:
            await self._end(agent)
            if expect == "refused":
                return False
            raise
        if expect == "refused":  # it accepted a store it should have refused: end it, the checks judge
            await self._end(agent)
            return False
        return True

    async def _take_up_session(self) -> None:
        """``session/load`` (its replay kept as the store the reader reads) or ``session/resume``."""
        method = self.spec.resume_method
        params: dict[str, Any] = {"sessionId": self._session_id, "cwd": str(self.ctx.cwd), "mcpServers": []}
        if method == "session/resume":
            _, answer = await self._request(method, params)
            self._result_of(method, answer)
            return
        self._replay = []
        try:
            _, answer = await self._request(method, params)
            replayed, self._replay = self._replay, None
            self._result_of(method, answer)
        finally:
            self._replay = None
        self._replays += 1
        if not self._replayed:
            return
        folder = Path(self.ctx.sessions_dir).parent / REPLAY_DIR
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / REPLAY_NAME.format(n=self._replays)
        finished = {u.call_id for u in self.history.of(TurnUpdate) if u.kind == "tool_call" and u.call_id
                    and u.status in ("completed", "failed")}
        header = {"acp_replay": 1, "sessionId": self._session_id, "method": method,
                  "prompts": [i.text for i in self.history.of(UserInput)], "finished_live": sorted(finished)}
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [header, *replayed]),
                        encoding="utf-8")
        self._log_path = str(path)

    async def _end(self, agent: _Agent) -> None:
        """End one agent process: its stdin closed (an ACP agent's cue to exit), then, past a
        failsafe, SIGKILL to its group."""
        if agent.expect == "serving":
            agent.expect = "ended"
        if agent.proc.stdin is not None and not agent.proc.stdin.is_closing():
            agent.proc.stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(agent.proc.wait()), CLOSE_GRACE_S)
        except TimeoutError:
            signal_group(agent.proc.pid, signal.SIGKILL)
        await self._reap(agent)

    async def close(self) -> None:
        """``session/close`` when advertised, the process ended; then the session is loaded
        once more in a fresh process, so the reader sees what the agent kept of the whole run."""
        agent = self._agent
        if agent is not None and self._alive() and self._session_id and self._advertised("session/close"):
            try:  # an error answer is noted as a protocol problem by _result_of
                _, answer = await asyncio.wait_for(self._request("session/close", {"sessionId": self._session_id}),
                                                   CLOSE_GRACE_S)
                self._result_of("session/close", answer)
            except TimeoutError:
                self._problem(f"session/close was not answered within {CLOSE_GRACE_S:g} s")
            except DriverError:
                pass
        if agent is not None and agent.proc.returncode is None:
            await self._end(agent)
        if agent is not None:
            try:  # a failsafe: the steps are over, nothing else bounds this load
                async with asyncio.timeout(self.ctx.profile.budgets.startup):
                    await self._read_durable("final load")
            except (DriverError, TimeoutError) as exc:
                self._problem(f"the final load of the session failed: {exc!r}")
        for ref in self._refs:
            await asyncio.to_thread(kill_tree, ref)
        for each in self._agents:
            if each.proc.returncode is None:
                await each.proc.wait()
            each.stamp.close()



def _table(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: what an agent sent may be anything."""
    return value if isinstance(value, dict) else {}


def _said(error: dict[str, Any]) -> str:
    """A JSON-RPC error as the agent gave it: code, message and any data (its details)."""
    data = error.get("data")
    return f"{error.get('code')}: {error.get('message')}" + (f" ({json.dumps(data)[:300]})" if data else "")
