"""When a client hung up, stamped where the event loop first learns of it.

aiohttp tells a handler that its client went away by cancelling the handler's task: the
transport reads EOF (or a reset), schedules ``connection_lost`` for the next loop pass, which
cancels the task, whose ``CancelledError`` is raised on the pass after that. A disconnect
record stamped there is two passes late — the larger part of the L2 stopwatch's own error.
The transport's calls of ``eof_received`` and ``connection_lost`` are where the hang-up is
first seen, so a thin protocol in front of aiohttp's (``transport.set_protocol``, public
asyncio API) takes the stamp there and passes every call on unchanged.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp import web


class _Stamping(asyncio.Protocol):
    """Passes every transport call on to aiohttp's protocol; notes when the client went."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.gone_ns: int | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        if self.gone_ns is None:
            self.gone_ns = time.monotonic_ns()
        result: bool | None = self.inner.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        if self.gone_ns is None:
            self.gone_ns = time.monotonic_ns()
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


def watch(request: web.Request) -> None:
    """Stamp the hang-up of ``request``'s connection (once: a keep-alive connection carries
    several requests, and its stamping protocol stays in place)."""
    transport = request.transport
    if transport is not None and not isinstance(transport.get_protocol(), _Stamping):
        transport.set_protocol(_Stamping(transport.get_protocol()))


def gone_ns(request: web.Request) -> int:
    """When the client of ``request`` hung up; now, if the loop has not seen it yet (a
    hang-up that surfaced first as a failed write)."""
    transport = request.transport
    protocol = transport.get_protocol() if transport is not None else None
    seen = protocol.gone_ns if isinstance(protocol, _Stamping) else None
    return seen if seen is not None else time.monotonic_ns()
