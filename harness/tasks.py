"""Tasks as data: ``tasks/<name>/task.toml`` plus the fake server's ``scenario.toml``.

A task is a scenario (what the fake model answers, when each chunk flushes, which bash
windows open), a short list of steps in a small vocabulary, and the checks that apply with
their tier. Every interrupt in a task follows a ``wait`` on a beacon — a request received, a
chunk flushed, a window opened — so nothing depends on timing. The format is documented in
``docs/tasks.md``; every problem found names the file, the item and what is wrong.
"""

from __future__ import annotations

import re
from harness.datafile import DataFileError, read_toml
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from harness.model import Tier

TASKS_DIR = Path(__file__).resolve().parent.parent / "tasks"
DRIVERS = ("inproc", "subprocess", "terminal")
STOP_SOURCES = ("user", "parent")
BEACONS = ("request", "chunk", "window", "disconnect")
KILL_POINTS = ("request-received", "chunk-flushed", "window-opened", "next-request")

# Each step: required fields, optional fields with their types.
STEP_FIELDS: dict[str, tuple[dict[str, type], dict[str, type]]] = {
    "send": ({"text": str}, {"timeout": (int, float), "expect": str}),
    "wait": ({"for": str}, {"request": int, "chunk": int, "window": str}),
    "stop": ({}, {"source": str, "phase": str}),
    "settle": ({}, {}),
    "kill": ({}, {"at": str}),
    "damage": ({"kind": str}, {}),
    "restart": ({}, {"expect": str, "text": str}),
    "queue": ({"text": str}, {"as": str}),
    "cancel-queued": ({"item": str}, {}),
}
SEND_EXPECT = ("completed", "error", "stopped", "timeout")
DAMAGE_KINDS = ("torn-tail", "mid-file")


class TaskError(DataFileError):
    """A task that cannot be run, naming the file, the item and the problem."""


@dataclass(frozen=True)
class Step:
    do: str
    args: Mapping[str, Any]
    index: int  # 1-based position in the task, for messages

    def get(self, key: str, default: Any = None) -> Any:
        return self.args.get(key, default)

    def describe(self) -> str:
        extra = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"step {self.index} ({self.do}{': ' + extra if extra else ''})"


@dataclass(frozen=True)
class Task:
    name: str
    path: Path  # the task.toml
    description: str
    scenario_path: Path
    drivers: tuple[str, ...]
    steps: tuple[Step, ...]
    checks: Mapping[str, Tier]  # check ID → tier
    adapters: tuple[str, ...] = ()  # empty: every adapter of the agent
    scenario: Any = None  # the loaded fake-server scenario
    notes: Mapping[str, str] = field(default_factory=dict)  # check ID → why it applies here

    def variant(self, driver: str) -> str:
        """The name a result carries: the task, plus the driver when there are several."""
        return self.name if len(self.drivers) == 1 else f"{self.name}[{driver}]"


def discover(root: Path = TASKS_DIR) -> list[Path]:
    return sorted(root.glob("*/task.toml"))


def load_all(root: Path = TASKS_DIR, *, known_checks: set[str] | None = None) -> list[Task]:
    return [load_task(p, known_checks=known_checks) for p in discover(root)]


def load_task(path: str | Path, *, known_checks: set[str] | None = None, load_scenario: bool = True) -> Task:
    path = Path(path)
    if path.is_dir():
        path = path / "task.toml"
    if not path.is_file():
        raise TaskError(path, "task", "file not found")
    return parse_task(read_toml(path, TaskError), path, known_checks=known_checks, load_scenario=load_scenario)


def parse_task(data: Mapping[str, Any], path: Path, *, known_checks: set[str] | None = None,
               load_scenario: bool = True) -> Task:
    def fail(item: str, problem: str):
        raise TaskError(path, item, problem)

    known_top = {"name", "description", "scenario", "drivers", "adapters", "checks", "steps", "notes"}
    for key in data:
        if key not in known_top:
            fail(key, f"unknown key (known: {', '.join(sorted(known_top))})")
    name = data.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        fail("name", "required: lower-case letters, digits and '-'")
    if name != path.parent.name:
        fail("name", f"{name!r} differs from its folder name {path.parent.name!r}")
    drivers = data.get("drivers")
    if not isinstance(drivers, list) or not drivers or not all(isinstance(d, str) for d in drivers):
        fail("drivers", f"required: a non-empty list of driver names ({', '.join(DRIVERS)})")
    for d in drivers:
        if d not in DRIVERS:
            fail("drivers", f"{d!r} is not a driver ({', '.join(DRIVERS)})")
    adapters = data.get("adapters", [])
    if not isinstance(adapters, list) or not all(isinstance(a, str) for a in adapters):
        fail("adapters", "must be a list of adapter names")
    scenario_name = data.get("scenario", "scenario.toml")
    if not isinstance(scenario_name, str):
        fail("scenario", "must be a file name")
    scenario_path = (path.parent / scenario_name).resolve()
    if not scenario_path.is_file():
        fail("scenario", f"{scenario_path} not found")
    checks = _parse_checks(data.get("checks"), fail, known_checks)
    steps = _parse_steps(data.get("steps"), fail, drivers)
    notes = data.get("notes", {})
    if not isinstance(notes, dict):
        fail("notes", "must be a table of check ID = text")
    scenario = None
    if load_scenario:
        scenario = _load_scenario(scenario_path, fail)
    return Task(
        name=name, path=path, description=str(data.get("description", "")), scenario_path=scenario_path,
        drivers=tuple(drivers), steps=steps, checks=checks, adapters=tuple(adapters), scenario=scenario,
        notes=notes,
    )


