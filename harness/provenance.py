"""Where a run's results came from: agent and exact version, the profile and its hash,
stopbench's version, host and Python, when, what was asked (argv, shard, repeat)."""

from __future__ import annotations

import hashlib
import platform
import subprocess
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from harness.planning import WorkItem
from harness.profiles import BUILTIN_DIR, Profile, base_values, fill

VERSION_TIMEOUT_S = 30.0  # failsafe for a version command that hangs


def run_header(profile: Profile, items: Sequence[WorkItem], *, argv: list[str], repeat: int,
               shard: str | None, started: str, ended: str) -> dict[str, Any]:
    try:
        stopbench_version = version("stopbench")
    except PackageNotFoundError:
        stopbench_version = "unknown"
    return {
        "agent": profile.name,
        "agent_version": agent_version(profile),
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
    }


def profile_hash(profile: Profile) -> str | None:
    try:
        return hashlib.sha256(Path(profile.path).read_bytes()).hexdigest()
    except OSError:
        return None


def agent_version(profile: Profile) -> str:
    """What the profile's version command prints (first line), or "unknown" with the reason."""
    if not profile.version_command:
        return "unknown"
    argv = [fill(a, base_values(profile)) for a in profile.version_command]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return (out.stdout.strip().splitlines() or ["unknown"])[0]
