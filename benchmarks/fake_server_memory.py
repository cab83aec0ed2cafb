"""What the fake server keeps in memory: its resident size after malformed requests, after many
large requests, and at its peak while it answers a full records poll.

    python benchmarks/fake_server_memory.py [--fuzz N] [--large N] [--large-mb MB]

The server runs as its own process (``python -m fake_server``) on 127.0.0.1, so its figures are
its own: ``VmRSS`` (resident now) and ``VmHWM`` (the peak so far) from ``/proc/<pid>/status``.
It gets, in order: ``--fuzz`` seeded malformed requests over the four wires (the adversarial
tests' generator); ``--large`` Chat Completions requests of ``--large-mb`` MB each, every one
with text of its own (an agent resending a long history with a large tool output); then one
records poll from the start. Printed: the resident size after each phase, the peak, the
records poll's size, and ``/proc/loadavg`` before and after — on a busy machine the figures move
with it. The server keeps a request body whole up to ``fake_server.bounded.KEEP_BODY_BYTES`` and
the fields the checks read past it (``docs/scenarios.md``, "What a request record keeps").
"""
from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "adversarial"))
from malformed_requests import requests  # noqa: E402

SCENARIO = 'name = "memory"\n[[responses]]\nrepeat = true\n[[responses.frames]]\ntext = "fine"\n'


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def mb(kb: int) -> str:
    return f"{kb / 1024:.1f} MB"


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def drive(url: str, pid: int, fuzz: int, large: int, large_mb: float) -> None:
    print(f"start: rss {mb(status_kb(pid, 'VmRSS'))}")
    async with aiohttp.ClientSession() as http:
        started = time.monotonic()
        statuses: dict[int, int] = {}
        for m in requests(seed=20261201, n=fuzz):
            async with http.post(url + m.path, data=m.data, headers=m.headers) as resp:
                await resp.read()
                statuses[resp.status] = statuses.get(resp.status, 0) + 1
        print(f"after {fuzz} malformed requests ({time.monotonic() - started:.1f} s, statuses "
              f"{dict(sorted(statuses.items()))}): rss {mb(status_kb(pid, 'VmRSS'))}")
        chars = int(large_mb * 1024 * 1024)
        for n in range(1, large + 1):
            text = f"{n:08d}" * (chars // 8)            # a text of its own: nothing shared between requests
            body = {"model": "m", "messages": [{"role": "user", "content": "read this"},
                                               {"role": "assistant", "content": "ok"},
                                               {"role": "user", "content": text}]}
            async with http.post(url + "/v1/chat/completions", json=body) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            if n % 10 == 0 or n == large:
                print(f"after {n} requests of {large_mb:g} MB: rss {mb(status_kb(pid, 'VmRSS'))}")
        async with http.get(url + "/_stopbench/records?after=0") as resp:
            size = len(await resp.read())
        print(f"after a full records poll ({size / 1e6:.1f} MB of JSON): rss {mb(status_kb(pid, 'VmRSS'))}, "
              f"peak {mb(status_kb(pid, 'VmHWM'))}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fuzz", type=int, default=3000, help="malformed requests (default 3000)")
    parser.add_argument("--large", type=int, default=40, help="large requests (default 40)")
    parser.add_argument("--large-mb", type=float, default=7.5, help="size of each large request (default 7.5)")
    args = parser.parse_args(argv)
    print(f"loadavg before: {loadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp, "memory.toml")
        scenario.write_text(SCENARIO)
        server = subprocess.Popen([sys.executable, "-m", "fake_server", "--scenario", str(scenario), "--seed", "m"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            assert server.stdout is not None
            base = server.stdout.readline().strip()
            asyncio.run(drive(base.removesuffix("/v1"), server.pid, args.fuzz, args.large, args.large_mb))
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"loadavg after: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
