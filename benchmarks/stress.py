"""The test suite and the conformance run under CPU contention: what only passes on an idle machine.

    python benchmarks/stress.py [--repeat N] [--quick] [--jobs N] [--tests PATH ...] [--task T] [--adapter A]
                                [--report-dir DIR] [--hogs N] [--hog-limit S]

Starts CPU hogs (as many as cores + 1, each a ``while True: pass``), then runs ``make test``
and ``stopbench run --agent reference --repeat N --report-dir DIR`` under them, and prints:

- test failures, from pytest's short summary;
- verdict flips: a check whose outcome differs between repeats of the same task variant ×
  adapter (× mutant), read from ``DIR/results.json``;
- retries: task runs tried again because the moment they meant to interrupt never came
  (their ``attempts``);
- task errors: task runs the harness could not complete (status ``errored``);
- the 1-minute load average before the hogs, and while they ran (sampled every few seconds).

Exits 1 on any test failure, flip, task error, or a run that did not end conformant.

Each hog is bounded three ways, so none outlives its purpose: SIGALRM ends it after
``--hog-limit`` seconds (its default action is to terminate), it gets SIGKILL when this
script dies (``PR_SET_PDEATHSIG``), and it is killed by PID in a ``finally``, on Ctrl-C too.
``--quick`` is a short run: repeat 2, the tests of tests/harness, two tasks on the http adapter.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PR_SET_PDEATHSIG = 1
LOAD_SAMPLE_S = 5.0
QUICK_TESTS = ["tests/harness"]
QUICK_TASKS = ["interrupt-cancel", "interrupt-timeout"]
QUICK_ADAPTERS = ["http"]
QUICK_SUMMARY = (f"repeat 2, pytest {' '.join(QUICK_TESTS)}, tasks {', '.join(QUICK_TASKS)} "
                 f"on {', '.join(QUICK_ADAPTERS)}")
HOG = "import signal\nsignal.alarm({limit})\nwhile True:\n    pass\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cores = len(os.sched_getaffinity(0))
    hogs_n = args.hogs if args.hogs is not None else cores + 1
    (args.report_dir / "results.json").unlink(missing_ok=True)  # a stale file must not be read as this run's
    before = os.getloadavg()[0]
    print(f"stress: {hogs_n} CPU hogs on {cores} cores, at most {args.hog_limit:g} s; load before {before:.2f}",
          flush=True)
    samples: list[float] = []
    stop_sampling = threading.Event()
    sampler = threading.Thread(target=sample_load, args=(samples, stop_sampling), daemon=True)
    hogs = start_hogs(hogs_n, args.hog_limit)
    try:
        sampler.start()
        tests_rc, test_lines = stream(tests_command(args))
        run_rc, _ = stream(run_command(args))
        hogs_expired = [h.pid for h in hogs if h.poll() is not None]
    finally:
        end_hogs(hogs)
        stop_sampling.set()
    sampler.join()
    return summarize(args, before, samples, hogs_expired, tests_rc, test_lines, run_rc)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=None, help="repeats of each task variant (default 10; 2 with --quick)")
    p.add_argument("--quick", action="store_true", help="a short run: " + QUICK_SUMMARY)
    p.add_argument("--jobs", type=int, default=1, help="task runs at once in the run (stopbench run --jobs)")
    p.add_argument("--tests", nargs="+", default=None, help="pytest these paths instead of `make test`")
    p.add_argument("--task", action="append", default=None, help="task(s) for the run (default all)")
    p.add_argument("--adapter", action="append", default=None, help="adapter(s) for the run (default all)")
    p.add_argument("--report-dir", type=Path, default=ROOT / "reports" / "stress",
                   help="where the run writes its results (default reports/stress)")
    p.add_argument("--hogs", type=int, default=None, help="CPU hogs (default cores + 1)")
    p.add_argument("--hog-limit", type=float, default=None,
                   help="seconds after which each hog ends on its own (default 7200; 900 with --quick)")
    args = p.parse_args(argv)
    if args.quick:
        args.tests = args.tests or QUICK_TESTS
        args.task = args.task or QUICK_TASKS
        args.adapter = args.adapter or QUICK_ADAPTERS
    args.repeat = args.repeat or (2 if args.quick else 10)
    args.hog_limit = args.hog_limit or (900.0 if args.quick else 7200.0)
    if args.repeat < 1 or args.hog_limit <= 0 or (args.hogs is not None and args.hogs < 0):
        p.error("--repeat, --hog-limit and --hogs must be positive")
    return args


def start_hogs(n: int, limit_s: float) -> list[subprocess.Popen]:
    """``n`` busy processes, each ended by SIGALRM after ``limit_s`` and by SIGKILL if this script dies."""
    libc = ctypes.CDLL(None, use_errno=True)

    def die_with_parent() -> None:
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")

    hogs: list[subprocess.Popen] = []
    try:
        for _ in range(n):
            hogs.append(subprocess.Popen([sys.executable, "-S", "-c", HOG.format(limit=max(1, round(limit_s)))],
                                         stdin=subprocess.DEVNULL, preexec_fn=die_with_parent))
    except BaseException:
        end_hogs(hogs)
        raise
    return hogs


def end_hogs(hogs: list[subprocess.Popen]) -> None:
    """Kill each hog by PID and reap it."""
    for h in hogs:
        if h.poll() is None:
            h.kill()
    for h in hogs:
        h.wait()


def sample_load(samples: list[float], stop: threading.Event) -> None:
    """The 1-minute load average every few seconds until ``stop`` is set."""
    while not stop.wait(LOAD_SAMPLE_S):
        samples.append(os.getloadavg()[0])


def tests_command(args: argparse.Namespace) -> list[str]:
    if args.tests:
        return [sys.executable, "-m", "pytest", "-q", *args.tests]
    return ["make", "test"]


def run_command(args: argparse.Namespace) -> list[str]:
    argv = [sys.executable, "-m", "harness", "run", "--agent", "reference", "--repeat", str(args.repeat),
            "--jobs", str(args.jobs), "--report-dir", str(args.report_dir)]
    for task in args.task or ():
        argv += ["--task", task]
    for adapter in args.adapter or ():
        argv += ["--adapter", adapter]
    return argv


def stream(argv: list[str]) -> tuple[int, list[str]]:
    """Run ``argv`` in the project folder, echoing its output; its exit code and output lines."""
    print(f"\n$ {' '.join(argv)}", flush=True)
    lines: list[str] = []
    with subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(line.rstrip("\n"))
    return proc.returncode, lines


def failures_of(rc: int, lines: list[str]) -> list[str]:
    """FAILED / ERROR lines of pytest's short summary, or why the session failed without one."""
    try:
        start = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    except StopIteration:
        start = len(lines)
    failures = [line for line in lines[start:] if line.startswith(("FAILED ", "ERROR "))]
    if rc != 0 and not failures:
        tail = [line for line in lines if line.strip()][-3:]
        failures.append(f"the test run exited {rc}: " + " / ".join(tail))
    return failures


