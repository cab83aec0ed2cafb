"""How long the harness takes to absorb what an agent prints: a child process writes N MB to its
stdout and the drivers' reader (``harness.drivers.output.pump`` into an ``OutputBuffer``) takes it
in, alone and with a waiter looking for a line that only comes at the end (what the terminal
driver does while it waits for a prompt).

    python benchmarks/output_absorb.py [--mb 40] [--line 100]

Printed per case: seconds from the child's start to the end of its output, MB/s, and what the
buffer kept; then ``/proc/loadavg`` before and after, since on a busy machine every figure moves
with it. The printer itself (a Python loop writing lines) is timed alone first, into /dev/null.
"""
from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness.drivers.output import OutputBuffer, pump  # noqa: E402

END = "== printed everything =="


def printer(mb: float, line: int) -> list[str]:
    lines = int(mb * 1024 * 1024) // line
    code = (f"import sys\nrow = 'x' * {line - 1} + '\\n'\nw = sys.stdout.write\n"
            f"for _ in range({lines}): w(row)\nw({END!r} + '\\n')\n")
    return [sys.executable, "-c", code]


async def absorb(argv: list[str], waiting: bool) -> tuple[float, OutputBuffer]:
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    buffer = OutputBuffer()
    waiter = asyncio.ensure_future(buffer.wait_for(END, what="the end line")) if waiting else None
    await pump(proc.stdout, buffer)
    if waiter is not None:
        await waiter
    await proc.wait()
    return time.monotonic() - started, buffer


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=40, help="megabytes printed (default 40)")
    parser.add_argument("--line", type=int, default=100, help="characters per line (default 100)")
    args = parser.parse_args(argv)
    command = printer(args.mb, args.line)
    print(f"loadavg before: {loadavg()}")
    started = time.monotonic()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
    print(f"the printer alone, into /dev/null: {time.monotonic() - started:.2f} s")
    for waiting in (False, True):
        seconds, buffer = asyncio.run(absorb(command, waiting))
        what = "with a waiter for the last line" if waiting else "pump alone"
        print(f"{args.mb:g} MB absorbed, {what}: {seconds:.2f} s ({args.mb / seconds:.1f} MB/s); "
              f"buffer kept {len(buffer.text) / 1e6:.1f} MB of {buffer.end / 1e6:.1f} MB")
    print(f"loadavg after: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
