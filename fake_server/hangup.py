"""When a client hung up, stamped where the event loop first learns of it; and when its
connection can take more bytes.

aiohttp tells a handler that its client went away by cancelling the handler's task: the
transport reads EOF (or a reset), schedules ``connection_lost`` for the next loop pass, which
cancels the task, whose ``CancelledError`` is raised on the pass after that. A disconnect
record stamped there is two passes late — the larger part of the L2 stopwatch's own error.
The transport's calls of ``eof_received`` and ``connection_lost`` are where the hang-up is
first seen, so a thin protocol in front of aiohttp's (``transport.set_protocol``, public
asyncio API) takes the stamp there and passes every call on unchanged. The handler keeps the
``Watch`` it got: by the time it handles the cancellation aiohttp has let go of the transport
(``request.transport`` is None), so the stamp could not be found through the request then.

The same protocol sees the transport's ``pause_writing``/``resume_writing``: the stream writer
(``fake_server.sse_out``) writes to the transport directly and waits on ``writable`` while the
transport holds more than its high-water mark, so the buffer stays bounded.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp import web


class Watch(asyncio.Protocol):
    """Passes every transport call on to aiohttp's protocol; notes when the client went and
    whether the transport asked its writers to pause."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.gone_ns: int | None = None
        self.paused = False
        self._resumed: asyncio.Future[None] | None = None

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
        self._wake()
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.paused = True
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.paused = False
        self._wake()
        self.inner.resume_writing()

    def _wake(self) -> None:
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)
        self._resumed = None

    async def writable(self) -> None:
        """Return once the transport takes more (at once if it is not paused); ConnectionResetError
        if the client went away meanwhile."""
        if self.paused and self.gone_ns is None:
            if self._resumed is None:
                self._resumed = asyncio.get_running_loop().create_future()
            await self._resumed
        if self.gone_ns is not None:
            raise ConnectionResetError("the client went away")

    def gone(self) -> int:
        """When the client hung up; now, if the loop has not seen it yet (a hang-up that
        surfaced first as a failed write)."""
        return self.gone_ns if self.gone_ns is not None else time.monotonic_ns()


def watch(request: web.Request) -> Watch:
    """The watch of ``request``'s connection, put in place on first use (a keep-alive connection
    carries several requests, and its watch stays in place)."""
    transport = request.transport
    if transport is None:          # gone before its handler got here: gone now, as far as it can tell
        gone = Watch(None)
        gone.gone_ns = time.monotonic_ns()
        return gone
    protocol = transport.get_protocol()
    if isinstance(protocol, Watch):
        return protocol
    watched = Watch(protocol)
    watched.paused = transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]
    transport.set_protocol(watched)
    return watched
