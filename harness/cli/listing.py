"""``stopbench list``: the tasks, the checks and the built-in agents, as text or JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from typing import Any

from harness.cli import EXIT_OK, tasks_of


def cmd_list(args: argparse.Namespace) -> int:
    from harness.checks import REGISTRY
    from harness.profiles import builtin_names

    tasks = tasks_of(args)
    agents = [_agent_entry(name) for name in builtin_names()]
    if args.json:
        print(json.dumps({
            "tasks": [{"name": t.name, "drivers": list(t.drivers), "adapters": list(t.adapters),
                       "checks": {c: tier.value for c, tier in t.checks.items()},
                       "description": " ".join(t.description.split())} for t in tasks],
            "checks": [{"id": check_id, "name": spec.name, "observes": spec.observes, "tier": spec.tier.value}
                       for check_id, spec in REGISTRY.items()],
            "agents": agents}, indent=2, ensure_ascii=False))
        return EXIT_OK
    width = max(60, min(os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else 100, 120))
    print("tasks:")
    for t in tasks:
        tiers: dict[str, list[str]] = {}
        for check, tier in t.checks.items():
            tiers.setdefault(tier.value, []).append(check)
        print(f"  {t.name:<22} drivers: {', '.join(t.drivers):<30} "
              + "; ".join(f"{tier}: {' '.join(ids)}" for tier, ids in tiers.items()))
        print(textwrap.fill(" ".join(t.description.split()), width=width, initial_indent=" " * 4,
                            subsequent_indent=" " * 4))
    print("checks:")
    for check_id, spec in REGISTRY.items():
        print(f"  {check_id:<4} {spec.name:<34} observes {spec.observes:<4} default {spec.tier.value}")
    print("agents:")
    for a in agents:
        if "error" in a:
            print(f"  {a['name']:<12} (broken profile: {a['error']})")
        else:
            print(f"  {a['name']:<12} adapters: {', '.join(a['adapters']):<22} drivers: {', '.join(a['drivers']):<28} "
                  f"{'' if a['installed'] else '(not installed) '}{a['description']}")
    return EXIT_OK


def _agent_entry(name: str) -> dict[str, Any]:
    """A built-in profile as ``list`` shows it: whether its agent is installed (a profile with
    no real agent behind it, like the reference agent, comes with stopbench), or why the
    profile cannot be loaded."""
    from harness.agents.install import NotInstalled
    from harness.profiles import ProfileError, agent_binary, load_profile

    try:
        profile = load_profile(name)
    except ProfileError as exc:
        return {"name": name, "error": str(exc)}
    installed = True
    if profile.agent:
        try:
            agent_binary(profile)
        except NotInstalled:
            installed = False
    return {"name": name, "agent": profile.agent, "installed": installed, "adapters": list(profile.adapters),
            "drivers": list(profile.drivers()), "description": profile.description}
