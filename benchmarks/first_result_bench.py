"""How long ``stopbench run`` takes to show its first task run's result: the time from the
process's start to the first progress line, with the machine's load.

    python benchmarks/first_result_bench.py [--runs N] [--task NAME] [--driver NAME] [--baseline DIR]

Each run is ``stopbench run --agent reference --task TASK --driver DRIVER`` into a temporary
report folder, as its own process, with stderr a pipe (so the progress prints one line per
finished task run). The clock starts just before the process is spawned and stops when the first
progress line (``[####…] 1/N …``) arrives; the time to the process's exit is printed beside it.
The first run is not counted (it writes the bytecode cache). ``--baseline DIR`` times another
checkout (``DIR/harness``) too, in turn with this one. The load (``/proc/loadavg``) is printed
before and after: on a shared two-core machine every figure moves with it.
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
MAIN = "import sys; from harness.cli import main; sys.exit(main())"
FAILSAFE_S = 120.0


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def first_result(checkout: Path, task: str, driver: str) -> tuple[float, float]:
    """One ``stopbench run`` of ``checkout``: seconds to its first progress line, and to its exit."""
    with tempfile.TemporaryDirectory(prefix="stopbench-first-result-") as reports:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        argv = [sys.executable, "-c", MAIN, "run", "--agent", "reference", "--task", task, "--driver", driver,
                "--report-dir", reports]
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        assert proc.stderr is not None
        first = None
        seen: list[str] = []
        for line in proc.stderr:
            seen.append(line)
            if first is None and line.startswith("[") and " 1/" in line:
                first = time.perf_counter() - started
        code = proc.wait(timeout=FAILSAFE_S)
        ended = time.perf_counter() - started
        if first is None or code == 2:
            raise SystemExit(f"stopbench run exited {code} without a progress line: {''.join(seen)[-500:]}")
        return first, ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs (default 5)")
    parser.add_argument("--task", default="exit-codes", help="the task run (default exit-codes)")
    parser.add_argument("--driver", default="subprocess", help="its driver (default subprocess)")
    parser.add_argument("--baseline", metavar="DIR", help="also the stopbench of this checkout")
    args = parser.parse_args()
    checkouts = [("this checkout", ROOT)]
    if args.baseline:
        checkouts.append(("baseline", Path(args.baseline).resolve()))
    for _, checkout in checkouts:
        first_result(checkout, args.task, args.driver)  # not counted: the bytecode cache is written
    before = loadavg()
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in checkouts}
    for _ in range(args.runs):
        for name, checkout in checkouts:  # in turn: a change of load falls on both
            figures[name].append(first_result(checkout, args.task, args.driver))
    after = loadavg()
    print(f"stopbench run --agent reference --task {args.task} --driver {args.driver}: {args.runs} run(s) each; "
          f"load {before} before, {after} after ({os.cpu_count()} CPUs)")
    print(f"{'checkout':<16}{'first result p50':>18}{'min':>8}{'max':>8}{'exit p50':>10}")
    for name, runs in figures.items():
        firsts = [f for f, _ in runs]
        print(f"{name:<16}{statistics.median(firsts):>17.2f}s{min(firsts):>7.2f}s{max(firsts):>7.2f}s"
              f"{statistics.median([e for _, e in runs]):>9.2f}s")


if __name__ == "__main__":
    main()
