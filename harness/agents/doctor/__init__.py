"""``stopbench agents doctor NAME|PROFILE``: one short turn in each mode the profile drives,
and what a profile author needs to see at once when something is wrong — the exact command
line (key masked), the environment's keys, the exit, stdout and stderr, the model requests the
fake server got (probes of paths it does not serve counted apart), the session id and which
rule found it where, the session store (or why they found nothing), a terminal's rendered
screen at each wait — and, for a profile that resumes by id, whether that still works after a
SIGKILL (an agent that tells its id only as it exits cannot be resumed then)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fake_server.records import Error, Record, Request, Side
from harness.model import RunStatus, redaction
from harness.model.drivers import DRIVERS
from harness.profiles import Profile, template_names
from harness.run.planning import WorkItem
from harness.run.runner import ItemOutcome, run_item
from harness.tasks import load_task

TASK = Path(__file__).with_name("task.toml")
RESUME_TASK = Path(__file__).with_name("resume-after-kill") / "task.toml"
REQUESTS_SHOWN = 20  # model requests listed one by one; a doctor turn makes a few
PLAYED = ("headless", "interactive")  # the profile sections doctor plays, each by the driver that plays it


def doctor(profile: Profile) -> tuple[int, list[str]]:
    """(exit code, lines to print): 0 when every mode the profile drives completed its turn
    against the fake server and named what the profile needs named (the session id when it
    resumes by id, the store when it has a log reader), and a resume by id survived a kill."""
    lines = [f"profile {profile.name} ({profile.path}), adapter {profile.adapters[0]}"]
    lines += [f"warning: {w}" for w in profile.warnings]
    lines.append(f"environment keys: {', '.join(sorted(profile.env)) or '(none)'}")
    if profile.log_reader == "none":
        lines.append('black-box (log_reader = "none"): checks needing a reader will be unknown; '
                     "no session store is needed")
    drivers = [d for d, spec in DRIVERS.items() if spec.section in PLAYED and d in profile.drivers()]
    if not drivers:
        return 1, [*lines, "nothing to run: doctor plays [headless] and [interactive], and the profile has neither"]
    healthy = True
    first: ItemOutcome | None = None
    for driver in drivers:
        outcome = _play(profile, TASK, driver)
        if DRIVERS[driver].section == "headless":
            first = outcome
        ok, section = _report(profile, driver, outcome)
        healthy = healthy and ok
        lines += section
    if first is not None:
        ok, section = _resume_after_kill(profile, first)
        healthy = healthy and ok
        lines += section
    return (0 if healthy else 1), lines


def _play(profile: Profile, task: Path, driver: str) -> ItemOutcome:
    item = WorkItem(load_task(task), driver, profile.adapters[0], 1)
    return asyncio.run(run_item(profile, item, retries=0))


def _report(profile: Profile, driver: str, outcome: ItemOutcome) -> tuple[bool, list[str]]:
    """One mode's turn: whether it did what the profile needs, and its lines."""
    result = outcome.result
    ev: Mapping[str, Any] = result.evidence
    key = outcome.observation.api_key if outcome.observation else ""
    reason = f" — {result.reason}" if result.reason else ""
    lines = [f"{DRIVERS[driver].section} ({driver} driver): {result.status.value}{reason}"]
    for p in ev.get("processes", []):
        exit_ = p["returncode"] if p["returncode"] is not None else f"by signal {p['signal']}"
        lines += [f"  command: {' '.join(p['argv'])}", f"  exit {exit_}"]
        if DRIVERS[driver].section == "headless":  # a terminal's output is its screens, below
            lines += [f"  stdout tail: {p['stdout_tail'][-400:]!r}", f"  stderr tail: {p['stderr_tail'][-400:]!r}"]
    shown: dict[tuple[str, ...], int] = {}
    for screen in ev.get("screens", []):
        rows = tuple(screen["lines"])
        if rows in shown:  # unchanged since an earlier wait
            lines.append(f"  screen #{screen['n']}, {screen['at']}: as #{shown[rows]}")
            continue
        shown[rows] = screen["n"]
        lines.append(f"  screen #{screen['n']}, {screen['at']}:")
        lines += [f"    | {row}" for row in rows] or ["    (blank)"]
    records = outcome.observation.records if outcome.observation else ()
    reached, request_lines = _requests(records)
    lines += [redaction.redact_text(line, [key]) for line in request_lines]
    ok = result.status is RunStatus.RAN and not result.reason and reached
    session = ev.get("session")
    if session:
        lines.append(f"  session id: {session['id']} — found by {session['found_by']}")
    else:
        lines.append("  session id: not found — " + _why_no_id(profile, ev))
        ok = ok and not _resumes_by_id(profile, driver)
    found = ev.get("log_path")
    if found:
        lines.append(f"  session store: {found}")
    elif profile.log_reader == "none":
        lines.append("  session store: not found, and not needed (black-box)")
    else:
        lines.append("  session store: not found — " + _why_no_store(profile, ev))
        ok = False
    return ok, lines