def _parse_checks(table: Any, fail, known_checks: set[str] | None) -> dict[str, Tier]:
    if not isinstance(table, dict) or not table:
        fail("checks", "required: a table with mandatory / advisory / informational lists of check IDs")
    checks: dict[str, Tier] = {}
    for tier_name, ids in table.items():
        try:
            tier = Tier(tier_name)
        except ValueError:
            fail(f"checks.{tier_name}", "not a tier (mandatory, advisory, informational)")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            fail(f"checks.{tier_name}", "must be a list of check IDs")
        for check_id in ids:
            if check_id in checks:
                fail(f"checks.{tier_name}", f"{check_id} is listed twice")
            if known_checks is not None and check_id not in known_checks:
                fail(f"checks.{tier_name}", f"unknown check {check_id!r} (known: {', '.join(sorted(known_checks))})")
            checks[check_id] = tier
    return checks


def _parse_steps(steps: Any, fail, drivers: list[str]) -> tuple[Step, ...]:
    if not isinstance(steps, list) or not steps:
        fail("steps", "required: at least one [[steps]] table")
    out: list[Step] = []
    queued_names: set[str] = set()
    last_wait: Step | None = None
    sent = False
    for n, raw in enumerate(steps, 1):
        item = f"steps[{n}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("do"), str):
            fail(item, f"each step needs do = one of {', '.join(STEP_FIELDS)}")
        do = raw["do"]
        if do not in STEP_FIELDS:
            fail(f"{item}.do", f"{do!r} is not a step (known: {', '.join(STEP_FIELDS)})")
        required, optional = STEP_FIELDS[do]
        args = {k: v for k, v in raw.items() if k != "do"}
        for key, typ in required.items():
            if key not in args:
                fail(f"{item}.{key}", f"required by '{do}'")
        for key, value in args.items():
            typ = required.get(key) or optional.get(key)
            if typ is None:
                fail(f"{item}.{key}", f"'{do}' takes no {key!r} (takes: {', '.join([*required, *optional]) or 'nothing'})")
            if isinstance(value, bool) or not isinstance(value, typ):
                fail(f"{item}.{key}", f"wrong type {type(value).__name__}")
        step = Step(do=do, args=args, index=n)
        _check_step(step, item, fail, queued_names, last_wait, sent, drivers)
        if do == "wait":
            last_wait = step
        if do in ("send", "restart"):  # a new turn (or process): earlier beacons are stale
            sent = True
            last_wait = None
        if do == "queue" and "as" in args:
            queued_names.add(args["as"])
        out.append(step)
    return tuple(out)


def _check_step(step: Step, item: str, fail, queued: set[str], last_wait: Step | None, sent: bool,
                drivers: list[str]) -> None:
    a = step.args
    if step.do != "send" and step.do not in ("damage",) and not sent and step.do != "wait":
        fail(item, f"'{step.do}' before any 'send': there is no agent to act on yet")
    if step.do == "send":
        if a.get("expect", "completed") not in SEND_EXPECT:
            fail(f"{item}.expect", f"one of {', '.join(SEND_EXPECT)}")
        if "timeout" in a and a["timeout"] <= 0:
            fail(f"{item}.timeout", "must be positive")
        if "timeout" in a and drivers != ["subprocess"]:
            fail(f"{item}.timeout", "a per-turn timeout needs the subprocess driver only (drivers = [\"subprocess\"])")
    elif step.do == "wait":
        beacon = a["for"]
        if beacon not in BEACONS:
            fail(f"{item}.for", f"{beacon!r} is not a beacon ({', '.join(BEACONS)})")
        needs = {"request": ["request"], "chunk": ["request", "chunk"], "window": ["window"],
                 "disconnect": ["request"]}[beacon]
        for key in needs:
            if key not in a:
                fail(f"{item}.{key}", f"required when waiting for {beacon!r}")
        for key in ("request", "chunk"):
            if key in a and a[key] < 1:
                fail(f"{item}.{key}", "numbers start at 1")
    elif step.do in ("stop", "kill"):
        if last_wait is None:
            fail(item, f"'{step.do}' must follow a 'wait' on a beacon of the current turn: "
                       "interrupts are triggered by beacons, never by time")
        if step.do == "stop" and a.get("source", "user") not in STOP_SOURCES:
            fail(f"{item}.source", f"one of {', '.join(STOP_SOURCES)}")
        if step.do == "stop" and a.get("phase", "tool") not in ("tool", "stream", "other"):
            fail(f"{item}.phase", "one of tool, stream, other")
        if step.do == "kill":
            if "inproc" in drivers:
                fail(item, "the in-process driver cannot SIGKILL the agent; use subprocess or terminal")
            if a.get("at", "request-received") not in KILL_POINTS:
                fail(f"{item}.at", f"one of {', '.join(KILL_POINTS)}")
    elif step.do == "damage":
        if a["kind"] not in DAMAGE_KINDS:
            fail(f"{item}.kind", f"one of {', '.join(DAMAGE_KINDS)}")
    elif step.do == "restart":
        if a.get("expect", "ready") not in ("ready", "refused"):
            fail(f"{item}.expect", "one of ready, refused")
        if "inproc" in drivers:
            fail(item, "the in-process driver cannot restart the agent")
    elif step.do == "queue":
        if "subprocess" in drivers:
            fail(item, "a headless run takes no input while it runs; queue needs terminal or inproc")
    elif step.do == "cancel-queued":
        if a["item"] not in queued:
            fail(f"{item}.item", f"{a['item']!r} names no earlier queue step (as = …)")


def _load_scenario(path: Path, fail) -> Any:
    try:
        from fake_server import ScenarioError, load_scenario
    except ImportError as exc:
        fail("scenario", f"the fake server is not available to load it ({exc})")
    try:
        return load_scenario(str(path))
    except ScenarioError as exc:
        fail("scenario", str(exc))
