"""The fake server must never be the bottleneck: its throughput and disconnect detection.

    python benchmarks/fake_server_bench.py [--chars N] [--trials N]

Runs the server as its own process (``python -m fake_server``) so that client and server do
not share an event loop, then prints:

- chunks/s and MB/s of one long streamed Chat Completions text (4-character chunks, no pacing),
  read as raw SSE with aiohttp, first byte to last;
- the disconnect-detection delay: the client closes a stalled stream → the server's
  ``disconnect`` record, p50/p90/p99/max over ``--trials`` streams. Both ends stamp
  ``time.monotonic_ns()`` (one clock for all processes on the host); the server's record is
  read afterwards over ``/_stopbench/records``, so polling adds nothing to the figure.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from fake_server.records import RECORDS_VERSION

SCENARIO = """
name = "bench"
[[responses]]
match = {{ contains = "long" }}
[[responses.frames]]
text = "{text}"
chunk = 4

[[responses]]
match = {{ contains = "stall" }}
repeat = true
[[responses.frames]]
text = "ready"
[[responses.frames]]
stall = true
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def body(prompt: str) -> dict:
    return {"model": "bench", "stream": True, "messages": [{"role": "user", "content": prompt}]}


async def throughput(http: aiohttp.ClientSession, base: str) -> tuple[int, float, int]:
    async with http.post(f"{base}/v1/chat/completions", json=body("long")) as resp:
        first = None
        size = 0
        async for block in resp.content.iter_any():
            first = first or time.perf_counter()
            size += len(block)
        elapsed = time.perf_counter() - first
    records = await fetch_records(http, base, 0)
    chunks = sum(1 for r in records if r["kind"] == "chunk" and r["request"] == 1)
    return chunks, elapsed, size


async def fetch_records(http: aiohttp.ClientSession, base: str, after: int, wait: float = 0) -> list[dict]:
    async with http.get(f"{base}/_stopbench/records", params={"after": str(after), "wait": str(wait)}) as resp:
        answer = await resp.json()
    if answer.get("records_version") != RECORDS_VERSION:
        raise SystemExit(f"the server answers records version {answer.get('records_version')}, "
                         f"this benchmark reads {RECORDS_VERSION}")
    return answer["records"]


async def disconnect_delays(http: aiohttp.ClientSession, base: str, trials: int) -> list[float]:
    closed_at: dict[int, int] = {}
    for n in range(2, trials + 2):
        resp = await http.post(f"{base}/v1/chat/completions", json=body("stall"))
        await resp.content.readuntil(b"\n\n")           # the first chunk is in: the stream is stalled
        closed_at[n] = time.monotonic_ns()
        resp.close()                                    # drops the connection
    deadline = time.monotonic() + 60
    seen: dict[int, int] = {}
    after = 0
    while len(seen) < trials and time.monotonic() < deadline:
        records = await fetch_records(http, base, after, wait=5)   # long poll: returns on new records
        for r in records:
            after = r["index"]
            if r["kind"] == "disconnect":
                seen[r["request"]] = r["mono_ns"]
    missing = sorted(set(closed_at) - set(seen))
    if missing:
        raise SystemExit(f"no disconnect record for requests {missing[:10]}")
    return [(seen[n] - closed_at[n]) / 1e6 for n in closed_at]


async def main(chars: int, trials: int):
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "bench.toml"
        scenario.write_text(SCENARIO.format(text="abcd" * (chars // 4)))
        server = subprocess.Popen([sys.executable, "-m", "fake_server", "--scenario", str(scenario)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            base = server.stdout.readline().strip().removesuffix("/v1")
            connector = aiohttp.TCPConnector(force_close=True)
            async with aiohttp.ClientSession(connector=connector) as http:
                chunks, elapsed, size = await throughput(http, base)
                print(f"long text stream: {chunks} chunks of 4 chars in {elapsed:.3f} s = "
                      f"{chunks / elapsed:,.0f} chunks/s, {size / elapsed / 1e6:.1f} MB/s of SSE")
                delays = await disconnect_delays(http, base, trials)
            print(f"disconnect detection (client close -> server record), n={len(delays)}: "
                  f"p50 {percentile(delays, 50):.3f} ms, p90 {percentile(delays, 90):.3f} ms, "
                  f"p99 {percentile(delays, 99):.3f} ms, max {max(delays):.3f} ms "
                  f"(mean {statistics.mean(delays):.3f} ms)")
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chars", type=int, default=400_000, help="length of the long text (default 400000)")
    parser.add_argument("--trials", type=int, default=300, help="disconnect trials (default 300, at least 200)")
    args = parser.parse_args()
    asyncio.run(main(args.chars, args.trials))
