"""How fast a bash window opens: tool command started → the server has the window record.

    python benchmarks/window_bench.py [--trials N] [--depth D] [--fanout F] [--hogs N] [--hog-s S]

A task interrupts inside a window only once the window's beacon has arrived, so this is the
time a task races the agent's tool. Each trial starts the window command the way an agent's
shell tool does (``bash -c '<python> -m fake_server.window …'``), waits for the ``window``
record in a FakeServer running in this process, then kills the tree. The window's shape is the
interrupt-cancel task's (depth 2, one SIGTERM-ignorer, one setsid escapee) unless told otherwise.

It prints p50/p99/max with n, first on the machine as it is, then with ``--hogs`` CPU-bound
processes it starts itself (busy loops bounded to ``--hog-s`` seconds, ended by PID when the
run ends), each figure beside ``/proc/loadavg`` read before and after it. It prints, never asserts.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from fake_server import FakeServer
from fake_server.scenario import Window
from fake_server.shell import window_command

HOG = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages and the tasks runnable now / all tasks (the
    averages lag a short run; the runnable count does not)."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:4])


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def open_times(server: FakeServer, cwd: str, trials: int, shape: dict, prefix: str) -> list[float]:
    """Milliseconds from starting the tool command to holding the window record, per trial.
    Window ids start with ``prefix``, unique per call: a wait finds an earlier record too."""
    times = []
    for n in range(trials):
        window_id = f"{prefix}{n}"
        command = window_command(Window(id=window_id, hold_s=60, **shape), server.beacon_url)
        started = time.monotonic_ns()
        shell = subprocess.Popen(["bash", "-c", command], cwd=cwd, stdout=subprocess.DEVNULL,
                                 start_new_session=True)
        record = None
        try:
            async with asyncio.timeout(60):
                record = await server.records.wait_window(window_id)
            times.append((time.monotonic_ns() - started) / 1e6)
        finally:
            for proc in record.pids if record is not None else []:
                try:
                    os.kill(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            shell.kill()
            shell.wait()
    return times


def report(label: str, times: list[float], load_before: str) -> None:
    print(f"{label}: n={len(times)} p50 {percentile(times, 50):.1f} ms, p99 {percentile(times, 99):.1f} ms, "
          f"max {max(times):.1f} ms (mean {statistics.mean(times):.1f} ms); "
          f"loadavg before {load_before}, after {loadavg()}", flush=True)


async def main(trials: int, shape: dict, hogs: int, hog_s: float) -> None:
    with tempfile.TemporaryDirectory() as cwd:
        async with FakeServer() as server:
            await open_times(server, cwd, 3, shape, "warm")     # warm the caches (.pyc, page cache)
            before = loadavg()
            report("as the machine is", await open_times(server, cwd, trials, shape, "quiet"), before)
            if hogs <= 0:
                return
            started = []
            try:
                for _ in range(hogs):
                    started.append(subprocess.Popen([sys.executable, "-c", HOG.format(seconds=hog_s)]))
                await asyncio.sleep(1.0)                    # let the hogs take the CPUs before measuring
                before = loadavg()
                report(f"with {hogs} CPU hogs", await open_times(server, cwd, trials, shape, "hogs"), before)
            finally:
                for hog in started:
                    hog.kill()
                    hog.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=40, help="windows opened per condition (default 40)")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--fanout", type=int, default=1)
    parser.add_argument("--plain", action="store_true", help="no SIGTERM-ignorer and no escapee")
    parser.add_argument("--hogs", type=int, default=3, help="CPU hogs for the second condition (default 3; 0: none)")
    parser.add_argument("--hog-s", type=float, default=120.0, help="upper bound of each hog's life (default 120 s)")
    args = parser.parse_args()
    tree = {"depth": args.depth, "fanout": args.fanout, "ignore_term": not args.plain, "escape": not args.plain}
    asyncio.run(main(args.trials, tree, args.hogs, args.hog_s))
