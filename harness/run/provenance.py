"""Where a run's results came from: agent and exact version (as driven and as the program
reports it), the profile and its hash, stopbench's version, host and Python, when, what was
asked (argv, shard, repeat, the selection of the whole run) and the digests of the profile,
tasks and scenarios it ran with — what ``--resume`` and ``report merge`` compare before
joining results."""

from __future__ import annotations

import hashlib
import platform
import subprocess
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from harness.agents.install import get_agent
from harness.profiles import BUILTIN_DIR, Profile, base_values, fill
from harness.run.planning import WorkItem

VERSION_TIMEOUT_S = 30.0  # failsafe for a version command that hangs


def run_header(profile: Profile, items: Sequence[WorkItem], *, argv: list[str], repeat: int,
               shard: str | None, started: str, ended: str,
               planned: Sequence[WorkItem] | None = None) -> dict[str, Any]:
    """The run info of ``items``; ``planned`` is the whole run's plan when ``items`` is one
    shard of it (its selection and digests are then the whole run's, alike in every shard)."""
    planned = items if planned is None else planned
    try:
        stopbench_version = version("stopbench")
    except PackageNotFoundError:
        stopbench_version = "unknown"
    reported = reported_version(profile) if profile.version_command else None
    return {
        "agent": profile.name,
        "agent_version": driven_version(profile) or reported or "unknown",
        **({"agent_version_reported": reported} if reported is not None else {}),
        "profile": None if Path(profile.path).parent == BUILTIN_DIR else profile.path,
        "profile_sha256": profile_hash(profile),
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
        "selection": selection(planned),
        "digests": digests(profile, planned),
    }


def selection(items: Sequence[WorkItem]) -> dict[str, list[str]]:
    """What the whole run set out to do (before any ``--shard``): its tasks, adapters,
    drivers and failpoints. Shards of one run share it."""
    return {"tasks": sorted({i.task.name for i in items}), "adapters": sorted({i.adapter for i in items}),
            "drivers": sorted({i.driver for i in items}), "mutants": sorted({i.mutant for i in items if i.mutant})}


def digests(profile: Profile, items: Sequence[WorkItem]) -> dict[str, Any]:
    """SHA-256 of the profile file and of each task's file and scenario file: results made
    with other contents are not this run's to continue."""
    tasks = {i.task.name: i.task for i in items}
    return {"profile": profile_hash(profile),
            "tasks": {name: _file_hash(t.path) for name, t in sorted(tasks.items())},
            "scenarios": {name: _file_hash(t.scenario_path) for name, t in sorted(tasks.items())}}


def profile_hash(profile: Profile) -> str | None:
    return _file_hash(Path(profile.path))


def _file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def driven_version(profile: Profile) -> str | None:
    """The version of the installable agent the run drives, as asked (``--agent NAME@VERSION``)
    or pinned: one agent's releases share its name and differ here. None for a profile
    that drives no installable agent."""
    if profile.agent is None:
        return None
    return profile.agent_version or get_agent(profile.agent).version


def reported_version(profile: Profile) -> str:
    """What the profile's version command prints (first line), or "unknown" with the reason."""
    argv = [fill(a, base_values(profile)) for a in profile.version_command]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return (out.stdout.strip().splitlines() or ["unknown"])[0]
