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

The connection — JSON-RPC framing, the transcript kept as evidence (and why the client is
written here rather than taken from an SDK), answers checked against what the agent
advertised, one agent process's life — is ``harness.drivers.acp_rpc``; what the messages say
of a turn (its updates, its settlement, a permission asked during it, the replay file) is
``harness.drivers.acp_turns``. This module is the steps.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

from harness.containment.procs import ProcRef, kill_tree, signal_group
from harness.drivers.acp_rpc import CLOSE_GRACE_S, METHOD_NOT_FOUND, AcpConnection, AgentProcess, Answer
from harness.drivers.acp_turns import REPLAY_DIR, AcpTurn, answers_due, model_call_id, permission_outcome, write_replay
from harness.drivers.base import AgentContext, DriverBase, DriverError, Unsupported, values_for
from harness.model import ProcessExit, Settlement, StopDelivery
from harness.model.history import History

PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "stopbench", "version": "1"}


class AcpDriver(DriverBase):
    name = "acp"
    output_names = ("the ACP transcript", "stderr")

    def __init__(self, ctx: AgentContext, history: History):
        super().__init__(ctx, history)
        if ctx.profile.acp is None:
            raise Unsupported(f"profile {ctx.profile.name!r} has no [acp] command")
        self.spec = ctx.profile.acp
        self._agent: AgentProcess | None = None
        self._agents: list[AgentProcess] = []
        self._refs: list[ProcRef] = []
        self.rpc = AcpConnection(self._answer_request, self._on_notification, self._on_response)
        self._turns: list[AcpTurn] = []
        self._replay: list[dict[str, Any]] | None = None  # the updates of a load in progress
        self._replay_request: int | None = None  # that load's request id: its answer ends the replay
        self._replays = 0
        self._call_id = model_call_id(self.spec.call_id_regex)

    # -- observation -------------------------------------------------------------------------
    def transcript(self) -> str:
        """The messages both ways, one a line (``>`` sent, ``<`` received), then stderr."""
        return "\n".join(self.rpc.text() + [a.stderr.text for a in self._agents])

    def protocol(self) -> dict[str, Any]:
        """The ACP transcript as the run's evidence (``AcpConnection.evidence``)."""
        return self.rpc.evidence()

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
    async def _spawn(self, role: str) -> AgentProcess:
        agent = await self.rpc.spawn(self.spec.render(values_for(self.ctx)), role, env=self.ctx.env,
                                     cwd=str(self.ctx.cwd), preexec=self.ctx.preexec,
                                     watch=str(self.ctx.values.get("api_key") or ""))
        self._refs.append(ProcRef.of(agent.proc.pid, role))
        self._agents.append(agent)
        self._agent = agent
        return agent

    async def _request(self, method: str, params: dict[str, Any]) -> Answer:
        """Send a request and wait for its response: (when it was read, the message). A
        response that is an error is returned as it is; the agent's output ending first is a
        ``DriverError``."""
        future = self._send_request(method, params)
        return await future

    def _send_request(self, method: str, params: dict[str, Any]) -> asyncio.Future[Answer]:
        return self.rpc.request(self._live(), method, params)

    def _live(self) -> AgentProcess:
        if self._agent is None or not self._alive():
            raise DriverError("the ACP agent is not running")
        return self._agent

    def _on_notification(self, method: str, params: Any, read_ns: int) -> None:
        if method == "session/update":
            self._on_update(params, read_ns)

    def _on_response(self, request_id: int) -> None:
        """A prompt's answer ends its turn, a load's its replay (what comes with it is not)."""
        if request_id == self._replay_request:
            self._replay_request = None
        for turn in self._turns:
            if turn.request_id == request_id:
                turn.ended = True

    def _answer_request(self, agent: AgentProcess, message: dict[str, Any], method: str, read_ns: int) -> None:
        """The agent's requests to the client. A permission is answered as the profile says
        (``permission_outcome``); the client offers no file system or terminal, so anything
        else is ``-32601``."""
        if method != "session/request_permission":
            self.rpc.write(agent, {"jsonrpc": "2.0", "id": message["id"],
                                   "error": {"code": METHOD_NOT_FOUND, "message": f"{method} is not offered"}})
            return
        turn = self._turns[-1] if self._turns else None
        if turn and (call := turn.carried(message.get("params"), read_ns, len(self.rpc.messages), self._call_id)):
            self.history.record(call)
        outcome = permission_outcome(turn, message.get("params"), self.spec.permission)
        self.rpc.write(agent, {"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}})

    def _on_update(self, params: Any, read_ns: int) -> None:
        """A ``session/update``: into the replay of a load in progress, else into the turn it
        belongs to — text, tool call statuses, and anything sent after the turn settled."""
        update = params.get("update") if isinstance(params, dict) else None
        if not isinstance(update, dict):
            self.rpc.problem("a session/update without an update", params=params)
            return
        if self._replay is not None and self._replay_request is not None:
            self._replay.append(update)
            return
        recorded = self._turns[-1].take(update, read_ns, len(self.rpc.messages), self._call_id) if self._turns else None
        if recorded is not None:
            self.history.record(recorded)

    async def _connect(self, role: str) -> AgentProcess:
        """A new agent process, initialized; one that answers ``initialize`` with an error is ended."""
        agent = await self._spawn(role)
        params = {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": dict(self.spec.client_capabilities),
                  "clientInfo": CLIENT_INFO}
        _, answer = await self._request("initialize", params)
        try:
            result = self.rpc.result_of("initialize", answer)
        except DriverError:
            await self._end(agent)
            raise
        caps = result.get("agentCapabilities")
        self.rpc.agent_capabilities = caps if isinstance(caps, dict) else {}
        return agent

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
        self._turns.append(AcpTurn(number=len(self._turns) + 1, request_id=self.rpc.last_id, response=future))

    async def _open_session(self) -> None:
        """Start the agent, ``initialize``, ``session/new``. An error answer (an agent that
        wants authentication, say) ends the process: the step fails as the agent's, with its
        exit and stderr, never as the harness's."""
        agent = await self._connect("chat")
        try:
            _, answer = await self._request("session/new", {"cwd": str(self.ctx.cwd), "mcpServers": []})
            session_id = self.rpc.result_of("session/new", answer).get("sessionId")
            if not isinstance(session_id, str):
                self.rpc.problem("session/new answered no sessionId", answer=answer)
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
            self.rpc.write(self._agent, message)
        return self._record_stop(source, f"acp:{self.spec.cancel}", phase, running, stop_ns, request, window,
                                 chunks_seen=chunks_seen, by=by)

    async def settle(self) -> Settlement:
        """The prompt's response: its ``stopReason`` is how the turn ended."""
        if not self._turns:
            raise DriverError("nothing to settle: no turn was started")
        turn = self._turns[-1]
        await turn.response
        return self._record_settlement(turn.settlement(self._agent_pid(), self.rpc.problem))

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

    async def _reap(self, agent: AgentProcess) -> ProcessExit:
        """Wait for the agent's exit and record it once."""
        exit_ = await agent.reap()
        if exit_ not in self.history.of(ProcessExit):
            self.history.record(exit_)
        return exit_

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
            self.rpc.problem(f"loading the session after the kill failed: {exc}")
        return kill_ns, agent.proc.pid

    async def _read_durable(self, role: str) -> None:
        """Load the session in a fresh process and end it: its replay becomes ``log_path``.
        Nothing to read when the agent does not advertise ``loadSession``, the profile takes
        sessions up with ``session/resume`` (which replays nothing), or the checks read the
        agent's own store (a load here could write to it behind the captures' back)."""
        if (self._session_id is None or not self._replayed or self.spec.resume_method != "session/load"
                or not self.rpc.advertised("session/load")):
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
            self.rpc.result_of(method, answer)
            return
        self._replay = []
        try:
            self._replay_request = self.rpc.last_id + 1  # the id the load is sent with
            _, answer = await self._request(method, params)
            replayed, self._replay = self._replay, None
            self.rpc.result_of(method, answer)
        finally:
            self._replay, self._replay_request = None, None
        self._replays += 1
        if not self._replayed:
            return
        path = write_replay(Path(self.ctx.sessions_dir).parent / REPLAY_DIR, self._replays, self._session_id, method,
                            self.history, replayed, self.spec.call_id_regex)
        self._log_path = str(path)

    async def _end(self, agent: AgentProcess) -> None:
        """End one agent process (``AgentProcess.end``) and record its exit."""
        await agent.end()
        await self._reap(agent)

    async def close(self) -> None:
        """``session/close`` when advertised, the process ended; then the session is loaded
        once more in a fresh process, so the reader sees what the agent kept of the whole run."""
        agent = self._agent
        if agent is not None and self._alive():
            await answers_due(self._turns, agent.closed, CLOSE_GRACE_S)
        if agent is not None and self._alive() and self._session_id and self.rpc.advertised("session/close"):
            try:  # an error answer is noted as a protocol problem by _result_of
                _, answer = await asyncio.wait_for(self._request("session/close", {"sessionId": self._session_id}),
                                                   CLOSE_GRACE_S)
                self.rpc.result_of("session/close", answer)
            except TimeoutError:
                self.rpc.problem(f"session/close was not answered within {CLOSE_GRACE_S:g} s")
            except DriverError:
                pass
        for turn in [t for t in self._turns if t.unsettled_answer()]:  # the run ended before its settle step
            self._record_settlement(turn.settlement(self._agent_pid(), self.rpc.problem))
        if agent is not None and agent.proc.returncode is None:
            await self._end(agent)
        if agent is not None:
            try:  # a failsafe: the steps are over, nothing else bounds this load
                async with asyncio.timeout(self.ctx.profile.budgets.startup):
                    await self._read_durable("final load")
            except (DriverError, TimeoutError) as exc:
                self.rpc.problem(f"the final load of the session failed: {exc!r}")
        for ref in self._refs:
            await asyncio.to_thread(kill_tree, ref)
        for each in self._agents:
            if each.proc.returncode is None:
                await each.proc.wait()
            each.stamp.close()
