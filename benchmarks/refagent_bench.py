"""Abort latencies, cold replay and full-text index of refagent, side by side with floors and the published figures.

    python benchmarks/refagent_bench.py [--quick]

Prints p50/p90/p99/max with n, and /proc/loadavg before and after, for:

- L1 Stop → settlement on the inproc adapter.
- ACP: ``refagent acp`` spawned until ``initialize`` and ``session/new`` are answered, next to
  the interpreter spawned to echo one line; ``session/cancel`` mid-stream until the prompt
  is answered ``cancelled``.
- L2 Stop → the fake server sees the connection closed, on aiohttp and through the openai
  SDK. The server runs in a process of its own, as it does when the harness scores an
  agent: sharing the agent's event loop, it would only see the hang-up once the agent's
  loop is free again (after the settlement's fsync), which no real server waits for.
- L3 Stop → the bash tool's whole tree gone (pidfds polled from a thread), for trees of 4
  and 9 processes, next to a floor: the same tree SIGKILLed directly by the benchmark.
- L5 cold load of a generated 132,010-event, 24 MB session until ready for the next turn
  (``open_session(resume=…)`` and the next request's history), interleaved with its floor:
  each JSON decoder here (the standard library, msgspec, orjson: ``pip install -e
  '.[bench]'``) decoding the same lines to dicts and nothing else; the ratio is to the
  fastest. Beside them, the load's own decoding alone: msgspec to the structs of the
  fields the resume reads, a chunk at a time.
- L6 rebuild of the session's full-text index (what ``refagent search`` builds), for the
  user/assistant text alone and with tool commands and outputs, each next to the same rows
  put by one executemany into a bare FTS5 table, once with FTS5's defaults (it keeps its
  own copy of each text and a size row per event) and once with the index's settings
  (contentless, no column sizes); every table is in memory and filled in one transaction.

Timestamps are ``time.monotonic_ns()`` (the events' own where there are events).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import random
import select
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

from fake_server import FakeServer, load_scenario
from reference_agent import log
from reference_agent.api import new_state, open_session
from reference_agent.events import events_decoder
from reference_agent.log import LogWriter, load
from reference_agent.search import CREATE_INDEX, FIELD_OF, FIELDS, Indexer, SearchIndex

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
[responses.frames.shell.window]
id = "w"
depth = {depth}
fanout = {fanout}
ignore_term = true
escape = true
hold_s = 120
"""

ONE_TEXT = 'name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "x"\n'

PUBLISHED = {"L1": "0.3 ms", "L2": "1.6 ms", "L3": "148 ms", "L5": "1.29 s", "L6": "42 ms"}
AIMS = {"L1": "p50 <= 0.1 ms", "L2": "< 1.6 ms", "L3": "<= 10 ms", "L5": "<= 1.5x floor", "L6": "<= 42 ms"}


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def percentiles(values_ns: list[int]) -> str:
    ms = sorted(v / 1e6 for v in values_ns)

    def q(p: float) -> float:
        return ms[min(len(ms) - 1, int(round(p * (len(ms) - 1))))]

    return f"p50 {q(.5):8.3f}  p90 {q(.9):8.3f}  p99 {q(.99):8.3f}  max {ms[-1]:8.3f} ms  n={len(ms)}"


def report(check: str, name: str, values_ns: list[int], note: str = "") -> None:
    tail = f"   (aim {AIMS[check]}; published {PUBLISHED[check]})" if not note else f"   ({note})"
    print(f"{check} {name:46} {percentiles(values_ns)}{tail}", flush=True)


def median_ms(values_ns: list[int]) -> float:
    return statistics.median(values_ns) / 1e6


async def first_delta(session) -> None:
    seen = asyncio.Event()
    unsubscribe = session.subscribe(lambda e: e["type"] == "text_delta" and seen.set())
    try:
        await seen.wait()
    finally:
        unsubscribe()


