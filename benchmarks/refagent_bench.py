"""Abort latencies and cold replay of refagent, side by side with the published figures.

    python benchmarks/refagent_bench.py [--quick]

Prints p50/p90/p99/max with n for: Stop → settlement on the inproc adapter (L1); Stop →
the fake server sees the socket closed, on aiohttp and through the openai SDK (L2); Stop → the bash tool's
whole tree gone (L3); cold load of a generated 132,010-event, 24 MB session until ready
for the next turn (L5). Timestamps are ``time.monotonic_ns()`` from the events themselves.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import select
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from fake_server import FakeServer, load_scenario
from reference_agent import log
from reference_agent.api import open_session, replay
from reference_agent.log import LogWriter, load

STALL = """
name = "bench-stall"
[[responses]]
repeat = true
[[responses.frames]]
text = "Streaming some text"
chunk = 4
[[responses.frames]]
stall = true
"""

WINDOW = """
name = "bench-window"
[[responses]]
repeat = true
match = {{ last = "user" }}
[[responses.frames]]
shell = {{ window = {{ id = "w", depth = {depth}, fanout = {fanout}, ignore_term = true, escape = true, hold_s = 120 }} }}
"""

PUBLISHED = {"L1": "0.3 ms", "L2": "1.6 ms", "L3": "148 ms", "L5": "1.29 s"}
AIMS = {"L1": "p50 <= 0.1 ms", "L2": "<= 1 ms", "L3": "<= 10 ms", "L5": "<= 0.4 s"}


def percentiles(values_ns: list[int]) -> str:
    ms = sorted(v / 1e6 for v in values_ns)

    def q(p: float) -> float:
        return ms[min(len(ms) - 1, int(round(p * (len(ms) - 1))))]

    return f"p50 {q(.5):8.3f}  p90 {q(.9):8.3f}  p99 {q(.99):8.3f}  max {ms[-1]:8.3f} ms  n={len(ms)}"


def report(check: str, name: str, values_ns: list[int]) -> None:
    print(f"{check} {name:44} {percentiles(values_ns)}   (aim {AIMS[check]}; published {PUBLISHED[check]})")


async def first_delta(session) -> None:
    seen = asyncio.Event()
    unsubscribe = session.subscribe(lambda e: e["type"] == "text_delta" and seen.set())
    try:
        await seen.wait()
    finally:
        unsubscribe()


async def bench_inproc_stop(tmp: Path, n: int) -> list[int]:
    scenario = tmp / "stall.toml"
    scenario.write_text(STALL)
    samples = []
    for _ in range(n):
        session = await open_session(sessions_dir=tmp / "s1", cwd=tmp, adapter="inproc", scenario=str(scenario))
        turn = session.start_turn("go")
        await first_delta(session)
        t0 = time.monotonic_ns()
        turn.stop("user")
        ending = await turn.settled()
        samples.append(ending["mono_ns"] - t0)
        await session.close()
    return samples


async def bench_http_stop(tmp: Path, n: int, adapter: str) -> tuple[list[int], list[int]]:
    closed, settled = [], []
    async with FakeServer(scenario=load_scenario(_write(tmp / "stall-h.toml", STALL))) as server:
        session = await open_session(sessions_dir=tmp / "s2", cwd=tmp, adapter=adapter, base_url=server.base_url,
                                     api_key="bench")
        for i in range(1, n + 1):
            turn = session.start_turn("go")
            await first_delta(session)
            t0 = time.monotonic_ns()
            turn.stop("user")
            ending = await turn.settled()
            disconnect = await asyncio.wait_for(server.records.wait_disconnect(request=i), 30)
            closed.append(disconnect.mono_ns - t0)
            settled.append(ending["mono_ns"] - t0)
        await session.close()
    return closed, settled


class ExitWatch:
    """Stamps the moment each PID exits, from a thread polling pidfds (so the agent's own
    work on the event loop cannot delay the observation)."""

    def __init__(self, pids: list[int]):
        self.fds = {}
        for pid in pids:
            try:
                self.fds[os.pidfd_open(pid)] = pid
            except ProcessLookupError:
                pass
        self.exited: dict[int, int] = {}
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        poller = select.poll()
        for fd in self.fds:
            poller.register(fd, select.POLLIN)
        while len(self.exited) < len(self.fds):
            for fd, _ in poller.poll(30_000):
                self.exited.setdefault(self.fds[fd], time.monotonic_ns())
                poller.unregister(fd)

    def last_exit(self) -> int:
        self.thread.join(30)
        for fd in self.fds:
            os.close(fd)
        return max(self.exited.values())


async def bench_tree_kill(tmp: Path, n: int, depth: int, fanout: int) -> tuple[list[int], list[int]]:
    gone, result = [], []
    async with FakeServer(scenario=load_scenario(_write(tmp / "w.toml", "name = \"x\"\n[[responses]]\n[[responses.frames]]\ntext = \"x\"\n"))) as server:
        session = await open_session(sessions_dir=tmp / "s3", cwd=tmp, adapter="inproc",
                                     scenario=str(_write(tmp / f"window{depth}{fanout}.toml", WINDOW.format(depth=depth, fanout=fanout))),
                                     base_url=server.url)
        results = []
        session.subscribe(lambda e: e["type"] == "tool_result" and results.append(e))
        for _ in range(n):
            seen = len(server.records.of_kind("window"))
            turn = session.start_turn("go")
            await asyncio.wait_for(server.records.wait_for(lambda r: len(server.records.of_kind("window")) > seen,
                                                           "window"), 60)
            watch = ExitWatch([p.pid for p in server.records.of_kind("window")[-1].pids])
            t0 = time.monotonic_ns()
            turn.stop("user")
            await turn.settled()
            result.append(results[-1]["mono_ns"] - t0)  # written once every process is gone
            gone.append(watch.last_exit() - t0)
        await session.close()
    return gone, result


def generate_session(path: Path, events: int = 132_010, target_bytes: int = 24_000_000) -> None:
    """A long, realistic session: turns of request, message, tool call, result, settle."""
    rng = random.Random(7)
    header = {"format": "contract-log", "version": 1, "session_id": path.stem, "created": "2026-01-01T00:00:00.000000Z",
              "cwd": "/work", "model": "m", "adapter": "http", "parent": None}
    writer = LogWriter.create(path, header)
    pad = max(1, target_bytes // events - 150)
    turn = 0
    written = 0
    while written < events:
        turn += 1
        batch = [("turn_started", {"turn": turn, "input": "please fix the failing test " * 2, "inbox": []})]
        for step in range(1, rng.randint(2, 4)):
            cid = f"c{turn}-{step}"
            batch += [
                ("model_request", {"turn": turn, "step": step, "request": {"model": "m", "stream": True, "n_messages": step}}),
                ("assistant_message", {"turn": turn, "step": step, "text": "x" * pad, "finish_reason": "tool_calls",
                                       "interrupted": False,
                                       "tool_calls": [{"id": cid, "name": "bash", "arguments": "{\"command\": \"pytest -q\"}"}]}),
                ("tool_call", {"turn": turn, "step": step, "call_id": cid, "name": "bash", "arguments": {"command": "pytest -q"}}),
                ("tool_started", {"turn": turn, "call_id": cid, "pid": 4242, "pgid": 4242}),
                ("tool_result", {"turn": turn, "call_id": cid, "output": "y" * pad, "exit_code": 0, "aborted": False}),
                ("step_settled", {"turn": turn, "step": step}),
            ]
        batch.append(("turn_ended", {"turn": turn, "reason": "completed"}))
        for kind, fields in batch[: events - written]:
            writer.append(kind, **fields)
            written += 1
    writer.close()


def bench_cold_load(tmp: Path, repeats: int) -> tuple[list[int], int, int]:
    path = tmp / "s-big.jsonl"
    generate_session(path)
    log.freeze_loaded = True  # as in the refagent process
    samples = []
    loaded = state = None
    for _ in range(repeats):
        loaded = state = None  # the previous round's objects are freed outside the timing
        t0 = time.monotonic_ns()
        loaded = load(path)
        state = replay(loaded)
        state.history.messages()  # ready: the next request's history is built
        samples.append(time.monotonic_ns() - t0)
    return samples, len(loaded.events), path.stat().st_size


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args()
    n, n_tree, repeats = (30, 5, 2) if args.quick else (300, 25, 5)
    with tempfile.TemporaryDirectory(prefix="refagent-bench-") as d:
        tmp = Path(d)
        print(f"refagent benchmark (python {sys.version.split()[0]})")
        report("L1", "inproc: stop -> settlement", await bench_inproc_stop(tmp, n))
        for adapter in ("http", "openai-sdk"):
            closed, settled = await bench_http_stop(tmp, n, adapter)
            report("L2", f"{adapter}: stop -> server sees socket closed", closed)
            report("L2", f"{adapter}: stop -> settlement", settled)
        for depth, fanout, size in ((1, 1, 4), (2, 2, 9)):
            gone, result = await bench_tree_kill(tmp, n_tree, depth, fanout)
            report("L3", f"bash: stop -> tree of {size} gone", gone)
            report("L3", f"bash: stop -> tree of {size}: tool result", result)
        samples, events, size = bench_cold_load(tmp, repeats)
        report("L5", f"cold load {events} events {size / 1e6:.1f} MB", samples)
        print(f"   (cold load median {statistics.median(samples) / 1e9:.3f} s)")


if __name__ == "__main__":
    asyncio.run(main())
