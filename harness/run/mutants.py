"""Mutants: the agent with one failpoint on, run through the same tasks.

The profile lists the agent's failpoints (each with the checks it targets); a mutant is
caught when a scored check fails on it, and the mutation score says how many were
(``harness.model.mutation``: the one definition the reports share).
"""

from __future__ import annotations

import json
import subprocess

from harness.profiles import Profile, base_values, fill

LIST_TIMEOUT_S = 60.0  # failsafe for a listing command that hangs


class FailpointsError(Exception):
    pass


def list_failpoints(profile: Profile) -> dict[str, tuple[str, ...]]:
    """Failpoint name → the check IDs it targets, from the profile's listing command.

    Accepts ``{name: {"checks": [...], ...}}`` or ``{name: [[checks], description]}``.
    """
    if not profile.failpoints_env or not profile.failpoints_list_command:
        raise FailpointsError(f"profile {profile.name!r} declares no failpoints ([failpoints] env and list_command)")
    argv = [fill(a, base_values(profile)) for a in profile.failpoints_list_command]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=LIST_TIMEOUT_S, stdin=subprocess.DEVNULL)
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
        if isinstance(value, dict):
            checks = value.get("checks", [])
        else:
            checks = value[0] if isinstance(value, list) and value else []
        failpoints[str(name)] = tuple(str(c) for c in checks)
    return failpoints
