"""The "bash window": a scripted tool command with a known process tree and a beacon.

Run as ``python -m fake_server.window --id w1 [--depth D] [--fanout F] [--ignore-term]
[--escape] [--hold S] [--marker PATH] [--beacon URL]``. The root starts ``depth`` levels of
nested children (``fanout`` per level), optionally one child that ignores SIGTERM and one
that leaves the process group with ``setsid`` — the two ways real tool processes outlive a
careless kill. Once every process is running it posts a ``window`` record with each PID and
its start time, so the harness interrupts *inside* the window instead of guessing. It then
holds (bounded) and writes its marker file only if allowed to finish.

Children talk to their parent through a pipe (one JSON line each); nothing but the root
touches the tool's stdout, so the tool output is deterministic. Kept to the standard
library plus psutil: this runs inside every tool call, where start-up time counts.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

CHILD_GRACE_S = 5.0     # failsafe: children outlive a killed root by this much at most


def describe(pid: int, role: str) -> dict:
    proc = psutil.Process(pid)
    return {"pid": pid, "ppid": proc.ppid(), "pgid": os.getpgid(pid), "sid": os.getsid(pid),
            "create_time": proc.create_time(), "role": role}


def post(beacon: str | None, record: dict):
    if not beacon:
        return
    data = json.dumps({**record, "mono_ns": time.monotonic_ns(), "source": "window"}).encode()
    request = urllib.request.Request(f"{beacon.rstrip('/')}/_stopbench/beacon", data=data,
                                     headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=5).close()
    except OSError as exc:
        print(f"window: beacon not reachable ({exc})", file=sys.stderr)


def spawn(role: str, depth: int, fanout: int, hold: float) -> subprocess.Popen:
    args = [sys.executable, "-m", "fake_server.window", "--node", role,
            "--depth", str(depth), "--fanout", str(fanout), "--hold", f"{hold:g}"]
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)


def start_subtree(depth: int, fanout: int, hold: float, extra_roles: tuple[str, ...] = ()) -> list[dict]:
    """Start the children of this process and gather the PIDs of everything below it."""
    if depth <= 0 and not extra_roles:
        return []
    children = [spawn("child", depth - 1, fanout, hold) for _ in range(fanout if depth > 0 else 0)]
    children += [spawn(role, 0, 1, hold) for role in extra_roles]
    described = []
    for child in children:
        line = child.stdout.readline()
        if not line:
            raise SystemExit(f"window: a child process (pid {child.pid}) died before reporting")
        described += json.loads(line)
        child.stdout.close()
    return described


def node(role: str, depth: int, fanout: int, hold: float):
    """A non-root process of the tree: set itself up, report its subtree upward, hold."""
    if role == "term-ignorer":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif role == "escapee":
        os.setsid()
    below = start_subtree(depth, fanout, hold)
    sys.stdout.write(json.dumps([describe(os.getpid(), role)] + below) + "\n")
    sys.stdout.flush()
    time.sleep(hold + CHILD_GRACE_S)


def end_subtree(pids: list[dict]):
    """A window allowed to finish leaves nothing behind: end every process it started."""
    procs = []
    for p in pids:
        try:
            proc = psutil.Process(p["pid"])
            if abs(proc.create_time() - p["create_time"]) < 0.01:
                proc.kill()
                procs.append(proc)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)


def root(args):
    window_id = args.id
    marker = Path(args.marker or f"stopbench-window-{window_id}.done").absolute()

    def on_signal(signum, _frame):
        post(args.beacon, {"kind": "window_done", "window": window_id, "finished": False,
                           "signal": signal.Signals(signum).name})
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    extra = (("term-ignorer",) if args.ignore_term else ()) + (("escapee",) if args.escape else ())
    pids = [describe(os.getpid(), "root")] + start_subtree(args.depth, args.fanout, args.hold, extra)
    print(f"window {window_id}: open, {len(pids)} processes", flush=True)
    post(args.beacon, {"kind": "window", "window": window_id, "pids": pids, "marker": str(marker)})
    time.sleep(args.hold)
    marker.write_text(f"window {window_id} finished\n")
    end_subtree(pids[1:])
    post(args.beacon, {"kind": "window_done", "window": window_id, "finished": True})
    print(f"window {window_id}: done", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fake_server.window", description=__doc__.split("\n")[0])
    parser.add_argument("--id", default="w")
    parser.add_argument("--depth", type=int, default=1)
    parser.add_argument("--fanout", type=int, default=1)
    parser.add_argument("--hold", type=float, default=60.0)
    parser.add_argument("--ignore-term", action="store_true")
    parser.add_argument("--escape", action="store_true")
    parser.add_argument("--marker")
    parser.add_argument("--beacon")
    parser.add_argument("--node", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.hold = min(max(args.hold, 0.0), 600.0)
    if args.node:
        node(args.node, args.depth, args.fanout, args.hold)
    else:
        root(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
