"""How long ``stopbench`` takes to start: the median wall time and CPU time of each quick command.

    python benchmarks/startup_bench.py [--runs N] [--baseline DIR]

Each command (``--help``, ``list``, ``report --help``, ``gate --help``) runs ``--runs`` times as
its own process, after one run that is not counted; the table gives the median wall time and
the median CPU time (user + system) of those runs. The wall time is what a person waits; the
CPU time is what the command itself costs, and moves far less with the machine's load, which is
printed before and after (``/proc/loadavg``).

Bytecode is cached in a folder of this benchmark's own (``PYTHONPYCACHEPREFIX``; the uncounted
first run writes it), as it is for an installed wheel or any checkout run twice: without it
every run compiles every module it imports, which is a measure of the compiler, not of the
command. ``--no-bytecode`` times that case instead (``PYTHONDONTWRITEBYTECODE=1``: every run
compiles what it imports). ``--baseline DIR`` times the commands of another checkout too (``DIR/harness``), in
turn with this one, and prints both side by side.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (["--help"], ["list"], ["report", "--help"], ["gate", "--help"])
MAIN = "import sys; from harness.cli import main; sys.exit(main())"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """One run of ``argv`` in ``cwd``: its wall time and its CPU time (user + system), in s."""
    before = os.times()
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          check=False)
    wall = time.perf_counter() - started
    after = os.times()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-500:]}")
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="timed runs of each command (default 9)")
    parser.add_argument("--baseline", metavar="DIR", help="also the stopbench of this checkout")
    parser.add_argument("--no-bytecode", action="store_true", help="no bytecode cached: every run compiles")
    args = parser.parse_args()
    checkouts = [("this checkout", ROOT)]
    if args.baseline:
        checkouts.insert(0, (f"baseline ({args.baseline})", Path(args.baseline).resolve()))
    load_before = loadavg()
    with tempfile.TemporaryDirectory(prefix="stopbench-startup-") as cache:
        figures: dict[tuple[str, str], tuple[float, float]] = {}
        for command in COMMANDS:
            runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in checkouts}
            for n in range(args.runs + 1):  # run 0 writes the bytecode and is not counted
                for name, checkout in checkouts:  # in turn: a change of load falls on both
                    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
                    env.update(PYTHONPATH=str(checkout), PYTHONPYCACHEPREFIX=str(Path(cache) / name.split()[0]))
                    if args.no_bytecode:
                        env["PYTHONDONTWRITEBYTECODE"] = "1"
                    figure = timed([sys.executable, "-c", MAIN, *command], env, checkout)
                    if n:
                        runs[name].append(figure)
            for name, _ in checkouts:
                figures[(" ".join(command), name)] = (statistics.median(w for w, _ in runs[name]),
                                                      statistics.median(c for _, c in runs[name]))
    rows = [("stopbench COMMAND", *(name for name, _ in checkouts))]
    for command in COMMANDS:
        key = " ".join(command)
        rows.append((key, *(f"{figures[(key, name)][0]:.3f} s (CPU {figures[(key, name)][1]:.3f} s)"
                            for name, _ in checkouts)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    bytecode = "no bytecode cached (each run compiles)" if args.no_bytecode else "bytecode cached"
    print(f"start-up, median of {args.runs} runs each, {bytecode}; loadavg {load_before} before, "
          f"{loadavg()} after")
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
