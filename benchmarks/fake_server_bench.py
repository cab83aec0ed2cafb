"""The fake server must never be the bottleneck: its throughput and disconnect detection, side by
side with its best peer, aimock (npm ``@copilotkit/aimock``), in one run.

    python benchmarks/fake_server_bench.py [--chars N] [--rounds N] [--trials N]
                                           [--no-aimock] [--aimock-prefix DIR]

Both servers run as their own processes on 127.0.0.1 (``python -m fake_server``; aimock's
``llmock`` CLI, ``dist/cli.js``, installed with ``npm install --prefix <tmp>`` when the registry
is reachable — skipped, with the reason, otherwise). The same client (aiohttp, raw SSE) drives
both, alternating one run on each, and the table says:

- chunks/s and MB/s of one long streamed Chat Completions text in 4-character chunks with no
  pacing, first byte to last, p50 over ``--rounds``. Both servers flush a chunk in the pass of
  their event loop that made it: Node's HTTP stream corks the ``res.write`` calls of one tick
  into one socket write (and buffers without bound), and stopbench's server makes up to
  ``fake_server.sse_out.BURST`` chunks and hands them to its transport in one write, with a loop
  pass after them and waiting while the transport is paused. A third row, the ceiling, is a bare
  asyncio protocol writing the same chunk the same way and doing nothing else: what this way of
  writing reaches in Python on this machine;
- client disconnect → the server's own trace of it, p50/p90/p99/max over ``--trials`` stalled
  streams. The client of these is a raw blocking socket for both servers: it stamps
  ``time.monotonic_ns()`` right before ``shutdown(SHUT_RDWR)``, the syscall that sends the FIN and
  so the first moment a server can know. (An HTTP client library's ``close`` only asks its loop to
  close the socket on a later pass: measured from there, a figure includes the client's own
  delay.) stopbench's server stamps a ``disconnect`` record (``time.monotonic_ns()``, the clock
  every process on the host shares), read back afterwards. aimock logs nothing when a client goes
  away and journals nothing with a time; its one trace is the ``destroyed`` outcome of its
  ``aimock_requests_total`` counter (``--metrics``), so it is timed by polling ``/metrics`` back
  to back: it noticed after the last poll that did not show it was sent and before the first
  that did came back — both bounds are printed.
- ``/proc/loadavg`` before and after: on a busy machine every figure here is a scheduling figure.

``--concurrent`` measures instead whether the server keeps scripted time under concurrency:
``--streams`` (1,000) paced streams, ``--at-once`` (200) open at a time, each scripted to last
``--scripted-s`` (1 s: 50 chunks, one every 20 ms). The client is raw asyncio sockets, so its
own cost per chunk is a fraction of the server's. It prints streams/s (the script allows
``at-once / scripted-s``), each stream's duration request → last byte (p50/p90/max, against
its scripted length) and what the server recorded of its own lateness (``late`` records: how
many, and the worst). ``--baseline DIR`` runs the same against the fake server of another
checkout (``DIR/fake_server``) too, in turn, and prints both side by side.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from fake_server.records import RECORDS_VERSION
from fake_server.sse_out import BURST

SCENARIO = """
name = "bench"
[[responses]]
match = {{ contains = "long" }}
repeat = true
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
AIMOCK_PACKAGE = "@copilotkit/aimock"
DESTROYED = re.compile(r'aimock_requests_total\{method="POST",path="/v1/chat/completions",status="destroyed"\} (\d+)')
START_FAILSAFE_S = 30.0
AIM_RATIO = 1.0  # stopbench's throughput at least aimock's
AIM_DISCONNECT_MS = 0.5  # p50


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def body(prompt: str) -> dict:
    return {"model": "bench", "stream": True, "messages": [{"role": "user", "content": prompt}]}


