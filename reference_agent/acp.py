"""``refagent acp``: the agent over the Agent Client Protocol, the editors' protocol.

JSON-RPC 2.0 with one JSON message a line: requests come on stdin, responses and
``session/update`` notifications go to stdout, which carries nothing else (the process's
own fd 1 is pointed at stderr at start, so a stray print can never corrupt the channel).

The ACP surface is a thin mapping onto the engine, which keeps the contract on its own:

- ``session/prompt`` starts one engine turn; the engine's events become ``session/update``
  notifications as they happen (text deltas, tool calls), and the request is answered
  once the turn has settled, with the stop reason of ``STOP_REASONS``. Every event of a
  turn precedes its settlement, so no update of a turn can follow its answer.
- ``session/cancel`` (and ``$/cancel_request`` naming the prompt's request) is
  ``Turn.stop("user")``: the engine's one cancellation path. The stopped tool's tree is
  gone and its failed ``tool_call_update`` sent before the answer, ``cancelled``.
- ``session/load`` is the engine's resume (a killed run's leftovers reaped, the open turn
  repaired in memory): the durable conversation is replayed from the log as updates, each
  tool call with the outcome the log recorded, or the repair's words for one it never
  recorded, before the request is answered.

The engine never asks before running a tool, so ``session/request_permission`` is never
sent. The official Python SDK (``agent-client-protocol``) is not used: importing it costs
about 0.8 s (pydantic and its generated schema), against a few milliseconds for this loop.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from . import failpoints
from .acp_rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LINE_LIMIT,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    Channel,
    RpcError,
    serve_lines,
)
from .acp_updates import live_updates, replay_updates
from .api import default_sessions_dir, log_path_of, open_session
from .engine import Session, Turn
from .log import LogDamage, load

PROTOCOL_VERSION = 1
# A settlement's reason -> the prompt's stop reason; an ``error`` settlement is an error response.
# ``blocked`` (a durability barrier failed, so the agent would not start the effect) is the
# agent refusing to go on: the one reason the protocol has for that.
STOP_REASONS = {"completed": "end_turn", "max_tokens": "max_tokens", "blocked": "refusal",
                "aborted": "cancelled", "interrupted": "cancelled"}


@dataclass
class Prompt:
    """One ``session/prompt`` request and the turn it runs."""

    request_id: Any
    turn: Turn
    cancelled: bool = False
    held: list[dict[str, Any]] = field(default_factory=list)  # acp-updates-after-cancel only


class Binding:
    """An engine session as an ACP session: its events become updates of the running prompt."""

    def __init__(self, channel: Channel, session: Session):
        self.channel = channel
        self.session = session
        self.prompt: Prompt | None = None
        self.task: asyncio.Task | None = None  # the prompt's answer, once its turn settles
        session.subscribe(self._on_event)

    def _on_event(self, event: dict[str, Any]) -> None:
        prompt = self.prompt
        if prompt is None or event.get("turn") != prompt.turn.number:
            return
        for update in live_updates(event):
            if prompt.cancelled and failpoints.on("acp-updates-after-cancel"):
                prompt.held.append(update)
            else:
                self.channel.update(self.session.id, update)

    def cancel(self) -> None:
        if self.prompt is not None:
            self.prompt.cancelled = True
            self.prompt.turn.stop("user")

    async def answer(self, prompt: Prompt) -> None:
        settlement = await prompt.turn.settled()
        self.prompt = None
        stopped = prompt.turn.stop_source is not None
        if stopped and failpoints.on("acp-prompt-never-resolves"):
            return
        if settlement["reason"] == "error":
            self.channel.fail(prompt.request_id, RpcError(INTERNAL_ERROR, f"the turn ended in error: "
                                                                          f"{settlement.get('error')}"))
        else:
            reason = STOP_REASONS[settlement["reason"]]
            if reason == "cancelled" and failpoints.on("acp-cancel-ends-turn"):
                reason = "end_turn"
            self.channel.respond(prompt.request_id, {"stopReason": reason})
        for update in prompt.held:
            self.channel.update(self.session.id, update)


def prompt_text(blocks: Any) -> str:
    """The user's message from a prompt's content blocks: text, resource links and embedded
    text resources (the ``embeddedContext`` capability); anything else is refused."""
    if not isinstance(blocks, list):
        raise RpcError(INVALID_PARAMS, "session/prompt: 'prompt' must be an array of content blocks")
    parts = []
    for i, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            parts.append(f"[{block.get('name') or block['uri']}]({block['uri']})")
        elif kind == "resource" and isinstance((block.get("resource") or {}).get("text"), str):
            resource = block["resource"]
            parts.append(f"<resource uri=\"{resource.get('uri', '')}\">\n{resource['text']}\n</resource>")
        else:
            raise RpcError(INVALID_PARAMS, f"session/prompt: prompt[{i}] is a {kind!r} block, which refagent does "
                                           f"not take (text, resource_link and text resources only)")
    return "\n\n".join(parts)


class Agent:
    """The connection: its sessions, and the dispatch of each incoming message."""

    def __init__(self, args: argparse.Namespace, channel: Channel, version: Callable[[], str]):
        self.args = args
        self.channel = channel
        self.version = version
        self.sessions_dir = Path(args.sessions_dir) if args.sessions_dir else default_sessions_dir()
        self.bindings: dict[str, Binding] = {}

    # --- the loop -------------------------------------------------------------------------

    async def handle_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            self.channel.fail(None, RpcError(PARSE_ERROR, f"Parse error: {exc}"))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            request_id = message.get("id") if isinstance(message, dict) else None
            self.channel.fail(request_id, RpcError(INVALID_REQUEST, "Invalid Request: expected one JSON-RPC 2.0 "
                                                                    "object a line"))
            return
        method = message.get("method")
        if method is None:
            return  # a response: refagent sends no requests, so there is nothing to match it to
        request_id = message.get("id")
        params = message.get("params") or {}
        try:
            if not isinstance(method, str) or not isinstance(params, dict):
                raise RpcError(INVALID_REQUEST, "Invalid Request: 'method' must be a string, 'params' an object")
            if "id" not in message:
                self.notified(method, params)
                return
            result = await self.request(method, params, request_id)
        except Exception as exc:  # noqa: BLE001 - a failed request is answered; serving goes on
            error = exc if isinstance(exc, RpcError) else RpcError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
            if "id" in message:
                self.channel.fail(request_id, error)
            else:
                print(f"refagent: acp: notification {method!r}: {error.message}", file=sys.stderr)
            return
        if result is not _LATER:
            self.channel.respond(request_id, result)

    def notified(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/cancel":
            self.binding(params).cancel()
        elif method == "$/cancel_request":
            for binding in self.bindings.values():
                if binding.prompt is not None and binding.prompt.request_id == params.get("requestId"):
                    binding.cancel()
        # any other notification is one refagent does not take; JSON-RPC answers none

    async def request(self, method: str, params: dict[str, Any], request_id: Any) -> Any:
        if method == "initialize":
            return self.initialize()
        if method == "session/new":
            return await self.new_session(params)
        if method == "session/load":
            return await self.load_session(params)
        if method == "session/prompt":
            self.prompt(params, request_id)
            return _LATER
        if method == "session/close":
            return await self.close_session(params)
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")

    # --- the methods ----------------------------------------------------------------------

    def initialize(self) -> dict[str, Any]:
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": False, "sse": False},
                "sessionCapabilities": {"close": {}},
            },
            "authMethods": [],
            "agentInfo": {"name": "refagent", "title": "refagent", "version": self.version()},
        }

    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        session = await self.open(params, resume=None)
        return {"sessionId": session.id}

    async def load_session(self, params: dict[str, Any]) -> None:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RpcError(INVALID_PARAMS, "session/load: 'sessionId' must be a string")
        try:
            path = log_path_of(self.sessions_dir, session_id)
        except ValueError as exc:
            raise RpcError(INVALID_PARAMS, f"session/load: {exc}") from None
        if not path.exists():
            raise RpcError(RESOURCE_NOT_FOUND, f"session/load: no session {session_id!r} in {self.sessions_dir}")
        held = self.bindings.get(session_id)
        if held is not None:
            if held.prompt is not None:
                raise RpcError(INVALID_REQUEST, f"session/load: session {session_id} has a prompt running")
            await self.release(session_id)
        try:
            events = load(path).events  # the durable record, as written (loading never writes)
        except LogDamage as exc:
            raise damaged(exc) from None
        session = await self.open(params, resume=session_id)
        for update in replay_updates(events):
            self.channel.update(session.id, update)
        return None

    def prompt(self, params: dict[str, Any], request_id: Any) -> None:
        binding = self.binding(params)
        text = prompt_text(params.get("prompt"))
        if binding.prompt is not None:
            raise RpcError(INVALID_REQUEST, f"session/prompt: session {binding.session.id} already runs a prompt "
                                            f"(request {binding.prompt.request_id!r}); cancel it or wait")
        prompt = Prompt(request_id, binding.session.start_turn(text))
        binding.prompt = prompt
        binding.task = asyncio.get_running_loop().create_task(binding.answer(prompt))

    async def close_session(self, params: dict[str, Any]) -> dict[str, Any]:
        binding = self.binding(params)
        await self.release(binding.session.id)
        return {}

    # --- helpers --------------------------------------------------------------------------

    def binding(self, params: dict[str, Any]) -> Binding:
        session_id = params.get("sessionId")
        binding = self.bindings.get(session_id) if isinstance(session_id, str) else None
        if binding is None:
            raise RpcError(RESOURCE_NOT_FOUND, f"no open session {session_id!r} (session/new or session/load first)")
        return binding

    async def open(self, params: dict[str, Any], resume: str | None) -> Session:
        cwd = params.get("cwd", self.args.cwd)
        if cwd is not None and not (isinstance(cwd, str) and os.path.isabs(cwd)):
            raise RpcError(INVALID_PARAMS, f"'cwd' must be an absolute path, got {cwd!r}")
        if cwd is not None and not os.path.isdir(cwd):
            raise RpcError(INVALID_PARAMS, f"'cwd' {cwd!r} is not a folder")
        a = self.args
        try:
            session = await open_session(sessions_dir=self.sessions_dir, cwd=cwd, adapter=a.adapter, model=a.model,
                                         base_url=a.base_url, api_key=a.api_key, scenario=a.scenario, resume=resume)
        except LogDamage as exc:
            raise damaged(exc) from None
        except (ValueError, FileNotFoundError) as exc:
            raise RpcError(INVALID_PARAMS, str(exc)) from None
        print(f"refagent: session {session.id} {session.log_path}", file=sys.stderr, flush=True)
        if params.get("mcpServers"):
            print("refagent: acp: MCP servers are not supported; the ones given are ignored", file=sys.stderr)
        self.bindings[session.id] = Binding(self.channel, session)
        return session

    async def release(self, session_id: str) -> None:
        """Close a session: a running prompt is cancelled and answered first."""
        binding = self.bindings.pop(session_id)
        binding.cancel()
        if binding.task is not None:
            await binding.task
        await binding.session.close()

    def stop_all(self) -> bool:
        """Stop every running prompt (SIGINT, SIGTERM); True if one was running."""
        running = [b for b in self.bindings.values() if b.prompt is not None]
        for binding in running:
            binding.cancel()
        return bool(running)

    async def close_all(self) -> None:
        for session_id in list(self.bindings):
            await self.release(session_id)


_LATER = object()  # a request answered later (a prompt, once its turn settles)


def damaged(exc: LogDamage) -> RpcError:
    return RpcError(INTERNAL_ERROR, f"damaged session log: {exc} (the file was left untouched)",
                    {"path": exc.path, "line": exc.line, "problem": exc.problem})


async def acp_main(args: argparse.Namespace, version: Callable[[], str]) -> int:
    """Serve one client on stdin/stdout until end of input or SIGTERM.

    End of input: running prompts are cancelled and answered, sessions closed, exit 0.
    SIGINT cancels running prompts (the turns settle ``aborted``, source ``user``) and
    serving goes on; SIGTERM does the same and then exits, 3 if a prompt was running."""
    loop = asyncio.get_running_loop()
    channel = Channel(os.dup(1))
    os.dup2(2, 1)  # from now on fd 1 is stderr: only the channel writes protocol messages
    agent = Agent(args, channel, version)
    quit_code: asyncio.Future[int] = loop.create_future()

    def on_signal(sig: int) -> None:
        running = agent.stop_all()
        if sig == signal.SIGTERM and not quit_code.done():
            quit_code.set_result(3 if running else 0)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    reading = loop.create_task(serve_lines(reader, channel, agent.handle_line))
    try:
        ends: list[asyncio.Future[Any]] = [reading, quit_code]
        await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
    finally:
        reading.cancel()
        await asyncio.gather(reading, return_exceptions=True)
        await agent.close_all()
    return quit_code.result() if quit_code.done() else 0
