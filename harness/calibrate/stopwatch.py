"""The error and floor of stopbench's own stopwatch, measured with an agent whose timing is known.

The calibration agent (``agent.py`` headless, ``agent_inproc.py`` in-process) acts exactly D
after a Stop or after its timeout falls due. Run through the ordinary drivers with
``run_item`` — the very code that times real agents — every latency stopbench reports for it
is D plus what the stopwatch and the machine add; ``measured − D`` is that error. At D = 0 it
is the floor: the smallest figure stopbench can report on this machine, whatever the agent.

The agent also reports its own ``monotonic_ns`` stamps (on stderr headless; through its
module's ``STAMPS`` in-process), so each figure is taken apart: how long the Stop took to
reach the agent, how long the effect took (the kernel killing a tree, a process exiting), and
how late stopbench saw it (the window watcher's polling, the server's disconnect detection,
the exit notice). This module measures; the samples, their error rows and the tables they are
printed in are ``harness.calibrate.figures``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fake_server.records import Disconnect
from harness.calibrate.figures import MEASURED, Calibration, CalSample, error_rows
from harness.checks import REGISTRY
from harness.model import Observation, RunStatus, StopDelivery
from harness.model.drivers import DRIVERS
from harness.profiles import Profile, load_profile
from harness.report.latency import percentile
from harness.run.planning import WorkItem
from harness.run.runner import run_item
from harness.tasks import Task, load_all

PACKAGE_DIR = Path(__file__).resolve().parent
PROFILE_PATH = PACKAGE_DIR / "calibrate.toml"
TASKS_DIR = PACKAGE_DIR / "tasks"
DELAY_ENV = "STOPBENCH_CAL_DELAY_MS"  # the agent's (it is not imported: the harness never imports an agent)
INPROC_MODULE = "harness.calibrate.agent_inproc"  # where the in-process agent keeps its stamps, once loaded
STAMPS_PREFIX = "cal-agent: stamps "

DELAYS_MS: tuple[float, ...] = (0.0, 0.5, 2.0, 20.0)
CALIBRATION_TASKS = ("cal-stream", "cal-tool", "cal-timeout")
# The quick floor: (task, driver, runs) at D = 0 — a few hundred milliseconds in all.
QUICK: tuple[tuple[str, str, int], ...] = (
    ("cal-stream", "inproc", 3),
    ("cal-stream", "subprocess", 1),
    ("cal-tool", "inproc", 1),
    ("cal-timeout-quick", "subprocess", 1),
)


class CalibrationError(Exception):
    """A calibration run did not produce its figures (the message says which and why)."""


# --- running the calibration agent -------------------------------------------------------------


def load_calibration(task_names: Iterable[str] = CALIBRATION_TASKS) -> tuple[Profile, list[Task]]:
    """The calibration agent's profile and the named tasks of its own."""
    profile = load_profile(PROFILE_PATH)
    wanted = list(task_names)
    by_name = {t.name: t for t in load_all(TASKS_DIR, known_checks=set(REGISTRY))}
    missing = [n for n in wanted if n not in by_name]
    if missing:
        raise CalibrationError(f"no calibration task {missing[0]!r} in {TASKS_DIR}")
    return profile, [by_name[n] for n in wanted]


def with_delay(profile: Profile, delay_ms: float) -> Profile:
    """The profile with D set for headless runs (the agent's environment)."""
    return dataclasses.replace(profile, env={**profile.env, DELAY_ENV: f"{delay_ms:g}"})


@contextmanager
def inproc_delay(delay_ms: float) -> Iterator[None]:
    """D for the in-process agent, which reads it from this process's environment."""
    before = os.environ.get(DELAY_ENV)
    os.environ[DELAY_ENV] = f"{delay_ms:g}"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DELAY_ENV, None)
        else:
            os.environ[DELAY_ENV] = before


async def measure_one(profile: Profile, item: WorkItem, delay_ms: float) -> list[CalSample]:
    """One task run of the calibration agent with delay D; its samples."""
    with inproc_delay(delay_ms):
        outcome = await run_item(with_delay(profile, delay_ms), item)
    obs = outcome.observation
    if outcome.result.status is not RunStatus.RAN or obs is None or obs.failure is not None:
        why = outcome.result.reason or (obs.failure.what if obs is not None and obs.failure else "")
        raise CalibrationError(f"{item.variant} with D = {delay_ms:g} ms: {outcome.result.status.value}: {why}")
    delay_ns = int(round(delay_ms * 1e6))
    stamps = agent_stamps(obs)
    samples = []
    for s in outcome.latencies:
        if s.latency not in MEASURED:
            continue
        if s.latency == "L2" and item.task.name.startswith("cal-timeout"):
            continue  # its "Stop" is start + T by the harness's clock, before the agent's own timer: L4 times that run
        samples.append(CalSample(s.latency, item.driver, item.task.name, delay_ns, s.value_ns,
                                 breakdown(s.latency, obs, stamps, delay_ns)))
    if not samples:
        raise CalibrationError(f"{item.variant} with D = {delay_ms:g} ms measured no latency")
    return samples