@dataclass
class Server:
    name: str
    base: str  # root URL, no /v1
    proc: subprocess.Popen
    version: str = ""
    rates: list[float] = field(default_factory=list)  # chunks/s of each long stream
    mbps: list[float] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)  # ms, disconnect → trace (stopbench)
    lower: list[float] = field(default_factory=list)  # ms, aimock: bounds of the same
    upper: list[float] = field(default_factory=list)

    def stop(self) -> None:
        """End the server process (and only it), by its handle."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


# --- starting the servers ---------------------------------------------------------------------


def start_python_server(argv: list[str], what: str) -> tuple[subprocess.Popen, str]:
    """A server process that prints its URL as its first line: the process and that URL."""
    proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("http://127.0.0.1:"):
        proc.kill()
        proc.wait()
        raise SystemExit(f"the {what} did not start (first line {line!r})")
    return proc, line


def start_stopbench(scenario: Path) -> Server:
    proc, url = start_python_server(["-m", "fake_server", "--scenario", str(scenario)], "fake server")
    return Server("stopbench fake server", url.removesuffix("/v1"), proc)


CEILING = r"""
import asyncio, sys

CHUNK = sys.argv[2].encode()
BURST = int(sys.argv[3])
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"


class Stream(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.received, self.resumed, self.task = transport, b"", None, None

    def data_received(self, data):
        self.received += data
        head, found, rest = self.received.partition(b"\r\n\r\n")
        sizes = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
        if found and len(rest) >= sum(sizes) and self.task is None:
            self.task = asyncio.get_running_loop().create_task(self.stream(int(sys.argv[1])))

    def pause_writing(self):
        self.resumed = asyncio.get_running_loop().create_future()

    def resume_writing(self):
        self.resumed.set_result(None)
        self.resumed = None

    async def stream(self, chunks):
        write = self.transport.write
        write(HEAD)
        for start in range(0, chunks, BURST):
            burst = CHUNK * min(BURST, chunks - start)
            write(b"%x\r\n%b\r\n" % (len(burst), burst))
            if self.resumed is not None:
                await self.resumed
            else:
                await asyncio.sleep(0)
        write(b"0\r\n\r\n")
        self.transport.close()


async def main():
    server = await asyncio.get_running_loop().create_server(Stream, "127.0.0.1", 0)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Future()

asyncio.run(main())
"""
# One chunk as stopbench's server sends it (the same size), for the ceiling to repeat.
CEILING_CHUNK = ('data: {"id":"chatcmpl-000000000001","object":"chat.completion.chunk","created":1764600000,'
                 '"model":"bench","choices":[{"index":0,"delta":{"content":"abcd"},"logprobs":null,'
                 '"finish_reason":null}]}\n\n')


def start_ceiling(chars: int) -> Server:
    """The ceiling of writing chunks as the server does: a bare protocol that writes the same
    chunk ``chars // 4`` times, ``BURST`` to a write with a loop pass after each, waiting while
    the transport is paused — the server's writing with nothing else around it."""
    proc, url = start_python_server(["-c", CEILING, str(chars // 4), CEILING_CHUNK, str(BURST)], "ceiling server")
    return Server("ceiling", url, proc)


def install_aimock(prefix: Path) -> tuple[Path | None, str]:
    """aimock's llmock CLI under ``prefix`` (installing it there if needed), or why not."""
    cli = prefix / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
    if not cli.is_file():
        if shutil.which("npm") is None or shutil.which("node") is None:
            return None, "node/npm not installed"
        try:
            out = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                                  "--loglevel", "error", AIMOCK_PACKAGE], capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return None, "npm install did not finish within 300 s (registry unreachable?)"
        if out.returncode != 0 or not cli.is_file():
            return None, f"npm install {AIMOCK_PACKAGE} failed: {(out.stderr or out.stdout).strip()[-300:]}"
    return cli, ""


def start_aimock(cli: Path, workdir: Path, chars: int) -> Server:
    fixtures = workdir / "aimock-fixtures.json"
    fixtures.write_text(json.dumps({"fixtures": [
        {"match": {"userMessage": "long"}, "response": {"content": "abcd" * (chars // 4)},
         "chunkSize": 4, "latency": 0},
        # First chunk at once (ttft 0), the next after 10^6 s (tps 0.001): a stream held open.
        {"match": {"userMessage": "stall"}, "response": {"content": "ready, then nothing for a long time"},
         "chunkSize": 8, "streamingProfile": {"ttft": 0, "tps": 0.001}},
    ]}))
    log = workdir / "aimock.log"  # a file, not a pipe nobody reads once it has started
    with open(log, "w") as out:
        proc = subprocess.Popen(["node", str(cli), "--port", "0", "--host", "127.0.0.1", "--fixtures", str(fixtures),
                                 "--metrics", "--log-level", "info"], stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_FAILSAFE_S
    while time.monotonic() < deadline and proc.poll() is None:
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", log.read_text())
        if match:
            package = json.loads((cli.parents[1] / "package.json").read_text())
            return Server("aimock", match.group(1), proc, version=package.get("version", "?"))
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise SystemExit(f"aimock did not start: {log.read_text()[-500:]}")


# --- what is measured ----------------------------------------------------------------------------


async def throughput(http: aiohttp.ClientSession, server: Server, chars: int) -> None:
    async with http.post(f"{server.base}/v1/chat/completions", json=body("long")) as resp:
        first = None
        size = 0
        events = 0
        tail = b""
        async for block in resp.content.iter_any():
            first = first or time.perf_counter()
            size += len(block)
            joined = tail + block
            events += joined.count(b"data: ")
            tail = joined[-5:]
        elapsed = time.perf_counter() - first if first else float("nan")
    chunks = chars // 4
    if events < chunks:
        raise SystemExit(f"{server.name}: {events} SSE events for a text of {chunks} chunks")
    server.rates.append(chunks / elapsed)
    server.mbps.append(size / elapsed / 1e6)


async def fetch_records(http: aiohttp.ClientSession, base: str, after: int, wait: float = 0) -> list[dict]:
    async with http.get(f"{base}/_stopbench/records", params={"after": str(after), "wait": str(wait)}) as resp:
        answer = await resp.json()
    if answer.get("records_version") != RECORDS_VERSION:
        raise SystemExit(f"the server answers records version {answer.get('records_version')}, "
                         f"this benchmark reads {RECORDS_VERSION}")
    return answer["records"]


def open_stalled(base: str) -> socket.socket:
    """A raw socket whose streamed answer to the "stall" prompt has begun (its first event is in):
    a blocking socket, so the benchmark's stamp is taken right before the syscall that hangs up."""
    host, _, port = base.removeprefix("http://").partition(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    payload = json.dumps(body("stall")).encode()
    sock.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
    received = b""
    while b"\n\n" not in received.partition(b"\r\n\r\n")[2]:
        block = sock.recv(65536)
        if not block:
            raise SystemExit(f"{base} closed the stalled stream before its first event")
        received += block
    return sock


def hang_up(sock: socket.socket) -> int:
    """Hang up now: the stamp, then the shutdown that sends the FIN (the moment the server can
    first know), then the close."""
    closed = time.monotonic_ns()
    sock.shutdown(socket.SHUT_RDWR)
    sock.close()
    return closed


async def stopbench_disconnect(http: aiohttp.ClientSession, server: Server, seen: list[int]) -> tuple[int, int]:
    """One stalled stream closed by the client: (request number, hang-up time)."""
    sock = open_stalled(server.base)  # the first chunk is in: the stream is stalled
    records = await fetch_records(http, server.base, seen[0])
    seen[0] = records[-1]["index"] if records else seen[0]
    request = max(r["request"] for r in records if r["kind"] == "request")
    return request, hang_up(sock)


class MetricsPoller:
    """``GET /metrics`` over one kept-alive raw connection: a round trip of a few hundred
    microseconds, where an HTTP client library's would be a millisecond — the poll's round trip
    is the resolution of aimock's figure."""

    def __init__(self, base: str):
        self.host, _, port = base.removeprefix("http://").partition(":")
        self.port = int(port)
        self.request = f"GET /metrics HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n\r\n".encode()
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def destroyed(self) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(self.request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?i)content-length:\s*(\d+)", head)
        if length:
            text = await self.reader.readexactly(int(length.group(1)))
        else:  # chunked
            text = b""
            while size := int((await self.reader.readuntil(b"\r\n")).strip(), 16):
                text += await self.reader.readexactly(size + 2)
            await self.reader.readuntil(b"\r\n")
        match = DESTROYED.search(text.decode())
        return int(match.group(1)) if match else 0

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


async def aimock_disconnect(poll: MetricsPoller, server: Server) -> None:
    before = await poll.destroyed()
    sock = open_stalled(server.base)
    closed = hang_up(sock)
    last_not_yet = closed
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        sent = time.monotonic_ns()
        count = await poll.destroyed()
        if count > before:
            server.lower.append((last_not_yet - closed) / 1e6)
            server.upper.append((time.monotonic_ns() - closed) / 1e6)
            return
        last_not_yet = sent
    raise SystemExit("aimock never counted the closed stream as destroyed")


async def collect_stopbench(http: aiohttp.ClientSession, server: Server, closed_at: dict[int, int]) -> None:
    deadline = time.monotonic() + 60
    seen: dict[int, int] = {}
    after = 0
    while len(seen) < len(closed_at) and time.monotonic() < deadline:
        records = await fetch_records(http, server.base, after, wait=5)  # long poll: returns on new records
        for r in records:
            after = r["index"]
            if r["kind"] == "disconnect":
                seen[r["request"]] = r["mono_ns"]
    missing = sorted(set(closed_at) - set(seen))
    if missing:
        raise SystemExit(f"no disconnect record for requests {missing[:10]}")
    server.delays += [(seen[n] - closed_at[n]) / 1e6 for n in closed_at]


async def measure(servers: list[Server], ceiling: Server, chars: int, rounds: int, trials: int) -> None:
    connector = aiohttp.TCPConnector(force_close=True)
    poll = MetricsPoller(servers[-1].base)
    async with aiohttp.ClientSession(connector=connector) as http:
        for _ in range(rounds):  # alternating, so drift in the machine's load falls on all
            for server in [*servers, ceiling]:
                await throughput(http, server, chars)
        closed_at: dict[int, int] = {}
        seen = [0]
        for _ in range(trials):
            for server in servers:
                if server.name == "aimock":
                    await aimock_disconnect(poll, server)
                else:
                    request, closed = await stopbench_disconnect(http, server, seen)
                    closed_at[request] = closed
        await collect_stopbench(http, servers[0], closed_at)
    await poll.close()


# --- scripted time under concurrency ----------------------------------------------------------------

PACED = """
name = "concurrent"
[[responses]]
repeat = true
[[responses.frames]]
text = "{text}"
chunk = 4
interval_s = {interval}
"""
CONCURRENT_CHUNKS = 50


@dataclass
class Concurrency:
    name: str
    wall_s: float = 0.0
    durations: list[float] = field(default_factory=list)  # s, request sent → last byte, each stream
    late: list[float] = field(default_factory=list)  # ms, each ``late`` record the server kept
    load: tuple[str, str] = ("", "")


async def paced_stream(base: str, sizes: list[int]) -> float:
    """One streamed answer read to its end over a raw socket: request sent → last byte, in s."""
    host, _, port = base.removeprefix("http://").partition(":")
    payload = json.dumps(body("paced")).encode()
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload)
    received = b""
    while not received.endswith(b"\r\n0\r\n\r\n"):
        block = await reader.read(65536)
        if not block:
            break
        received += block
    ended = time.perf_counter()
    writer.close()
    if b"data: [DONE]" not in received:
        raise SystemExit(f"a paced stream ended without [DONE]: {received[-200:]!r}")
    sizes.append(len(received))
    return ended - started


async def concurrent_run(base: str, streams: int, at_once: int) -> tuple[float, list[float]]:
    gate = asyncio.Semaphore(at_once)
    sizes: list[int] = []

    async def one() -> float:
        async with gate:
            return await paced_stream(base, sizes)

    started = time.perf_counter()
    durations = await asyncio.gather(*(one() for _ in range(streams)))
    return time.perf_counter() - started, list(durations)


async def late_records(base: str) -> list[float]:
    """The lateness (ms) of every ``late`` record the server kept (none from a server that
    keeps no such records)."""
    async with aiohttp.ClientSession() as http:
        records = await fetch_records(http, base, 0)
    return [r["late_ns"] / 1e6 for r in records if r["kind"] == "late"]


def measure_concurrency(name: str, checkout: Path | None, work: Path, streams: int, at_once: int,
                        scripted_s: float) -> Concurrency:
    scenario = work / "paced.toml"
    scenario.write_text(PACED.format(text="abcd" * CONCURRENT_CHUNKS, interval=scripted_s / CONCURRENT_CHUNKS))
    result = Concurrency(name)
    before = loadavg()
    argv = ["-m", "fake_server", "--scenario", str(scenario)]
    if checkout is not None:  # the server of another checkout: its folder first on the path
        argv = ["-c", f"import sys; sys.path.insert(0, {str(checkout)!r}); sys.argv[0] = 'fake_server'; "
                      "import runpy; runpy.run_module('fake_server', run_name='__main__')", "--scenario", str(scenario)]
    proc, url = start_python_server(argv, f"fake server ({name})")
    server = Server(name, url.removesuffix("/v1"), proc)
    try:
        result.wall_s, result.durations = asyncio.run(concurrent_run(server.base, streams, at_once))
        result.late = asyncio.run(late_records(server.base))
    finally:
        server.stop()
    result.load = (before, loadavg())
    return result


def concurrency_table(results: list[Concurrency], streams: int, at_once: int, scripted_s: float) -> str:
    def s(values: list[float], q: float) -> str:
        return f"{percentile(values, q):.2f} s"

    rows = [("", *(r.name for r in results))]
    rows.append((f"streams/s (the script allows {at_once / scripted_s:.0f})",
                 *(f"{streams / r.wall_s:.1f}" for r in results)))
    rows.append((f"stream duration p50 / p90 / max (scripted {scripted_s:g} s)",
                 *(f"{s(r.durations, 50)} / {s(r.durations, 90)} / {max(r.durations):.2f} s" for r in results)))
    rows.append(("late records: count, worst",
                 *(f"{len(r.late)}, {max(r.late):.1f} ms" if r.late else "none" for r in results)))
    rows.append(("loadavg before → after", *(f"{r.load[0]} → {r.load[1]}" for r in results)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    head = (f"scripted time under concurrency — {streams} streams of {CONCURRENT_CHUNKS} chunks, "
            f"{at_once} at a time, raw-socket client")
    return "\n".join([head, *lines]) + "\n"


# --- the table ----------------------------------------------------------------------------------


def ms(values: list[float]) -> str:
    return (f"{percentile(values, 50):.3f} / {percentile(values, 90):.3f} / {percentile(values, 99):.3f} / "
            f"{max(values):.3f} ms")


def table(servers: list[Server], ceiling: Server, skipped: str, chars: int, rounds: int, trials: int,
          load: tuple[str, str]) -> str:
    ours = servers[0]
    peer = servers[1] if len(servers) > 1 else None
    rows = [("", ours.name, f"aimock {peer.version}" if peer else "aimock", "stopbench/aimock")]
    rate = statistics.median(ours.rates)
    peer_rate = statistics.median(peer.rates) if peer else None
    rows.append((f"long stream: {chars // 4} chunks of 4 chars, chunks/s (p50 of {rounds})", f"{rate:,.0f}",
                 f"{peer_rate:,.0f}" if peer_rate else "skipped",
                 f"{rate / peer_rate:.2f}× (aim ≥ {AIM_RATIO:.1f}×)" if peer_rate else "-"))
    ceiling_rate = statistics.median(ceiling.rates)
    rows.append((f"  ceiling: the same chunks, {BURST} to a transport.write, nothing else",
                 f"{ceiling_rate:,.0f} ({rate / ceiling_rate:.2f}× of it)", "-",
                 f"{ceiling_rate / peer_rate:.2f}×" if peer_rate else "-"))
    rows.append(("  MB/s of SSE", f"{statistics.median(ours.mbps):.1f}",
                 f"{statistics.median(peer.mbps):.1f}" if peer else "-", "-"))
    ours_p50 = percentile(ours.delays, 50)
    rows.append((f"client disconnect → recorded, p50 (n={trials})", f"{ours_p50:.3f} ms (aim ≤ {AIM_DISCONNECT_MS} ms)",
                 f"{percentile(peer.lower, 50):.3f}–{percentile(peer.upper, 50):.3f} ms" if peer else "skipped",
                 f"{ours_p50 / percentile(peer.upper, 50):.2f}× of its upper bound" if peer else "-"))
    rows.append(("  p50 / p90 / p99 / max", ms(ours.delays), f"≤ {ms(peer.upper)}" if peer else "-", "-"))
    if peer:
        rows.append(("  aimock's lower bound (last poll that did not show it)", "-", f"≥ {ms(peer.lower)}", "-"))
    rows.append(("  how the server's noticing is seen", "its disconnect record's mono_ns",
                 "polled /metrics 'destroyed' counter" if peer else "-", "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    head = [f"fake server vs aimock — same client (aiohttp), alternating runs; loadavg {load[0]} before, "
            f"{load[1]} after"]
    if skipped:
        head.append(f"aimock skipped: {skipped}")
    return "\n".join(head + lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chars", type=int, default=400_000, help="length of the long text (default 400000)")
    parser.add_argument("--rounds", type=int, default=5, help="long streams on each server (default 5)")
    parser.add_argument("--trials", type=int, default=300, help="disconnect trials on each server (default 300)")
    parser.add_argument("--no-aimock", action="store_true", help="the fake server alone")
    parser.add_argument("--aimock-prefix", help="an npm prefix that has (or is to get) aimock; default a temp folder")
    parser.add_argument("--concurrent", action="store_true", help="scripted time under concurrency instead")
    parser.add_argument("--streams", type=int, default=1000, help="with --concurrent: streams in all (default 1000)")
    parser.add_argument("--at-once", type=int, default=200, help="with --concurrent: open at a time (default 200)")
    parser.add_argument("--scripted-s", type=float, default=1.0,
                        help="with --concurrent: scripted length of each stream (default 1 s)")
    parser.add_argument("--baseline", metavar="DIR", help="with --concurrent: also the fake server of this checkout")
    args = parser.parse_args()
    if args.concurrent:
        with tempfile.TemporaryDirectory(prefix="stopbench-bench-") as tmp:
            runs = [(f"baseline ({args.baseline})", Path(args.baseline).resolve())] if args.baseline else []
            results = [measure_concurrency(name, checkout, Path(tmp), args.streams, args.at_once, args.scripted_s)
                       for name, checkout in [*runs, ("this checkout", None)]]
        print(concurrency_table(results, args.streams, args.at_once, args.scripted_s), end="")
        return
    load_before = loadavg()
    with tempfile.TemporaryDirectory(prefix="stopbench-bench-") as tmp:
        work = Path(tmp)
        scenario = work / "bench.toml"
        scenario.write_text(SCENARIO.format(text="abcd" * (args.chars // 4)))
        servers = [start_stopbench(scenario)]
        ceiling = start_ceiling(args.chars)
        skipped = ""
        try:
            if args.no_aimock:
                skipped = "--no-aimock"
            else:
                cli, skipped = install_aimock(Path(args.aimock_prefix) if args.aimock_prefix else work / "npm")
                if cli is not None:
                    servers.append(start_aimock(cli, work, args.chars))
            asyncio.run(measure(servers, ceiling, args.chars, args.rounds, args.trials))
        finally:
            for server in [*servers, ceiling]:
                server.stop()
    print(table(servers, ceiling, skipped, args.chars, args.rounds, args.trials, (load_before, loadavg())), end="")


if __name__ == "__main__":
    main()