def _requests(records: tuple[Record, ...]) -> tuple[bool, list[str]]:
    """Whether the agent made a model request, and the lines saying what reached the fake
    server: each model request, side requests, then the probes of paths it does not serve
    (an agent's start-up checks, harmless 404s) counted apart, and the server's other errors."""
    model = [r for r in records if isinstance(r, Request)]
    side = [r for r in records if isinstance(r, Side)]
    errors = [r for r in records if isinstance(r, Error)]
    probes = Counter(f"{r.method or '?'} {r.path}" for r in errors if r.status == 404 and r.request is None)
    lines = [f"  model requests: {len(model)}" + ("" if model else _why_no_model_request(side))]
    for r in model[:REQUESTS_SHOWN]:
        refusal = f": {r.error}" if r.error else ""
        lines.append(f"    request {r.request}: {r.api} {r.path} → {r.status}{refusal}")
    if len(model) > REQUESTS_SHOWN:
        lines.append(f"    … and {len(model) - REQUESTS_SHOWN} more")
    if side:
        lines.append(f"  side requests (titles and the like, answered apart): {len(side)}")
    if probes:
        lines.append(f"  probes: {sum(probes.values())} request(s) to paths the fake server does not serve, answered "
                     "404 (harmless): " + ", ".join(f"{what} ×{n}" for what, n in probes.most_common()))
    lines += [f"  server error: {r.problem}" for r in errors if r.status != 404 or r.request]
    return bool(model), lines


def _why_no_model_request(side: list[Side]) -> str:
    """Why no request counted as the task's: the agent reached the server but each request was
    taken for a side request (then why, in the server's words: an agent whose shell tool was not
    recognised is not misconfigured), or it never reached the server at all."""
    if side:
        return (f" — the agent reached the fake server, but each of its requests was answered as a side request, "
                f"not by the scenario (docs/scenarios.md, *Side requests*): {side[0].reason}")
    return " — the agent never reached the fake server (check the base URL, key and model [env] or [[files]] give it)"


def _resume_after_kill(profile: Profile, first: ItemOutcome) -> tuple[bool, list[str]]:
    """For a headless profile that resumes by ``{session_id}``: SIGKILL the agent mid-stream,
    then resume. An agent that tells its id only as it exits never tells it then, and every
    task that kills and resumes it would be reported as a profile problem: said before a run."""
    assert profile.headless is not None
    if not _resumes_by_id(profile, "subprocess"):
        return True, []
    if not (first.observation and first.observation.requests()):
        return True, ["resume after a kill: not checked (the first turn made no model request to kill it at)"]
    outcome = _play(profile, RESUME_TASK, "subprocess")
    result = outcome.result
    if result.status is RunStatus.PROFILE_PROBLEM:
        return False, [f"warning: the session id shows only as the agent exits: after a SIGKILL mid-turn it is "
                       f"unknown, so a task that kills and resumes the agent is reported as a profile problem — "
                       f"{result.reason}"]
    resumed = [p for p in result.evidence.get("processes", []) if p["role"] == "resume"]
    session = result.evidence.get("session") or {}
    if result.status is RunStatus.RAN and not result.reason and resumed:
        return True, [f"resume after a kill: resumed session {session.get('id')} "
                      f"({' '.join(resumed[0]['argv'])}), exit {resumed[0]['returncode']}"]
    return False, [f"resume after a kill: {result.status.value}" + (f" — {result.reason}" if result.reason else "")]


def _resumes_by_id(profile: Profile, driver: str) -> bool:
    """The profile resumes in this mode by the id the agent tells (``{session_id}``)."""
    spec = profile.headless if DRIVERS[driver].section == "headless" else profile.interactive
    return spec is not None and spec.needs_session_id and not profile.session.chosen


def _why_no_id(profile: Profile, ev: Mapping[str, Any]) -> str:
    session = profile.session
    if not (session.stderr_regex or session.stdout_regex or session.path_regex):
        return "the profile has no session.stderr_regex, stdout_regex or path_regex (nor {session_uuid})"
    why = []
    for key, stream in (("stderr_regex", "stderr_tail"), ("stdout_regex", "stdout_tail")):
        pattern = getattr(session, key)
        if pattern and not any(re.search(pattern, p.get(stream, "")) for p in ev.get("processes", [])):
            why.append(f"{key} {pattern!r} matched nothing on {stream.removesuffix('_tail')}")
    if session.path_regex:
        why.append(f"path_regex {session.path_regex!r} matched no store file's name")
    return "; ".join(why) or "no rule found it"


def _why_no_store(profile: Profile, ev: Mapping[str, Any]) -> str:
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