def agent_stamps(obs: Observation) -> dict[str, Any]:
    """The calibration agent's own stamps for the run's turn (empty when it gave none)."""
    if DRIVERS[obs.driver].in_process:
        store = getattr(sys.modules.get(INPROC_MODULE), "STAMPS", {})
        turns = store.get(Path(obs.log_path).stem, []) if obs.log_path else []
        return dict(turns[-1]) if turns else {}
    for exit_ in reversed(obs.exits):
        for line in reversed(exit_.stderr_tail.splitlines()):
            if line.startswith(STAMPS_PREFIX):
                try:
                    stamps = json.loads(line[len(STAMPS_PREFIX):])
                except json.JSONDecodeError:
                    return {}
                return {**stamps, "started": exit_.started_ns, "ended": exit_.ended_ns,
                        "timeout_ns": int((exit_.timeout_s or 0) * 1e9)}
    return {}


def breakdown(latency: str, obs: Observation, st: Mapping[str, Any], delay_ns: int) -> dict[str, int]:
    """``measured − D`` taken apart with the agent's stamps; the parts add up to the error.

    ``reach`` Stop stamped by the driver → seen by the agent (a signal, or the ``stop()`` call);
    ``late`` the agent acted after trigger + D (the event loop's next pass came later than D);
    ``shut`` the agent's ``shutdown`` → the settlement it stamped after it (L1); ``server`` the
    agent began the ``shutdown`` → the fake server's disconnect record; ``death`` the agent began
    the ``killpg`` → every process of the tree seen dead by the agent; ``watcher`` the tree dead
    → stopbench's window watcher saw it (``seen`` the two together, in-process); ``start-up``
    spawn → the agent's first instruction; ``finish`` the agent's shutdown, last words and
    ``_exit`` call; ``exit`` that call → the exit seen by the driver.

    Each part that follows an action starts where the action starts, not where its syscall
    returned: the ``shutdown`` sends the FIN and wakes the server from inside the syscall, and
    on a busy machine the server may run — and notice — before the agent is back from it.
    """
    if not {"trigger", "act", "effect"} <= set(st):
        return {}
    stop = next((s for s in obs.stops if s.exercised and s.how != "timeout"), None)
    late = st["act"] - st["trigger"] - delay_ns
    if latency == "L4":
        if "started" not in st:
            return {}
        return {"start-up": st["t0"] - st["started"], "late": late, "finish": st["exit"] - st["act"],
                "exit": st["ended"] - st["exit"]}
    if stop is None:
        return {}
    parts = {"reach": st["trigger"] - stop.mono_ns, "late": late}
    if latency == "L1":
        return {**parts, "shut": settled_ns(obs, stop) - st["act"]}
    if latency == "L2":
        gone = next((r.mono_ns for r in obs.records if isinstance(r, Disconnect) and r.source == "server"
                     and r.request == stop.request and r.mono_ns >= stop.mono_ns), None)
        if gone is None:
            return {}
        return {**parts, "server": gone - st["act"]}
    if latency == "L3":
        window = next((w for w in obs.windows if w.stop_ns is not None and w.gone_ns is not None), None)
        if window is None or window.gone_ns is None:
            return {}
        if st.get("gone") is None:  # the in-process agent does not time the death itself
            return {**parts, "seen": window.gone_ns - st["act"]}
        return {**parts, "death": st["gone"] - st["act"], "watcher": window.gone_ns - st["gone"]}
    return {}


def settled_ns(obs: Observation, stop: StopDelivery) -> int:
    after = [s.mono_ns for s in obs.settlements if s.mono_ns >= stop.mono_ns]
    return after[0] if after else stop.mono_ns


def work_items(tasks: Sequence[Task], profile: Profile, drivers: Sequence[str] | None = None) -> list[WorkItem]:
    items = []
    for task in tasks:
        for driver in task.drivers:
            if driver in profile.drivers() and (not drivers or driver in drivers):
                items.append(WorkItem(task, driver, profile.adapters[0], 1))
    return items


