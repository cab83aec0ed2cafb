"""The runner: agent × adapter × task × repeat → Observation → checks → TaskResult.

One task run (``run_item``) owns a fresh temp root (HOME, sessions, working folder), a fake
server, a driver, and a unique canary API key. It plays the task's steps — every interrupt
after a ``wait`` on a beacon — recording what it sees into an Observation, then reads the
final log through the profile's reader, scans for the canary, runs the task's checks and
measures latencies. Whatever happens, every process it learned of (agent, tool windows) is
ended by PID, verified gone with psutil, and the temp root is removed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import os
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from harness.drivers import AgentContext, Driver, DriverError, Unsupported, make_driver
from harness.model import (
    AgentKill, CheckResult, LatencySample, Observation, Restart, StopDelivery, TaskResult, Tier,
    WindowObservation, skipped, unknown,
)
from harness.procs import ProcRef, kill_all, leftovers, wait_gone
from harness.profiles import BUILTIN_DIR, Profile, base_values, fill
from harness.tasks import Step, Task

BEACON_TIMEOUT_S = 30.0  # failsafe for a beacon that never comes (the agent hung or broke)
SETTLE_TIMEOUT_S = 15.0
IDLE_GRACE_S = 1.0  # failsafe for a beacon already posted when the agent went idle
WINDOW_WATCH_S = 600.0  # windows hold at most 600 s; the watch is cancelled at the task's end
ENV_PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")


class HarnessError(Exception):
    """The harness itself failed (e.g. could not end a process): the run cannot be trusted."""


@dataclass(frozen=True)
class WorkItem:
    """One unit of work: a task variant for one adapter, one repeat, maybe one mutant."""

    task: Task
    driver: str
    adapter: str
    repeat: int
    mutant: str | None = None

    @property
    def variant(self) -> str:
        return self.task.variant(self.driver)

    @property
    def key(self) -> str:
        """Stable across runs and machines: what shards are cut on."""
        return f"{self.variant}/{self.adapter}/{self.repeat}/{self.mutant or '-'}"


@dataclass
class ItemOutcome:
    result: TaskResult
    latencies: list[LatencySample]
    observation: Observation | None


def plan(profile: Profile, tasks: list[Task], *, adapters: list[str] | None = None, repeat: int = 1,
         mutants: list[str | None] = (None,)) -> list[WorkItem]:
    """Every work item, in a deterministic order: mutant, task, driver, adapter, repeat.

    Mutants skip the in-process driver: a failpoint is switched on in the environment of a
    process the harness starts, and an agent loaded into the harness never sees it — its
    run would test the unmutated agent and count as the mutant's.
    """
    items = []
    for mutant in mutants:
        for task in tasks:
            for driver in task.drivers:
                if mutant is not None and driver == "inproc":
                    continue
                for adapter in adapters or profile.adapters:
                    if adapter not in profile.adapters or (task.adapters and adapter not in task.adapters):
                        continue
                    for r in range(1, repeat + 1):
                        items.append(WorkItem(task, driver, adapter, r, mutant))
    return items


# ---------------------------------------------------------------------------------------
# One task run


@dataclass
class RunDirs:
    root: Path
    home: Path
    sessions: Path
    cwd: Path

    @classmethod
    def create(cls) -> "RunDirs":
        root = Path(tempfile.mkdtemp(prefix="stopbench-"))
        dirs = cls(root, root / "home", root / "sessions", root / "work")
        for d in (dirs.home, dirs.sessions, dirs.cwd):
            d.mkdir()
        return dirs


def canary_key() -> str:
    """A unique fake API key: finding it anywhere the agent wrote is a leak (C13)."""
    return f"sk-stopbench-{secrets.token_hex(16)}"


def agent_context(profile: Profile, item: WorkItem, dirs: RunDirs, server: Any, api_key: str) -> AgentContext:
    values = {
        **base_values(),
        "base_url": server.url if item.adapter == "inproc" else server.base_url,
        "url": server.url,
        "api_key": api_key,
        "model": profile.model,
        "sessions_dir": str(dirs.sessions),
        "cwd": str(dirs.cwd),
        "home": str(dirs.home) if profile.fresh_home else os.environ.get("HOME", str(dirs.home)),
        "scenario": str(item.task.scenario_path),
        "adapter": item.adapter,
        "profile_dir": str(Path(profile.path).parent),
    }
    env = {k: os.environ[k] for k in ENV_PASSTHROUGH if k in os.environ}
    env.update(HOME=values["home"], TERM="xterm", COLUMNS="200", LINES="40")
    env.update({k: fill(v, values) for k, v in profile.env.items()})
    if item.mutant:
        if not profile.failpoints_env:
            raise Unsupported(f"profile {profile.name!r} has no failpoints; cannot run mutant {item.mutant!r}")
        env[profile.failpoints_env] = item.mutant
    for f in profile.files:
        path = Path(fill(f["path"], values))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fill(f["content"], values), encoding="utf-8")
    return AgentContext(profile=profile, adapter=item.adapter, values=values, env=env,
                        sessions_dir=dirs.sessions, cwd=dirs.cwd, scenario=item.task.scenario)


class TaskRun:
    """The state of one task run while its steps play."""

    def __init__(self, item: WorkItem, driver: Driver, server: Any):
        self.item = item
        self.driver = driver
        self.server = server
        self.last_beacon: tuple[str, Mapping[str, Any]] | None = None
        self.kills: list[AgentKill] = []
        self.restarts: list[Restart] = []
        self.window_stops: dict[str, int] = {}
        self.tree_watch: dict[str, asyncio.Task] = {}
        self.watch_cancel = threading.Event()
        self.queued: dict[str, str] = {}
        self.damage: tuple[str, int | None] | None = None

    async def play(self, steps: tuple[Step, ...]) -> None:
        for step in steps:
            try:
                await getattr(self, "step_" + step.do.replace("-", "_"))(step)
            except Unsupported:
                raise
            except (DriverError, TimeoutError) as exc:
                raise DriverError(f"{step.describe()}: {exc}") from None

    # -- steps -----------------------------------------------------------------------------
    async def step_send(self, step: Step) -> None:
        await self.driver.send(step.get("text"), timeout_s=step.get("timeout"), expect=step.get("expect", "completed"))

    async def step_wait(self, step: Step) -> None:
        rec = self.server.records
        beacon = step.get("for")
        if beacon == "request":
            waiting = asyncio.wait_for(rec.wait_request(step.get("request")), BEACON_TIMEOUT_S)
        elif beacon == "chunk":
            waiting = asyncio.wait_for(rec.wait_chunk(request=step.get("request"), chunk=step.get("chunk")),
                                       BEACON_TIMEOUT_S)
        elif beacon == "disconnect":
            waiting = asyncio.wait_for(rec.wait_disconnect(request=step.get("request")), BEACON_TIMEOUT_S)
        else:
            waiting = asyncio.wait_for(rec.wait_window(window=step.get("window")), BEACON_TIMEOUT_S)
        record = await self._beacon_or_idle(waiting)
        if beacon == "window":
            self._watch_tree(step.get("window"), record)
        self.last_beacon = (beacon, record)

    async def _beacon_or_idle(self, waiting) -> Mapping[str, Any]:
        """The beacon's record — or, as soon as the agent can no longer produce it (its turn
        settled, its process exited), a DriverError instead of waiting out the failsafe."""
        beacon = asyncio.ensure_future(waiting)
        idle = asyncio.ensure_future(self.driver.idle())
        try:
            await asyncio.wait({beacon, idle}, return_when=asyncio.FIRST_COMPLETED)
            if not beacon.done():
                # A record posted just before the agent went idle may still be in flight.
                await asyncio.wait({beacon}, timeout=IDLE_GRACE_S)
            if not beacon.done():
                raise DriverError("the agent's turn ended (or its process exited) without it")
            return beacon.result().to_json()
        finally:
            for task in (beacon, idle):
                task.cancel()

    def _beacon_context(self) -> tuple[str, int | None, str | None]:
        beacon, record = self.last_beacon
        if beacon == "window":
            return "tool", None, record.get("window")
        return "stream", record.get("request"), None

    async def step_stop(self, step: Step) -> None:
        phase, request, window = self._beacon_context()
        phase = step.get("phase", phase)
        delivery = await self.driver.stop(step.get("source", "user"), phase=phase, request=request, window=window)
        if window and delivery.exercised:
            self.window_stops[window] = delivery.mono_ns
        if self.driver.name != "inproc" and delivery.text_seen is not None:
            # A screen or stdout shows more than the model's text (echoed input, tool cards):
            # what the agent demonstrably received is the scripted text's longest prefix shown.
            scripted = self._scripted_text(request)
            self.driver.stops[-1] = dataclasses.replace(delivery, text_seen=visible_prefix(scripted, delivery.text_seen))

    def _scripted_text(self, request: int | None) -> str:
        responses = [r.to_json() for r in self.server.records if r.kind == "response"]
        if request is not None:
            responses = [r for r in responses if r.get("request") == request]
        return (responses[-1].get("text") or "") if responses else ""

    def _watch_tree(self, window: str, record: Mapping[str, Any]) -> None:
        """Watch a window's tree from the moment it opened until it is gone (a tight psutil
        loop in a thread): whatever ends it — Stop, a timeout, a kill, a restart's reaping —
        the moment is known, and L3 is that moment minus the Stop."""
        refs = [ProcRef.from_record(p) for p in record.get("pids", [])]
        self.tree_watch[window] = asyncio.create_task(asyncio.to_thread(
            wait_gone, refs, deadline_s=WINDOW_WATCH_S, cancel=self.watch_cancel))

    async def step_settle(self, step: Step) -> None:
        settlement = await self.driver.settle(SETTLE_TIMEOUT_S)
        exit_ = settlement.exit
        if exit_ is not None and exit_.timeout_s is not None:
            # The run's own timeout is a Stop the harness asked for with the command line:
            # it falls due at start + T, and was exercised if the run was still going then.
            due_ns = exit_.started_ns + int(exit_.timeout_s * 1e9)
            phase, request, window = self._beacon_context() if self.last_beacon else ("other", None, None)
            self.driver.stops.append(StopDelivery(
                mono_ns=due_ns, source="timeout", how="timeout", phase=phase,
                exercised=exit_.ended_ns > due_ns, request=request, window=window))

    async def step_kill(self, step: Step) -> None:
        beacon, record = self.last_beacon
        default_at = {"request": "request-received", "chunk": "chunk-flushed", "window": "window-opened"}.get(beacon, "chunk-flushed")
        kill_ns, pid = await self.driver.kill()
        self.kills.append(AgentKill(
            mono_ns=kill_ns, pid=pid, at=step.get("at", default_at), request=record.get("request"),
            window=record.get("window") if beacon == "window" else None, log_bytes=self._log_bytes(),
        ))

    def _log_bytes(self) -> bytes | None:
        path = self.driver.log_path
        if not path or not os.path.exists(path):
            return None
        return Path(path).read_bytes()

    async def step_damage(self, step: Step) -> None:
        path = self.driver.log_path
        if not path or not os.path.exists(path):
            raise DriverError("damage asked for, but the agent's session log was not found")
        data = Path(path).read_bytes()
        if step.get("kind") == "torn-tail":
            Path(path).write_bytes(data + b'{"seq": ' + str(data.count(b"\n")).encode() + b', "type": "tool_res')
            self.damage = ("torn-tail", data.count(b"\n") + 1)
            return
        lines = data.split(b"\n")
        complete = len(lines) - 1  # the part after the last newline is not a line
        if complete < 3:
            raise DriverError(f"mid-file damage needs at least three lines in the log, it has {complete}")
        target = (complete - 1) // 2  # 0-based: after the header, before the last line
        lines[target] = b"{\"seq\": \x00 not json" + b"#" * max(0, len(lines[target]) - 20)
        Path(path).write_bytes(b"\n".join(lines))
        self.damage = ("mid-file", target + 1)

    async def step_restart(self, step: Step) -> None:
        before = self._log_bytes()
        restart_ns = time.monotonic_ns()
        after = await self.driver.restart(expect=step.get("expect", "ready"), deadline_s=SETTLE_TIMEOUT_S,
                                         text=step.get("text", "Carry on."))
        kind, line = self.damage or (None, None)
        self.restarts.append(Restart(mono_ns=restart_ns, bytes_before=before, bytes_after_load=after,
                                     damage=kind, damage_line=line))
        self.damage = None

    async def step_queue(self, step: Step) -> None:
        item_id = await self.driver.queue(step.get("text"))
        self.queued[step.get("as", f"q{len(self.queued) + 1}")] = item_id

    async def step_cancel_queued(self, step: Step) -> None:
        await self.driver.cancel_queued(self.queued[step.get("item")])

    # -- after the steps ---------------------------------------------------------------------
    async def windows(self) -> list[WindowObservation]:
        """Every window the server saw: its tree, when Stop hit it, when it was gone, survivors."""
        out = []
        self.watch_cancel.set()
        for record in [r.to_json() for r in self.server.records if r.kind == "window"]:
            wid = record.get("window")
            refs = [ProcRef.from_record(p) for p in record.get("pids", [])]
            gone_ns = None
            if wid in self.tree_watch:
                gone_ns = await self.tree_watch[wid]
            survivors = tuple(r.to_json() for r in leftovers(refs))
            out.append(WindowObservation(window=wid, pids=tuple(record.get("pids", [])),
                                         stop_ns=self.window_stops.get(wid), gone_ns=gone_ns, survivors=survivors))
        return out


def visible_prefix(scripted: str, screen: str) -> str:
    """The longest prefix of ``scripted`` that appears in ``screen`` (containment is monotone
    in the prefix length, so a binary search finds it)."""
    lo, hi = 0, len(scripted)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if scripted[:mid] in screen:
            lo = mid
        else:
            hi = mid - 1
    return scripted[:lo]


async def run_item(profile: Profile, item: WorkItem) -> ItemOutcome:
    """Run one work item start to finish; never leaves a process or a temp dir behind."""
    from fake_server import FakeServer

    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    t0 = time.monotonic()
    dirs = RunDirs.create()
    api_key = canary_key()
    driver: Driver | None = None
    run: TaskRun | None = None
    error: str | None = None
    unsupported: str | None = None
    windows: list[WindowObservation] = []
    agent_refs: list[ProcRef] = []
    window_refs: list[ProcRef] = []
    try:
        async with FakeServer(scenario=item.task.scenario, port=0) as server:
            try:
                ctx = agent_context(profile, item, dirs, server, api_key)
                driver = make_driver(item.driver, ctx)
                run = TaskRun(item, driver, server)
                await run.play(item.task.steps)
            except Unsupported as exc:
                unsupported = str(exc)
            except DriverError as exc:
                error = f"the task could not complete: {exc}"
            finally:
                if run is not None:  # before the agent is ended: what outlived its tools is evidence
                    windows = await run.windows()
                    window_refs = [ProcRef.from_record(p) for w in windows for p in w.pids]
                if driver is not None:
                    await driver.close()
                    agent_refs = driver.processes()
                await asyncio.to_thread(kill_all, window_refs)
            records = tuple(r.to_json() for r in server.records)
        if unsupported is not None:
            checks = tuple(skipped(c, f"not run: {unsupported}") for c in item.task.checks)
            checks = tuple(dataclasses.replace(c, tier=item.task.checks[c.check]) for c in checks)
            return ItemOutcome(_result(item, profile, checks, started, t0, None), [], None)
        obs = observe(item, profile, driver, run, records, windows, dirs, api_key)
        checks = redact(evaluate(item.task, obs), api_key)
        # A mutant's timings measure a broken agent: they are not the agent's latencies.
        samples = latencies(item, profile, obs) if item.mutant is None else []
        return ItemOutcome(_result(item, profile, checks, started, t0, error), samples, obs)
    finally:
        shutil.rmtree(dirs.root, ignore_errors=True)
        left = await asyncio.to_thread(leftovers, agent_refs + window_refs)
        if left and await asyncio.to_thread(kill_all, left):
            raise HarnessError(f"{item.key}: processes survived SIGKILL: {[r.to_json() for r in left]}")


def _result(item: WorkItem, profile: Profile, checks: tuple[CheckResult, ...], started: str, t0: float,
            error: str | None) -> TaskResult:
    return TaskResult(task=item.variant, agent=profile.name, adapter=item.adapter, repeat=item.repeat,
                      checks=checks, started=started, duration_s=round(time.monotonic() - t0, 3),
                      error=error, mutant=item.mutant)


def observe(item: WorkItem, profile: Profile, driver: Driver, run: TaskRun, records: tuple, windows: list,
            dirs: RunDirs, api_key: str) -> Observation:
    """Assemble the Observation: driver records, task-run records, the final log, the canary scan."""
    from harness.readers import LogDamaged, get_reader

    log = log_error = None
    log_path = driver.log_path
    if log_path and os.path.exists(log_path):
        try:
            log = get_reader(profile.log_reader)(log_path)
        except LogDamaged as exc:
            log_error = str(exc)
    transcript = driver.transcript()
    exits = tuple(driver.exits)
    hits = scan_canary(api_key, dirs.root, {"output": transcript, **{f"stderr of pid {e.pid}": e.stderr_tail for e in exits}})
    return Observation(
        task=item.variant, agent=profile.name, adapter=item.adapter, driver=item.driver, api_key=api_key,
        records=records, inputs=tuple(driver.inputs), stops=tuple(driver.stops), kills=tuple(run.kills),
        restarts=tuple(run.restarts),
        exits=tuple(dataclasses.replace(e, stderr_tail=e.stderr_tail.replace(api_key, "[canary]")) for e in exits),
        windows=tuple(windows), log=log, log_error=log_error, log_path=log_path, canary_hits=tuple(hits),
        transcript=transcript.replace(api_key, "[canary]"),
    )


def scan_canary(key: str, root: Path, texts: Mapping[str, str]) -> list[dict]:
    """Every place the canary key appears: files under the run's root, and the agent's output."""
    needle = key.encode()
    hits: list[dict] = []

    def excerpt(line: str) -> str:
        at = line.find(key)
        return line[max(0, at - 40): at + len(key) + 40].replace(key, "[canary]")

    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        data = path.read_bytes()
        if needle in data:
            for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if key in line:
                    hits.append({"where": str(path.relative_to(root)), "line": n, "excerpt": excerpt(line)})
    for where, text in texts.items():
        for n, line in enumerate(text.splitlines(), 1):
            if key in line:
                hits.append({"where": where, "line": n, "excerpt": excerpt(line)})
    return hits


def evaluate(task: Task, obs: Observation) -> tuple[CheckResult, ...]:
    """The task's checks at the task's tiers; ``unknown`` for all if no checkers are installed."""
    try:
        from harness.checks import run_checks
    except ImportError as exc:
        return tuple(dataclasses.replace(unknown(c, f"checkers unavailable: {exc}"), tier=t) for c, t in task.checks.items())
    return run_checks(obs, dict(task.checks))


def redact(checks: tuple[CheckResult, ...], key: str) -> tuple[CheckResult, ...]:
    """The canary never reaches a report, even inside a checker's evidence."""
    import json

    out = []
    for c in checks:
        text = json.dumps(c.to_json())
        out.append(CheckResult.from_json(json.loads(text.replace(key, "[canary]"))) if key in text else c)
    return tuple(out)


