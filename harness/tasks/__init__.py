"""Tasks as data: ``<name>/task.toml`` plus the fake server's ``scenario.toml``, shipped in
this package (found with ``importlib.resources``, so an installed wheel has them too).

A task is a scenario (what the fake model answers, when each chunk flushes, which bash
windows open), a short list of steps in a small vocabulary (their keys and types are the
file's schema, ``harness.tasks.schema``; what else each kind must satisfy, and the budget that
bounds it, ``harness.tasks.steps``), and the checks that apply with their tier.
Every interrupt in a task follows a ``wait`` on a beacon — a request received, a chunk
flushed, a window opened — so nothing depends on timing. The format is documented in
``docs/tasks.md``; every problem found names the file, the item and what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any, NoReturn

from fake_server import ScenarioError
from fake_server import load_scenario as read_scenario
from fake_server.scenario import Scenario
from harness.datafile import DataFileError, read_toml
from harness.model import Tier
from harness.model.drivers import DRIVERS
from harness.tasks import schema
from harness.tasks.steps import Step, parse_steps

TASKS_DIR = Path(str(files(__name__)))


class TaskError(DataFileError):
    """A task that cannot be run, naming the file, the item and the problem."""


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
    """Validate a parsed task table; every problem names its item. The schema
    (``harness.tasks.schema``) refuses unknown keys and wrong types; the checks below, and each
    step's own (``harness.tasks.steps``), what types cannot say."""
    def fail(item: str, problem: str) -> NoReturn:
        raise TaskError(path, item, problem)

    raw = schema.decode(data, fail)
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", raw.name):
        fail("name", schema.MUST["name"])
    if raw.name != path.parent.name:
        fail("name", f"{raw.name!r} differs from its folder name {path.parent.name!r}")
    for d in raw.drivers:
        if d not in DRIVERS:
            fail("drivers", f"{d!r} is not a driver ({', '.join(DRIVERS)})")
    if len(set(raw.drivers)) != len(raw.drivers):
        fail("drivers", "a driver is listed twice")
    scenario_path = (path.parent / raw.scenario).resolve()
    if not scenario_path.is_file():
        fail("scenario", f"{scenario_path} not found")
    checks = _parse_checks(raw.checks, fail, known_checks)
    steps = parse_steps(raw.steps, fail, tuple(raw.drivers))
    for check_id, note in raw.notes.items():
        if check_id not in checks:
            fail(f"notes.{check_id}", f"not one of the task's checks ({', '.join(checks)})")
        if not isinstance(note, str) or not note.strip():
            fail(f"notes.{check_id}", "must say why the check applies here")
    scenario = None
    if load_scenario:
        try:
            scenario = read_scenario(str(scenario_path))
        except ScenarioError as exc:
            fail("scenario", str(exc))
        _check_beacons(steps, scenario, fail)
    return Task(
        name=raw.name, path=path, description=raw.description, scenario_path=scenario_path,
        drivers=tuple(raw.drivers), steps=steps, checks=checks, adapters=tuple(raw.adapters), scenario=scenario,
        notes=raw.notes,
    )


def _check_beacons(steps: tuple[Step, ...], scenario: Scenario, fail: Any) -> None:
    """Every wait is for a beacon the scenario can post: a window one of its frames opens, a
    chunk no further than its longest response streams. Otherwise the wait could only run out
    of budget, and the agent would be blamed for the task's mistake."""
    windows = scenario.windows
    bounds = [r.chunks for r in scenario.responses]
    longest = None
    if scenario.finish_action is None and None not in bounds:
        longest = max([b for b in bounds if b is not None] + [1 if scenario.side_requests else 0])
    for step in steps:
        if step.do != "wait":
            continue
        item = f"steps[{step.index}]"
        if step.get("for") == "window" and windows is not None and step.get("window") not in windows:
            opened = ", ".join(sorted(windows)) or "none"
            fail(f"{item}.window", f"no frame of the scenario opens window {step.get('window')!r} (it opens: {opened})")
        if step.get("for") == "chunk" and longest is not None and step.get("chunk") > longest:
            fail(f"{item}.chunk", f"chunk {step.get('chunk')} is past the end: no response of the scenario streams "
                                  f"more than {longest} chunk(s)")


def _parse_checks(table: schema.ChecksTable, fail: Any, known_checks: set[str] | None) -> dict[str, Tier]:
    """Each check ID of the task with its tier; an ID may be in one tier only."""
    checks: dict[str, Tier] = {}
    for tier in Tier:
        for check_id in getattr(table, tier.value):
            if check_id in checks:
                fail(f"checks.{tier.value}", f"{check_id} is listed twice")
            if known_checks is not None and check_id not in known_checks:
                fail(f"checks.{tier.value}", f"unknown check {check_id!r} (known: {', '.join(sorted(known_checks))})")
            checks[check_id] = tier
    if not checks:
        fail("checks", schema.MUST["checks"])
    return checks
