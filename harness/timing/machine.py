"""What this machine costs a process, measured at the start of a run and kept in its results.

C3 (a stopped tree gone within 1 s) and C8 (``--timeout T`` exits within 1.5 s of T) have
absolute limits. They must be fair to a slow, shared CI machine, so every run measures what
a null agent costs here — a Python process spawned until it exits, and signalled until it
exits — and reports the figures beside the limits: a verdict can then be checked against
how busy the machine was. (docs/checks.md argues why the limits keep a wide margin.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

SAMPLES = 3
# Waits on its stdin, not pause(): if the harness dies, the pipe closes and it exits with it.
NULL_AGENT = "import sys; sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.buffer.read()"
FAILSAFE_S = 30.0


def null_agent_costs() -> dict[str, Any]:
    """Median ms of spawn → exit and of signal → exit for a bare Python process, with the load."""
    spawn_exit, signal_exit = [], []
    for _ in range(SAMPLES):
        t0 = time.monotonic_ns()
        subprocess.run([sys.executable, "-c", "pass"], check=False, timeout=FAILSAFE_S, stderr=subprocess.DEVNULL)
        spawn_exit.append((time.monotonic_ns() - t0) / 1e6)
        # Its stderr is nowhere: a Ctrl-C (the whole terminal group) or a dead harness (a closed
        # pipe) must not print a child's traceback onto the person's terminal.
        proc = subprocess.Popen([sys.executable, "-c", NULL_AGENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        try:
            assert proc.stdout is not None
            proc.stdout.readline()  # it is running and waiting: now the signal is what it costs
            t1 = time.monotonic_ns()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=FAILSAFE_S)
            signal_exit.append((time.monotonic_ns() - t1) / 1e6)
        finally:
            proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()
    return {"null_spawn_exit_ms": round(sorted(spawn_exit)[SAMPLES // 2], 2),
            "null_signal_exit_ms": round(sorted(signal_exit)[SAMPLES // 2], 2),
            "loadavg": list(os.getloadavg()), "cpus": os.cpu_count()}