def latencies(item: WorkItem, profile: Profile, obs: Observation) -> list[LatencySample]:
    """L1–L4 from one task run (see contract.md: one clock, ``time.monotonic_ns``)."""
    samples: list[LatencySample] = []

    def add(lid: str, value: int, **detail: Any) -> None:
        samples.append(LatencySample(lid, int(value), profile.name, item.adapter, item.variant, item.repeat,
                                     {"driver": item.driver, **detail}))

    ended = [e for e in (obs.log.events if obs.log else ()) if e.type == "turn_ended" and e.mono_ns]
    # L1 and L2 are aborts mid-stream; a Stop inside a tool is timed by L3 (the tree kill).
    for stop in (s for s in obs.stops if s.exercised and s.phase == "stream"):
        if item.driver == "inproc":
            after = [e.mono_ns for e in ended if e.mono_ns >= stop.mono_ns]
            if after:
                add("L1", after[0] - stop.mono_ns)
        if stop.request is not None:  # L2 needs a real connection: the server's own record
            gone = [r["mono_ns"] for r in obs.records if r.get("kind") == "disconnect" and r.get("source") == "server"
                    and r.get("request") == stop.request and r["mono_ns"] >= stop.mono_ns]
            if gone:
                add("L2", gone[0] - stop.mono_ns, request=stop.request)
    for w in obs.windows:
        if w.stop_ns is not None and w.gone_ns is not None:
            add("L3", w.gone_ns - w.stop_ns, window=w.window, processes=len(w.pids))
    for e in obs.exits:
        if e.timeout_s is not None and e.expect == "timeout":
            add("L4", e.ended_ns - (e.started_ns + int(e.timeout_s * 1e9)), timeout_s=e.timeout_s, returncode=e.returncode)
    return samples