def flips(tasks: list[dict[str, Any]]) -> list[str]:
    """Each check whose outcome differs between repeats of one task variant × adapter (× mutant)."""
    outcomes: dict[tuple[str, str, str | None], dict[str, dict[str, list[int]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for t in tasks:
        for c in t.get("checks", []):
            outcomes[(t["task"], t["adapter"], t.get("mutant"))][c["check"]][c["outcome"]].append(t["repeat"])
    found = []
    for (task, adapter, mutant), checks in sorted(outcomes.items(), key=lambda kv: str(kv[0])):
        for check, by_outcome in sorted(checks.items()):
            if len(by_outcome) > 1:
                seen = ", ".join(f"{o} in repeat{'s' if len(r) > 1 else ''} {','.join(map(str, sorted(r)))}"
                                 for o, r in sorted(by_outcome.items()))
                found.append(f"{task} on {adapter}{f' (mutant {mutant})' if mutant else ''}: {check}: {seen}")
    return found


def retries(tasks: list[dict[str, Any]]) -> list[str]:
    """Each task run that was tried again: its earlier ``attempts`` (a race that did not happen), and why."""
    found = []
    for t in tasks:
        attempts = t.get("attempts") or []
        if attempts:
            why = "; ".join(sorted({str(a.get("reason", "")) for a in attempts}))
            found.append(f"{t['task']} on {t['adapter']} #{t['repeat']}: {len(attempts)} ({why})")
    return found


def task_errors(tasks: list[dict[str, Any]]) -> list[str]:
    """Task runs the harness could not complete (status ``errored``; ``error`` in older results)."""
    return [f"{t['task']} on {t['adapter']} #{t['repeat']}: {t.get('reason') or t.get('error')}"
            for t in tasks if t.get("status") == "errored" or t.get("error")]


def summarize(args: argparse.Namespace, before: float, samples: list[float], hogs_expired: list[int],
              tests_rc: int, test_lines: list[str], run_rc: int) -> int:
    """Print the findings; 1 if any of them is a failure."""
    failures = failures_of(tests_rc, test_lines)
    results_path = args.report_dir / "results.json"
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() else None
    tasks = results.get("tasks", []) if results else []
    flipped = flips(tasks)
    errors = task_errors(tasks)
    retried = retries(tasks)

    print("\n=== stress summary ===")
    section("test failures", failures)
    section(f"verdict flips over {args.repeat} repeats", flipped)
    section("retries", retried)
    section("task errors", errors)
    run_problem = None
    if results is None:
        run_problem = f"the run wrote no {results_path} (exit {run_rc})"
    elif run_rc != 0:
        run_problem = f"the run exited {run_rc} (not conformant)"
    print(f"run: {len(tasks)} task runs, {run_problem or 'conformant'}")
    while_ = (f"mean {statistics.mean(samples):.2f}, max {max(samples):.2f} over {len(samples)} samples"
              if samples else f"no sample (the work took under {LOAD_SAMPLE_S:g} s)")
    print(f"load average (1 min): before {before:.2f}; while {while_}")
    if hogs_expired:
        print(f"note: {len(hogs_expired)} hogs reached their {args.hog_limit:g} s bound before the work ended "
              f"(raise --hog-limit): the end of the run was under less load")
    failed = bool(failures or flipped or errors or run_problem)
    print("stress:", "FAILED" if failed else "ok")
    return 1 if failed else 0


def section(title: str, items: list[str], none: str = "none") -> None:
    print(f"{title}: {len(items) if items else none}")
    for item in items:
        print(f"  {item}")


if __name__ == "__main__":
    sys.exit(main())