# --- L1 -------------------------------------------------------------------------------------

async def bench_inproc_stop(tmp: Path, n: int) -> list[int]:
    scenario = _write(tmp / "stall.toml", STALL)
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


# --- ACP ------------------------------------------------------------------------------------

def _rpc(request_id: int | None, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        message["id"] = request_id
    return json.dumps(message).encode() + b"\n"


def _read_until(proc: subprocess.Popen, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("refagent acp ended its output early")
        message = json.loads(line)
        if predicate(message):
            return message


def bench_acp(tmp: Path, n: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """``refagent acp`` (inproc adapter): spawn -> initialize answered, spawn -> session/new
    answered, and session/cancel sent mid-stream -> the prompt answered ``cancelled``; next to
    a floor, the same interpreter spawned to echo one line back."""
    scenario = _write(tmp / "acp-stall.toml", STALL)
    agent = [str(Path(sys.executable).parent / "refagent"), "acp", "--adapter", "inproc", "--scenario", str(scenario),
             "--sessions-dir", str(tmp / "acp"), "--cwd", str(tmp)]
    echo = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.readline())"]
    opening = (_rpc(1, "initialize", {"protocolVersion": 1})
               + _rpc(2, "session/new", {"cwd": str(tmp), "mcpServers": []}))
    initialized: list[int] = []
    opened: list[int] = []
    cancelled: list[int] = []
    floor: list[int] = []
    for _ in range(n):
        t0 = time.monotonic_ns()
        proc = subprocess.Popen(agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        assert proc.stdin is not None
        try:
            proc.stdin.write(opening)
            proc.stdin.flush()
            _read_until(proc, lambda m: m.get("id") == 1)
            initialized.append(time.monotonic_ns() - t0)
            session_id = _read_until(proc, lambda m: m.get("id") == 2)["result"]["sessionId"]
            opened.append(time.monotonic_ns() - t0)
            proc.stdin.write(_rpc(3, "session/prompt", {"sessionId": session_id,
                                                         "prompt": [{"type": "text", "text": "go"}]}))
            proc.stdin.flush()
            _read_until(proc, lambda m: m.get("method") == "session/update")
            t1 = time.monotonic_ns()
            proc.stdin.write(_rpc(None, "session/cancel", {"sessionId": session_id}))
            proc.stdin.flush()
            answer = _read_until(proc, lambda m: m.get("id") == 3)
            cancelled.append(time.monotonic_ns() - t1)
            assert answer["result"] == {"stopReason": "cancelled"}, answer
            proc.stdin.close()
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        t0 = time.monotonic_ns()
        done = subprocess.run(echo, input=opening, capture_output=True, check=True)
        floor.append(time.monotonic_ns() - t0)
        assert done.stdout.startswith(opening.split(b"\n")[0])
    return initialized, opened, cancelled, floor


# --- L2 -------------------------------------------------------------------------------------

class ServerProcess:
    """``python -m fake_server`` in a process of its own; its records are read over HTTP."""

    def __init__(self, scenario: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "fake_server", "--scenario", str(scenario)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().decode().strip()  # http://127.0.0.1:PORT/v1
        self.root = self.base_url.removesuffix("/v1")
        self._after = 0

    async def wait_disconnect(self, http: aiohttp.ClientSession, request: int) -> dict[str, Any]:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            async with http.get(f"{self.root}/_stopbench/records", params={"after": self._after, "wait": 10}) as r:
                answer = await r.json()  # {"records_version": 2, "records": [...]}
            for record in answer["records"]:
                self._after = record["index"]
                if record.get("kind") == "disconnect" and record.get("request") == request:
                    return record
        raise TimeoutError(f"the server recorded no disconnect of request {request}")

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)


async def bench_http_stop(tmp: Path, n: int, adapter: str) -> tuple[list[int], list[int]]:
    closed, settled = [], []
    server = ServerProcess(_write(tmp / "stall-h.toml", STALL))
    try:
        async with aiohttp.ClientSession() as http:
            session = await open_session(sessions_dir=tmp / "s2", cwd=tmp, adapter=adapter, base_url=server.base_url,
                                         api_key="bench")
            for i in range(1, n + 1):
                turn = session.start_turn("go")
                await first_delta(session)
                t0 = time.monotonic_ns()
                turn.stop("user")
                ending = await turn.settled()
                disconnect = await server.wait_disconnect(http, i)
                closed.append(disconnect["mono_ns"] - t0)
                settled.append(ending["mono_ns"] - t0)
            await session.close()
    finally:
        server.close()
    return closed, settled


# --- L3 -------------------------------------------------------------------------------------

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


async def bench_tree_kill(tmp: Path, n: int, depth: int, fanout: int) -> tuple[list[int], list[int], list[int]]:
    """Stop inside a window tree: until its last process is gone, and until the tool result
    is written. Each sample is followed by a floor sample: the same tree, started by the
    benchmark and SIGKILLed by PID all at once, which is what the kernel's teardown of those
    Python processes costs by itself (taken alternately, so a change of the machine's load
    hits both alike)."""
    from fake_server.records import Window
    from fake_server.scenario import Window as WindowSpec
    from fake_server.shell import window_command

    gone, result, floor = [], [], []
    async with FakeServer(scenario=load_scenario(_write(tmp / "w.toml", ONE_TEXT))) as server:
        scenario = _write(tmp / f"window{depth}{fanout}.toml", WINDOW.format(depth=depth, fanout=fanout))
        session = await open_session(sessions_dir=tmp / "s3", cwd=tmp, adapter="inproc", scenario=str(scenario),
                                     base_url=server.beacon_url)
        results: list[dict[str, Any]] = []
        session.subscribe(lambda e: e["type"] == "tool_result" and results.append(e))
        command = window_command(WindowSpec(id="w", depth=depth, fanout=fanout, ignore_term=True, escape=True,
                                        hold_s=120), server.beacon_url)

        async def next_window(seen: int) -> list[int]:
            await asyncio.wait_for(server.records.wait_for(lambda r: len(server.records.of_kind("window")) > seen,
                                                           "window"), 60)
            window = server.records.of_kind("window")[-1]
            assert isinstance(window, Window)
            return [p.pid for p in window.pids]

        for _ in range(n):
            turn = session.start_turn("go")
            watch = ExitWatch(await next_window(len(server.records.of_kind("window"))))
            t0 = time.monotonic_ns()
            turn.stop("user")
            await turn.settled()
            result.append(results[-1]["mono_ns"] - t0)  # written once every process is gone
            gone.append(watch.last_exit() - t0)

            seen = len(server.records.of_kind("window"))
            shell = subprocess.Popen(["bash", "-c", command], cwd=tmp, start_new_session=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            pids = await next_window(seen)
            watch = ExitWatch(pids)
            t0 = time.monotonic_ns()
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            floor.append(watch.last_exit() - t0)
            shell.wait(10)
        await session.close()
    return gone, result, floor


# --- the long session ------------------------------------------------------------------------

SYLLABLES = "ka lo mi ne ru ta so fe pi du ar el in on ul bra cre dro fli gra pro stu tri ver zen".split()
CODE_WORDS = ("def return import class test assert error fail pass file path config parse load save cache index "
              "query token stream buffer socket request response session turn event log seq retry timeout "
              "signal process thread lock queue worker handler client server module package build deploy").split()


def generate_session(path: Path, events: int = 132_010) -> None:
    """A long session (24 MB at 132,010 events, as the published one) shaped like real work:
    turns of requests, assistant text with a bash call, its command and output, and a final
    answer. Words come from a 4,000-word vocabulary with Zipf-like frequencies, so the
    full-text index meets a realistic spread of terms. The size per event leaves ~25 bytes
    of text per event next to the envelope every event carries."""
    rng = random.Random(7)
    words_set = set(CODE_WORDS)
    while len(words_set) < 4000:
        words_set.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    vocab = sorted(words_set)
    rng.shuffle(vocab)
    cum = list(itertools.accumulate(1 / (i + 1) for i in range(len(vocab))))

    def words(mean: float) -> str:
        return " ".join(rng.choices(vocab, cum_weights=cum, k=max(1, int(rng.expovariate(1 / mean)))))

    def command() -> str:
        a, b = rng.choices(vocab, cum_weights=cum, k=2)
        return rng.choice((f"pytest -q tests/test_{a}.py", f"grep -rn {a} src/", f"sed -n 1,80p src/{a}/{b}.py",
                           f"git diff --stat -- src/{a}", f"ls -la src/{a}", f"python -m {a}.{b} --check"))

    def output() -> str:
        lines = [f"src/{rng.choice(vocab)}.py:{rng.randint(1, 900)}: {words(2)}"] if rng.random() < 0.35 else []
        lines.append(rng.choice(("ok", "1 failed, 12 passed", "error: no such file", "done")))
        return "\n".join(lines)

    header = {"format": "contract-log", "version": 1, "session_id": path.stem, "created": "2026-01-01T00:00:00.000000Z",
              "cwd": "/work", "model": "m", "adapter": "http", "parent": None}
    writer = LogWriter.create(path, header)
    turn = written = 0
    while written < events:
        turn += 1
        batch: list[tuple[str, dict[str, Any]]] = [("turn_started", {"turn": turn, "input": words(3), "inbox": []})]
        steps = rng.randint(1, 3)
        for step in range(1, steps + 2):
            request = {"model": "m", "stream": True, "n_messages": step}
            batch.append(("model_request", {"turn": turn, "step": step, "request": request}))
            if step > steps:
                batch.append(("assistant_message", {"turn": turn, "step": step, "text": words(6), "tool_calls": [],
                                                    "finish_reason": "stop", "interrupted": False}))
            else:
                cid, cmd = f"call_{turn}_{step}", command()
                call = {"id": cid, "name": "bash", "arguments": json.dumps({"command": cmd})}
                batch += [
                    ("assistant_message", {"turn": turn, "step": step, "text": words(2.5), "tool_calls": [call],
                                           "finish_reason": "tool_calls", "interrupted": False}),
                    ("tool_call", {"turn": turn, "step": step, "call_id": cid, "name": "bash",
                                   "arguments": {"command": cmd}}),
                    ("tool_started", {"turn": turn, "call_id": cid, "pid": 4242, "pgid": 4242}),
                    ("tool_result", {"turn": turn, "call_id": cid, "output": output(), "exit_code": 0,
                                     "aborted": False}),
                ]
            batch.append(("step_settled", {"turn": turn, "step": step}))
        batch.append(("turn_ended", {"turn": turn, "reason": "completed"}))
        for kind, fields in batch[: events - written]:
            writer.append(kind, **fields)
            written += 1
    writer.close()


# --- L5 -------------------------------------------------------------------------------------

def _decoders() -> dict[str, Callable[[bytes], Any]]:
    """Each candidate decoding every line of the body and nothing else."""
    candidates: dict[str, Callable[[bytes], Any]] = {
        "json": lambda body: [json.loads(line) for line in body.splitlines()],
        "msgspec": msgspec.json.Decoder().decode_lines,
    }
    try:
        import orjson
    except ImportError:
        print("   (orjson is not installed: pip install -e '.[bench]' to see it among the floors)")
    else:
        candidates["orjson"] = lambda body: [orjson.loads(line) for line in body.splitlines()]
    return candidates


def _timed(fn: Callable[[], Any]) -> int:
    """One run of ``fn`` with the cyclic GC off (as the agent decodes), its result freed
    outside the timing."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.monotonic_ns()
        result = fn()
        elapsed = time.monotonic_ns() - t0
    finally:
        gc.enable()
    del result
    return elapsed


def _decode_in_chunks(data: bytes, start: int, decoder: msgspec.json.Decoder) -> None:
    """``decoder`` over the body a ``log.CHUNK_BYTES`` chunk at a time, each result dropped:
    the decoding a load does, without its checks, its replay or the history it builds."""
    decode_lines, view = decoder.decode_lines, memoryview(data)
    while start < len(data):
        stop = data.rfind(b"\n", start, start + log.CHUNK_BYTES) + 1 or len(data)
        decode_lines(view[start:stop])
        start = stop


async def bench_cold_load(tmp: Path, path: Path, repeats: int) -> None:
    data = path.read_bytes()
    body = data[data.index(b"\n") + 1:]
    decoders = _decoders()
    floors: dict[str, list[int]] = {name: [] for name in decoders}
    chunked: list[int] = []
    resume_decoder = events_decoder(new_state({}).handlers)
    loads: list[int] = []
    scenario = str(_write(tmp / "x.toml", ONE_TEXT))
    log.freeze_loaded = True  # as in the refagent process
    for _ in range(repeats):  # interleaved, so a change of the machine's load hits both alike
        for name, decode in decoders.items():
            floors[name].append(_timed(lambda decode=decode: decode(body)))
        chunked.append(_timed(lambda: _decode_in_chunks(data, data.index(b"\n") + 1, resume_decoder)))
        gc.collect()
        t0 = time.monotonic_ns()
        session = await open_session(sessions_dir=path.parent, cwd=tmp, adapter="inproc", scenario=scenario,
                                     resume=path.stem)
        session.state.history.messages()  # ready: the next request's history is built
        loads.append(time.monotonic_ns() - t0)
        await session.close()
        del session
    log.freeze_loaded = False
    assert path.read_bytes() == data, "loading wrote to the log"
    events = len(load(path).events)
    report("L5", f"cold load {events} events {len(data) / 1e6:.1f} MB", loads)
    best = min(floors, key=lambda name: median_ms(floors[name]))
    for name, samples in sorted(floors.items(), key=lambda kv: median_ms(kv[1])):
        note = "to dicts, parse only" + (", fastest" if name == best else "")
        report("L5", f"  floor: {name} decoding the same lines", samples, note)
    report("L5", "  msgspec to the resume's structs, in chunks", chunked,
           "the load's own decoding alone, each chunk dropped")
    ratio = median_ms(loads) / median_ms(floors[best])
    print(f"L5 load p50 {median_ms(loads):.1f} ms, floor ({best}) p50 {median_ms(floors[best]):.1f} ms: "
          f"ratio {ratio:.2f} (aim <= 1.5); to its own decoding alone {median_ms(loads) / median_ms(chunked):.2f}")


# --- L6 -------------------------------------------------------------------------------------

BARE_FTS5 = "CREATE VIRTUAL TABLE idx USING fts5(body)"


def _bare_fts5(create: str, pairs: list[tuple[int, str]]) -> None:
    """The rows into a new in-memory FTS5 table, in one transaction, by one executemany."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.execute(create)
    db.execute("BEGIN")
    db.executemany("INSERT INTO idx(rowid, body) VALUES (?, ?)", pairs)
    db.execute("COMMIT")
    db.close()


class _Dropped:
    """A replay target that decodes what the search index reads and drops it."""

    def __init__(self, header: dict[str, Any]):
        self.handlers = dict.fromkeys(Indexer(header).handlers, _drop)


def _drop(event: Any) -> None:
    pass


def bench_index(path: Path, repeats: int) -> None:
    events = load(path).events
    everything = Indexer.of_events(events)
    sizes = {name: [0, 0] for name in FIELDS}  # rows, UTF-8 bytes
    for (_, text), kind in zip(everything.rows, everything.types, strict=True):
        sizes[FIELD_OF[kind]][0] += 1
        sizes[FIELD_OF[kind]][1] += len(text.encode())
    print("L6 indexed: " + ", ".join(f"{name} {n} rows {b / 1e6:.2f} MB" for name, (n, b) in sizes.items()))
    for label, fields in (("user+assistant text", ("user", "assistant")), ("+ tool commands and outputs", FIELDS)):
        indexer = Indexer.of_events(events, fields)
        collect, build, plain, floor = [], [], [], []
        for _ in range(repeats):  # interleaved
            collect.append(_timed(lambda fields=fields: Indexer.of_events(events, fields)))
            build.append(_timed(lambda indexer=indexer: SearchIndex(indexer).close()))
            plain.append(_timed(lambda rows=indexer.rows: _bare_fts5(BARE_FTS5, rows)))
            floor.append(_timed(lambda rows=indexer.rows: _bare_fts5(CREATE_INDEX, rows)))
        text_mb = sum(len(t.encode()) for _, t in indexer.rows) / 1e6
        report("L6", f"index rebuild: {label}", build, f"{len(indexer.rows)} rows, {text_mb:.2f} MB; aim "
               f"{AIMS['L6']} for the message text; published {PUBLISHED['L6']}")
        report("L6", "  bare FTS5, its defaults, one executemany", plain,
               "the same rows; also stores each text and a size row")
        report("L6", "  floor: bare FTS5, the index's settings", floor,
               "the same rows, contentless, no sizes")
        report("L6", "  collecting those rows from the loaded events", collect, "before either, from dicts")


def bench_search(path: Path, repeats: int) -> None:
    searched, loaded = [], []
    for _ in range(repeats):
        searched.append(_timed(lambda: SearchIndex.of_log(path).close()))
        loaded.append(_timed(lambda: load(path, replay=_Dropped)))
    report("L6", "refagent search: load + index, all text", searched, "rows collected while decoding")
    report("L6", "  the same load alone (decode, check)", loaded, "the same fields decoded, then dropped")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args()
    n, n_tree, repeats = (30, 5, 3) if args.quick else (300, 25, 7)
    with tempfile.TemporaryDirectory(prefix="refagent-bench-") as d:
        tmp = Path(d)
        print(f"refagent benchmark (python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}); "
              f"loadavg {loadavg()}", flush=True)
        report("L1", "inproc: stop -> settlement", await bench_inproc_stop(tmp, n))
        initialized, opened, cancelled, floor = bench_acp(tmp, n_tree)
        report("ACP", "acp: spawn -> initialize answered", initialized, "startup")
        report("ACP", "acp: spawn -> session/new answered", opened, "startup and a new log")
        report("ACP", "  floor: python spawn -> one line echoed", floor, "the interpreter's own start")
        report("ACP", "acp: session/cancel -> prompt answered", cancelled, "inproc, mid-stream")
        for adapter in ("http", "openai-sdk"):
            closed, settled = await bench_http_stop(tmp, n, adapter)
            report("L2", f"{adapter}: stop -> server sees socket closed", closed)
            report("L2", f"{adapter}: stop -> settlement", settled)
        for depth, fanout, size in ((1, 1, 4), (2, 2, 9)):
            gone, result, floor = await bench_tree_kill(tmp, n_tree, depth, fanout)
            report("L3", f"bash: stop -> tree of {size} gone", gone)
            report("L3", f"bash: stop -> tree of {size}: tool result", result)
            report("L3", f"  floor: tree of {size} SIGKILLed directly -> gone", floor, "the kernel's teardown alone")
        path = tmp / "sessions" / "s-big.jsonl"
        generate_session(path)
        await bench_cold_load(tmp, path, repeats)
        bench_index(path, repeats)
        bench_search(path, repeats)
        print(f"loadavg {loadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