# ---------------------------------------------------------------------------------------
# A whole run


def run_header(profile: Profile, items: list[WorkItem], *, argv: list[str], repeat: int,
               shard: str | None, started: str, ended: str) -> dict[str, Any]:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    try:
        stopbench_version = version("stopbench")
    except PackageNotFoundError:
        stopbench_version = "unknown"

    return {
        "agent": profile.name,
        "agent_version": agent_version(profile),
        "profile": None if Path(profile.path).parent == BUILTIN_DIR else profile.path,
        "stopbench_version": stopbench_version,
        "host": platform.node(),
        "python": platform.python_version(),
        "started": started,
        "ended": ended,
        "adapters": sorted({i.adapter for i in items}),
        "tasks": sorted({i.task.name for i in items}),
        "repeat": repeat,
        "shard": shard,
        "argv": argv,
        "mutants": sorted({i.mutant for i in items if i.mutant}),
    }


def agent_version(profile: Profile) -> str:
    """What the profile's version command prints (first line), or "unknown"."""
    import subprocess

    if not profile.version_command:
        return "unknown"
    argv = [fill(a, base_values()) for a in profile.version_command]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return (out.stdout.strip().splitlines() or ["unknown"])[0]


async def run_items(profile: Profile, items: list[WorkItem],
                    on_done: Callable[[int, WorkItem, ItemOutcome], None] | None = None,
                    on_start: Callable[[int, WorkItem], None] | None = None) -> list[ItemOutcome]:
    """Run the items one after another (timings must not compete for the two cores)."""
    outcomes = []
    for n, item in enumerate(items, 1):
        if on_start:
            on_start(n, item)
        outcome = await run_item(profile, item)
        outcomes.append(outcome)
        if on_done:
            on_done(n, item, outcome)
    return outcomes


