"""The body of a streamed answer, written straight to the connection's transport.

aiohttp's ``StreamResponse.write`` is a coroutine per chunk (framing, a drain check) — on a long
unpaced stream more time than the rest of the server spends on a chunk. Once the response is
prepared (its headers sent), ``SseOut`` hands bytes to the transport itself, framed as one
HTTP/1.1 chunk when the response is chunked: the transport writes them at once when it can and
buffers them otherwise, exactly as under ``StreamResponse.write``.

Chunks of a stream that the script sends back to back (no pause between them) are made up to
``BURST`` at a time and handed over in one write: every chunk is on its way in the loop pass
that made it, and a scripted pause separates writes (unless the stream has fallen behind its
script: ``fake_server.playout.play``). This is the flush of Node's HTTP
server, whose ``res.write`` calls of one tick are corked into one socket write at the end of
the tick. One write per chunk would cost a ``send`` syscall per chunk — more than everything else
the server does for a chunk — while telling a client nothing more: a byte stream keeps no
boundaries.

Backpressure is the transport's own: past its high-water mark it pauses its protocol
(``fake_server.hangup.Watch``), and ``write`` then tells the caller to ``wait``, which returns
once the transport has drained below its low-water mark. A long run gives the loop a pass after
every ``BURST`` chunks even when it is never paused, so a hang-up (or anything else on the loop)
is seen within a few hundred microseconds of it, not at the end of the stream.
"""
from __future__ import annotations

import asyncio

from aiohttp import web

from .hangup import Watch

BURST = 64  # chunks made and handed over together, with a loop pass after them, at most


class SseOut:
    def __init__(self, request: web.Request, response: web.StreamResponse, watch: Watch):
        assert response.prepared, "SseOut writes the body of a response whose headers were sent"
        transport = request.transport
        if transport is None:
            raise ConnectionResetError("the client went away before the stream began")
        self.transport = transport
        self.watch = watch
        self.chunked = response.headers.get("Transfer-Encoding", "").lower() == "chunked"

    def write(self, payload: bytes) -> bool:
        """Hand ``payload`` to the transport now; True when the caller must ``wait`` before the
        next write. ConnectionResetError if the connection is going or gone."""
        transport = self.transport
        if transport.is_closing():
            raise ConnectionResetError("the client went away")
        if self.chunked:
            transport.write(b"%x\r\n%b\r\n" % (len(payload), payload))
        else:
            transport.write(payload)
        return self.watch.paused

    async def wait(self) -> None:
        """Until the transport takes more (and at least one loop pass)."""
        if self.watch.paused:
            await self.watch.writable()
        else:
            await asyncio.sleep(0)
            if self.watch.gone_ns is not None:
                raise ConnectionResetError("the client went away")
