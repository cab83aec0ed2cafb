"""``stopbench agents doctor NAME|PROFILE``: one short turn, and what a profile author needs to
see at once when something is wrong — the exact command line (key masked), the environment's
keys, the exit, stdout and stderr, the requests the fake server got, and what the profile's
session rules discovered (or why they found nothing)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from harness.planning import WorkItem
from harness.profiles import Profile, template_names
from harness.runner import run_item
from harness.tasks import load_task

TASK = Path(__file__).with_name("task.toml")


def doctor(profile: Profile) -> tuple[int, list[str]]:
    """(exit code, lines to print): 0 when the turn completed and the session was found."""
    task = load_task(TASK)
    result = asyncio.run(run_item(profile, WorkItem(task, "subprocess", profile.adapters[0], 1), retries=0)).result
    ev: dict[str, Any] = dict(result.evidence)
    lines = [f"profile {profile.name} ({profile.path}), adapter {profile.adapters[0]}: {result.status.value}"
             + (f" — {result.reason}" if result.reason else "")]
    lines += [f"warning: {w}" for w in profile.warnings]
    lines.append(f"environment keys: {', '.join(sorted(profile.env))}")
    for p in ev.get("processes", []):
        lines += [f"command: {' '.join(p['argv'])}",
                  f"  exit {p['returncode'] if p['returncode'] is not None else 'by signal ' + str(p['signal'])}",
                  f"  stdout tail: {p['stdout_tail'][-400:]!r}", f"  stderr tail: {p['stderr_tail'][-400:]!r}"]
    requests = [r for r in ev.get("records", []) if r.get("kind") in ("request", "side", "error")]
    lines.append(f"fake server: {len(requests)} request(s)" + ("" if requests else " — the agent never reached it"))
    lines += [f"  {r}" for r in requests[:12]]
    ok = result.status.value == "ran" and not result.reason
    found = ev.get("log_path")
    lines.append(f"session store: {found}" if found else "session store: not found — " + _why_not(profile, ev))
    return (0 if ok and found else 1), lines


def _why_not(profile: Profile, ev: dict[str, Any]) -> str:
    session = profile.session
    if not session.log_glob and not (session.stderr_regex or session.stdout_regex):
        return "the profile has no [session] rules (log_glob, stderr_regex, stdout_regex, path_regex)"
    out = [p.get("stderr_tail", "") for p in ev.get("processes", [])]
    why = []
    if session.stderr_regex and not any(re.search(session.stderr_regex, t) for t in out):
        why.append(f"stderr_regex {session.stderr_regex!r} matched nothing on stderr")
    if session.log_glob:
        why.append(f"log_glob {session.log_glob!r} matched no file (templates are filled per run: "
                   f"{', '.join(sorted(template_names(session.log_glob)))})")
    return "; ".join(why) or "no rule found it"


__all__ = ["doctor"]