# ---------------------------------------------------------------------------------------
# Mutants: the agent with one failpoint on, through the same tasks


class FailpointsError(Exception):
    pass


def list_failpoints(profile: Profile) -> dict[str, tuple[str, ...]]:
    """Failpoint name → the check IDs it targets, from the profile's listing command.

    Accepts ``{name: {"checks": [...], ...}}`` or ``{name: [[checks], description]}``.
    """
    import json
    import subprocess

    if not profile.failpoints_env or not profile.failpoints_list_command:
        raise FailpointsError(f"profile {profile.name!r} declares no failpoints ([failpoints] env and list_command)")
    argv = [fill(a, base_values()) for a in profile.failpoints_list_command]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FailpointsError(f"{' '.join(argv)}: {exc}") from None
    if out.returncode != 0:
        raise FailpointsError(f"{' '.join(argv)} exited {out.returncode}: {out.stderr.strip()[:300]}")
    try:
        data = json.loads(out.stdout)
    except json.JSONDecodeError as exc:
        raise FailpointsError(f"{' '.join(argv)} did not print JSON ({exc})") from None
    if not isinstance(data, dict):
        raise FailpointsError(f"{' '.join(argv)} printed {type(data).__name__}, expected an object name → checks")
    failpoints = {}
    for name, value in data.items():
        checks = value.get("checks", []) if isinstance(value, dict) else (value[0] if isinstance(value, list) and value else [])
        failpoints[str(name)] = tuple(str(c) for c in checks)
    return failpoints


def mutation_summary(tasks: Sequence[TaskResult], failpoints: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """Per mutant: which checks failed on any task (caught it), and the mutation score.

    A mutant is caught when at least one scored (mandatory) check failed or a task could not
    complete with it on; it should fail the checks it targets, and the table says if it did.
    """
    mutants: dict[str, Any] = {}
    for name, targets in failpoints.items():
        runs = [t for t in tasks if t.mutant == name]
        failed_checks = sorted({c.check for t in runs for c in t.checks
                                if c.outcome.value == "fail" and c.tier is Tier.MANDATORY},
                               key=lambda c: (c[0], int(c[1:]) if c[1:].isdigit() else 0))
        errors = sorted({t.task for t in runs if t.error})
        mutants[name] = {
            "targets": list(targets),
            "failed": failed_checks,
            "task_errors": errors,
            "targets_caught": bool(set(targets) & set(failed_checks)),
            "caught": bool(failed_checks or errors),
            "runs": len(runs),
        }
    caught = sum(m["caught"] for m in mutants.values())
    return {"caught": caught, "total": len(mutants), "score": caught / len(mutants) if mutants else None,
            "mutants": mutants}
