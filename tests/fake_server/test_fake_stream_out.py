"""A long unpaced stream goes to the transport a burst of chunks at a time without outrunning it:
the server waits while the transport is paused (its buffer stays under the high-water mark plus
one write), records every chunk it handed over, and a hang-up at any point is recorded with the
last chunk sent and the moment the loop first saw it go. Chunks the script paces are each
written alone."""
import asyncio
import json
import re
import socket

import pytest
from fake_testkit import scenario

from fake_server import FakeServer, hangup, sse_out
from fake_server.records import Chunk, Disconnect

CHUNKS = 20_000
LONG = scenario(f'[[responses]]\nrepeat = true\nmatch = {{ contains = "long" }}\n[[responses.frames]]\n'
                f'text = "{"abcd" * CHUNKS}"\nchunk = 4\n'
                '[[responses]]\nrepeat = true\nmatch = { contains = "stall" }\n[[responses.frames]]\ntext = "ready"\n'
                '[[responses.frames]]\nstall = true\n')


async def open_stream(port: int, prompt: str) -> socket.socket:
    """A raw client socket with a small receive buffer (so the server's transport must buffer)
    whose request for ``prompt`` is sent."""
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await loop.sock_connect(sock, ("127.0.0.1", port))
    body = json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": prompt}]}).encode()
    await loop.sock_sendall(sock, b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    return sock


async def read_until(sock: socket.socket, marker: bytes) -> bytes:
    loop = asyncio.get_running_loop()
    received = b""
    while marker not in received:
        block = await loop.sock_recv(sock, 65536)
        assert block, f"the server closed the connection before {marker!r}"
        received += block
    return received


def chunks_of(store, request: int) -> list[Chunk]:
    return [r for r in store.of_kind("chunk") if isinstance(r, Chunk) and r.request == request]


async def test_a_long_stream_waits_for_a_paused_transport_and_keeps_its_buffer_bounded(monkeypatch):
    seen = {"max_buffer": 0, "max_write": 0}
    paused = asyncio.Event()
    write = sse_out.SseOut.write

    def watched_write(self, payload):
        wait = write(self, payload)
        seen["max_buffer"] = max(seen["max_buffer"], self.transport.get_write_buffer_size())
        seen["max_write"] = max(seen["max_write"], len(payload) + 16)   # with its chunk framing
        if self.watch.paused:
            seen.setdefault("limits", self.transport.get_write_buffer_limits())
            seen.setdefault("recorded_when_paused", len(chunks_of(server.records, 1)))
            paused.set()
        return wait

    monkeypatch.setattr(sse_out.SseOut, "write", watched_write)
    async with FakeServer(LONG, seed="t") as server:
        sock = await open_stream(server.port, "long")
        try:
            async with asyncio.timeout(60):
                await paused.wait()     # the client reads nothing until the transport has paused
                assert seen["recorded_when_paused"] < CHUNKS
                received = await read_until_closed(sock)
        finally:
            sock.close()
        stream_end = await server.records.wait_for(lambda r: r.kind == "stream_end", "the stream's end")
    low, high = seen["limits"]
    assert seen["max_buffer"] <= high + seen["max_write"]
    assert stream_end.complete
    texts = re.findall(rb'"content":"(abcd)"', received)
    assert len(texts) == CHUNKS
    assert [c.chunk for c in chunks_of(server.records, 1)] == list(range(1, CHUNKS + 1))
    assert received.rstrip().endswith(b"data: [DONE]\n\n\r\n0")


async def read_until_closed(sock: socket.socket) -> bytes:
    loop = asyncio.get_running_loop()
    parts = []
    while block := await loop.sock_recv(sock, 1 << 16):
        parts.append(block)
    return b"".join(parts)


async def test_a_hang_up_mid_stream_is_recorded_after_the_last_chunk_handed_over():
    async with FakeServer(LONG, seed="t") as server:
        sock = await open_stream(server.port, "long")
        async with asyncio.timeout(60):
            await read_until(sock, b'"content":"abcd"')
            await server.records.wait_chunk(1, 2)
            sock.close()    # unread data: the client's kernel resets the connection
            gone = await server.records.wait_disconnect(1)
    chunks = chunks_of(server.records, 1)
    assert 2 <= gone.after_chunk < CHUNKS
    assert [c.chunk for c in chunks] == list(range(1, gone.after_chunk + 1))
    assert not server.records.of_kind("stream_end")


@pytest.mark.parametrize("how", [socket.SHUT_WR, socket.SHUT_RDWR])
async def test_the_disconnect_record_carries_the_moment_the_loop_saw_the_hang_up(monkeypatch, how):
    stamps: list[int | None] = []
    for name in ("eof_received", "connection_lost"):
        original = getattr(hangup.Watch, name)

        def stamping(self, *args, _original=original):
            result = _original(self, *args)
            stamps.append(self.gone_ns)
            return result
        monkeypatch.setattr(hangup.Watch, name, stamping)
    async with FakeServer(LONG, seed="t") as server:
        sock = await open_stream(server.port, "stall")
        async with asyncio.timeout(30):
            await read_until(sock, b'"content":"ready"')
            await server.records.wait_chunk(1, 1)
            sock.shutdown(how)
            gone = await server.records.wait_disconnect(1)
        sock.close()
    assert isinstance(gone, Disconnect) and gone.after_chunk == 1
    assert stamps and stamps[0] is not None
    assert gone.mono_ns == stamps[0]   # the stamp taken where the hang-up was first seen, not a later one


BURSTS = scenario('[[responses]]\nrepeat = true\nmatch = { contains = "unpaced" }\n[[responses.frames]]\n'
                  f'text = "{"abcd" * 200}"\nchunk = 4\n'
                  '[[responses]]\nrepeat = true\nmatch = { contains = "paced" }\n[[responses.frames]]\n'
                  'text = "abcdefghijkl"\nchunk = 4\ninterval_s = 0.001\n')


@pytest.mark.parametrize("prompt, chunks, burst", [("unpaced", 200, sse_out.BURST), ("paced", 3, 1)])
async def test_back_to_back_chunks_share_a_write_and_paced_ones_are_written_alone(monkeypatch, prompt, chunks, burst):
    written: list[bytes] = []
    write = sse_out.SseOut.write

    def watched_write(self, payload):
        written.append(payload)
        return write(self, payload)

    monkeypatch.setattr(sse_out.SseOut, "write", watched_write)
    async with FakeServer(BURSTS, seed="t") as server:
        sock = await open_stream(server.port, prompt)
        try:
            async with asyncio.timeout(30):
                received = await read_until_closed(sock)
        finally:
            sock.close()
    # Text chunks per write (the closing events are a write of their own, with none).
    per_write = [n for n in (payload.count(b'"content":"') for payload in written) if n]
    assert per_write == [min(burst, chunks - start) for start in range(0, chunks, burst)]
    assert len(re.findall(rb'"content":"[a-l]{4}"', received)) == chunks
    assert [c.chunk for c in chunks_of(server.records, 1)] == list(range(1, chunks + 1))
