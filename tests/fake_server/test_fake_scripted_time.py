"""Scripted time is kept against the clock: a stream its loop wakes late (a busy machine, too
many streams) sends what is already due at once instead of stretching the rest of its script,
and records by how much it was late, so a check can tell the machine's delay from the agent's."""
import asyncio
import time

import aiohttp
from fake_testkit import scenario

from fake_server import FakeServer
from fake_server.playout import LATE_NS
from fake_server.records import Chunk, Late, Record

CHUNKS = 10
INTERVAL_S = 0.05
PACED = f'[[responses]]\n[[responses.frames]]\ntext = "{"abcd" * CHUNKS}"\nchunk = 4\ninterval_s = {INTERVAL_S}\n'
BLOCK_S = 0.3  # the loop held up (a busy machine's stand-in) once chunk 2 is out


def _block_the_loop(record: Record) -> None:
    time.sleep(BLOCK_S)


async def test_a_stream_woken_late_sends_what_is_due_at_once_and_records_how_late():
    async with FakeServer(scenario(PACED), seed="late") as srv:
        blocked = asyncio.ensure_future(srv.records.wait_for(
            lambda r: isinstance(r, Chunk) and r.chunk == 2, "chunk 2", at_once=_block_the_loop))
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        async with aiohttp.ClientSession() as http, http.post(srv.base_url + "/chat/completions", json=body) as resp:
            text = (await resp.read()).decode()
        await asyncio.wait_for(blocked, 30)
        records = list(srv.records)
    assert text.rstrip().endswith("data: [DONE]")
    chunks = [r for r in records if isinstance(r, Chunk)]
    assert [c.chunk for c in chunks] == list(range(1, CHUNKS + 1))
    stamps = {c.chunk: c.mono_ns for c in chunks}
    # The loop was held up in the write of chunk 2 (with any chunk a lagging loop sent with it);
    # the next chunk was due INTERVAL_S after that write at the latest, and the loop woke BLOCK_S
    # after it: that late at least, and said so before sending it.
    held_up = max(n for n, ns in stamps.items() if ns == stamps[2])
    late = [r for r in records if isinstance(r, Late) and r.chunk == held_up + 1]
    assert len(late) == 1 and late[0].request == 1
    assert late[0].late_ns >= (BLOCK_S - INTERVAL_S) * 1e9 >= LATE_NS
    assert late[0].index < next(c.index for c in chunks if c.chunk == held_up + 1)
    # The next four chunks were all due by then: they went out together, in one write, not one
    # per pause, which would have added the delay to every chunk after them.
    assert len({stamps[n] for n in range(held_up + 1, held_up + 5)}) == 1
