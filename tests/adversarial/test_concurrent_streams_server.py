"""Two hundred streams at once on one fake server: each is answered in full and recorded —
its request, every chunk in order, and its complete end — with no stream waiting for another."""
import asyncio

import aiohttp
import pytest

from fake_server import FakeServer
from fake_server.scenario_loader import parse_scenario_text

STREAMS = 200
CHUNKS = 8
# Paced chunks, so every stream is open while the others are: the requests overlap for real.
PACED = ('name = "concurrent"\n[[responses]]\nrepeat = true\n[[responses.frames]]\n'
         f'text = "{"abcd" * CHUNKS}"\nchunk = 4\ninterval_s = 0.02\n')


@pytest.mark.slow(reason="two hundred paced streams at once")
async def test_200_concurrent_streams_all_complete_and_all_recorded():
    open_now = 0
    most_open = 0

    async def one(http: aiohttp.ClientSession, url: str, n: int) -> str:
        nonlocal open_now, most_open
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"stream {n}"}]}
        async with http.post(url, json=body) as resp:
            assert resp.status == 200
            open_now += 1
            most_open = max(most_open, open_now)
            text = (await resp.read()).decode()
            open_now -= 1
        return text

    async with FakeServer(parse_scenario_text(PACED), seed="c") as server:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as http:
            answers = await asyncio.gather(*(one(http, server.base_url + "/chat/completions", n)
                                             for n in range(STREAMS)))
        records = list(server.records)
    assert all(a.rstrip().endswith("data: [DONE]") for a in answers)
    assert most_open > STREAMS // 2, f"only {most_open} streams were open at once"
    requests = [r for r in records if r.kind == "request"]
    assert sorted(r.request for r in requests) == list(range(1, STREAMS + 1))
    assert all(r.status == 200 for r in requests)
    ends = [r for r in records if r.kind == "stream_end"]
    assert sorted(r.request for r in ends) == list(range(1, STREAMS + 1)) and all(r.complete for r in ends)
    for n in range(1, STREAMS + 1):
        chunks = [r for r in records if r.kind == "chunk" and r.request == n]
        assert [c.chunk for c in chunks] == list(range(1, CHUNKS + 1)), f"request {n}"
        assert "".join(c.text for c in chunks) == "abcd" * CHUNKS
    assert not [r for r in records if r.kind in ("error", "disconnect")]