async def calibrate(*, repeat: int = 5, delays_ms: Sequence[float] = DELAYS_MS,
                    drivers: Sequence[str] | None = None,
                    progress: Callable[[int, int, str], None] | None = None) -> Calibration:
    """Every calibration task on every driver, ``repeat`` times for each D, alternating the
    D values and the drivers (drift in the machine's load spreads over all of them)."""
    profile, tasks = load_calibration()
    items = work_items(tasks, profile, drivers)
    if not items:
        raise CalibrationError(f"no calibration task runs on the drivers {', '.join(drivers or ())}")
    load_before = loadavg()
    wakeups = wakeup_ns()
    started = time.monotonic()
    samples: list[CalSample] = []
    total, n = repeat * len(delays_ms) * len(items), 0
    for r in range(1, repeat + 1):
        for delay in delays_ms:
            for item in items:
                n += 1
                if progress:
                    progress(n, total, f"{item.variant} D={delay:g} ms")
                samples += await measure_one(profile, dataclasses.replace(item, repeat=r), delay)
    return Calibration(samples=tuple(samples), delays_ms=tuple(delays_ms), repeat=repeat,
                       load_before=load_before, load_after=loadavg(), cpus=os.cpu_count() or 0,
                       duration_s=time.monotonic() - started, wakeup_p50_ns=int(percentile(wakeups, 50)),
                       wakeup_p99_ns=int(percentile(wakeups, 99)))


ECHO = "import os, sys\nwhile os.read(0, 1): os.write(1, b'.')"


def wakeup_ns(samples: int = 100, idle_s: float = 0.001) -> list[int]:
    """One-way wake-up latency between two idle processes on this machine: half the round trip
    of a byte through a pair of pipes to an echoing child (its Python loop included), each after
    ``idle_s`` of quiet so that both sides were asleep, as an agent waiting for Stop is. Every
    figure of the table crosses such a wake-up once or more — a signal to the agent, a socket to
    the server, an exit to its parent — and on a busy machine each one also waits for a CPU."""
    # Its stderr is nowhere: a dead harness (its pipes closed) must not have it print a traceback.
    child = subprocess.Popen([sys.executable, "-I", "-S", "-c", ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
    assert child.stdin is not None and child.stdout is not None
    out: list[int] = []
    try:
        for _ in range(samples + 10):
            time.sleep(idle_s)
            t0 = time.monotonic_ns()
            os.write(child.stdin.fileno(), b"x")
            os.read(child.stdout.fileno(), 1)
            out.append((time.monotonic_ns() - t0) // 2)
    finally:
        child.stdin.close()
        child.wait(timeout=30)
        child.stdout.close()
    return out[10:]  # the first few warm the child up


def loadavg() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


# --- the quick floor for every run --------------------------------------------------------------


async def quick_floor_async() -> dict[str, Any]:
    """The floor of L1–L4 on this machine (D = 0, a few runs of the calibration agent), as a
    JSON-ready dict for a run's results header. Never raises: a failure is reported in it."""
    started = time.monotonic()
    load = loadavg()
    try:
        profile, tasks = load_calibration(dict.fromkeys(task for task, _, _ in QUICK))
        by_name = {t.name: t for t in tasks}
        samples: list[CalSample] = []
        for task, driver, runs in QUICK:
            if driver not in profile.drivers():
                continue
            for r in range(1, runs + 1):
                samples += await measure_one(profile, WorkItem(by_name[task], driver, profile.adapters[0], r), 0.0)
    except Exception as exc:  # noqa: BLE001 - the floor is context for a run, never a reason to stop it
        return {"error": f"{type(exc).__name__}: {exc}", "took_s": round(time.monotonic() - started, 3)}
    floor: dict[str, Any] = {}
    for row in error_rows(samples):
        entry: dict[str, Any] = {"n": row.n, "p50_ms": round(row.p50 / 1e6, 4), "max_ms": round(row.max / 1e6, 4)}
        if row.parts:
            entry["parts_ms"] = {k: round(v / 1e6, 4) for k, v in row.parts.items()}
        floor.setdefault(row.latency if row.latency in MEASURED else "L4_without_start_up", {})[row.driver] = entry
    wakeups = wakeup_ns(20)
    return {"delay_ms": 0, **floor, "loadavg": list(load), "wakeup_p50_ms": round(percentile(wakeups, 50) / 1e6, 4),
            "took_s": round(time.monotonic() - started, 3),
            "agent": "calibrate", "note": "measured at D = 0 by `stopbench calibrate`'s agent: no agent can be "
            "measured below these figures on this machine"}


def quick_floor() -> dict[str, Any]:
    """``quick_floor_async`` from synchronous code (no event loop may be running)."""
    return asyncio.run(quick_floor_async())
