"""JSON-RPC 2.0 over one JSON message a line: the transport under ``refagent acp``.

What the Agent Client Protocol says is ``reference_agent.acp``; this is how its messages travel:
the error codes, the error a failed request is answered with, the channel that writes each
message whole to the client, and the loop that reads the client's lines.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
RESOURCE_NOT_FOUND = -32002
LINE_LIMIT = 256 * 1024 * 1024  # a prompt may embed whole files


class RpcError(Exception):
    """A request that failed, as the JSON-RPC error it is answered with."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class Channel:
    """The protocol's output: one encoded message a line, written whole, in call order."""

    def __init__(self, fd: int):
        self.fd = fd
        self.gone = False  # the client closed its end: what is left to send is dropped
        self._encoder = msgspec.json.Encoder()

    def send(self, message: dict[str, Any]) -> None:
        data = memoryview(self._encoder.encode({"jsonrpc": "2.0", **message}) + b"\n")
        try:
            while data and not self.gone:
                data = data[os.write(self.fd, data):]
        except BrokenPipeError:
            self.gone = True
            print("refagent: acp: the client closed the connection's output; nothing more is sent", file=sys.stderr)

    def respond(self, request_id: Any, result: Any) -> None:
        self.send({"id": request_id, "result": result})

    def fail(self, request_id: Any, error: RpcError) -> None:
        self.send({"id": request_id, "error": error.to_json()})

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send({"method": "session/update", "params": {"sessionId": session_id, "update": update}})


async def serve_lines(reader: asyncio.StreamReader, channel: Channel,
                      handle_line: Callable[[bytes], Awaitable[None]]) -> None:
    """Hand each line of input to ``handle_line``, in order, until end of input; a line too long
    to read is answered with a parse error and ends the connection."""
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # end of input; a last line without its newline still counts
            await handle_line(exc.partial)
            return
        except asyncio.LimitOverrunError:  # the rest of the line cannot be told from the next message
            channel.fail(None, RpcError(PARSE_ERROR, f"Parse error: a line longer than {LINE_LIMIT} bytes; "
                                                           "the connection is closed"))
            return
        await handle_line(line)
