"""The body of a streamed answer, written chunk by chunk straight to the connection's transport.

aiohttp's ``StreamResponse.write`` is a coroutine per chunk (framing, a drain check) — on a long
unpaced stream more time than the rest of the server spends on a chunk. Once the response is
prepared (its headers sent), ``SseOut`` hands each chunk to the transport itself, framed as an
HTTP/1.1 chunk when the response is chunked, the moment it is made: the transport writes it at
once when it can and buffers it otherwise, exactly as under ``StreamResponse.write``. Nothing
is gathered here into a larger write.

Backpressure is the transport's own: past its high-water mark it pauses its protocol
(``fake_server.hangup.Watch``), and ``write`` then tells the caller to ``wait``, which returns
once the transport has drained below its low-water mark. A run that is never paused still gives
the loop a pass every ``BURST`` chunks, so a hang-up (or anything else on the loop) is seen within
a few hundred microseconds of it, not at the end of the stream.
"""
from __future__ import annotations

import asyncio

from aiohttp import web

from .hangup import Watch

BURST = 64  # chunks written without a loop pass, at most


class SseOut:
    def __init__(self, request: web.Request, response: web.StreamResponse, watch: Watch):
        assert response.prepared, "SseOut writes the body of a response whose headers were sent"
        transport = request.transport
        if transport is None:
            raise ConnectionResetError("the client went away before the stream began")
        self.transport = transport
        self.watch = watch
        self.chunked = response.headers.get("Transfer-Encoding", "").lower() == "chunked"
        self.heads: dict[int, bytes] = {}   # an HTTP chunk's size line, by size
        self.unyielded = 0

    def write(self, payload: bytes) -> bool:
        """Hand ``payload`` to the transport now; True when the caller must ``wait`` before the
        next write. ConnectionResetError if the connection is going or gone."""
        transport = self.transport
        if transport.is_closing():
            raise ConnectionResetError("the client went away")
        if self.chunked:
            size = len(payload)
            head = self.heads.get(size)
            if head is None:
                head = self.heads[size] = b"%x\r\n" % size
            transport.write(head + payload + b"\r\n")
        else:
            transport.write(payload)
        self.unyielded += 1
        return self.watch.paused or self.unyielded >= BURST

    async def wait(self) -> None:
        """Until the transport takes more (and at least one loop pass)."""
        self.unyielded = 0
        if self.watch.paused:
            await self.watch.writable()
        else:
            await asyncio.sleep(0)
            if self.watch.gone_ns is not None:
                raise ConnectionResetError("the client went away")
