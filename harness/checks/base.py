"""The checker registry, the safe wrapper and the evidence helpers every checker shares.

A checker is a plain function ``Observation -> CheckResult`` registered with the contract
item it decides and how it observes it: ``B`` (black-box: fake-server records, exit codes,
the process table, the canary scan — works for any agent), ``L`` (the session log through
the profile's reader) or ``B+L``. The wrapper is the only caller: it stamps the checker's
name and the task's tier on the result and turns a crash into ``unknown`` — a checker that
fails to decide must never read as a pass.
"""

from __future__ import annotations

import dataclasses
import json
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from harness.model import (
    CheckResult,
    Observation,
    SessionEvent,
    SessionLog,
    Tier,
    failed,
    skipped,
    unknown,
)

Checker = Callable[[Observation], CheckResult]
EXCERPT_CHARS = 160


@dataclass(frozen=True)
class CheckSpec:
    id: str  # "C1" … "C13", or "A1", "A2" for the advisory ones
    name: str  # the function's name: the invariant, in words
    observes: str  # "B", "L" or "B+L"
    tier: Tier  # default tier; a task may set another
    fn: Checker


REGISTRY: dict[str, CheckSpec] = {}


def check(check_id: str, observes: str, tier: Tier = Tier.MANDATORY) -> Callable[[Checker], Checker]:
    """Register a checker under its contract ID."""

    def register(fn: Checker) -> Checker:
        if check_id in REGISTRY:
            raise ValueError(f"check {check_id} registered twice ({REGISTRY[check_id].name}, {fn.__name__})")
        REGISTRY[check_id] = CheckSpec(check_id, fn.__name__, observes, tier, fn)
        return fn

    return register


def get_check(key: str) -> CheckSpec:
    """A checker by contract ID (``"C3"``) or by name (``"pending_tool_calls_close"``)."""
    if key in REGISTRY:
        return REGISTRY[key]
    for spec in REGISTRY.values():
        if spec.name == key:
            return spec
    raise KeyError(f"unknown check {key!r} (known: {', '.join(REGISTRY)})")


def run_check(key: str | CheckSpec, obs: Observation, tier: Tier | None = None) -> CheckResult:
    """Run one checker safely: its result, stamped with name and tier; ``unknown`` if it raised."""
    spec = key if isinstance(key, CheckSpec) else get_check(key)
    try:
        result = spec.fn(obs)
        if not isinstance(result, CheckResult):
            raise TypeError(f"returned {type(result).__name__}, not a CheckResult")
    except Exception as err:  # a crashing checker decides nothing
        frames = traceback.extract_tb(err.__traceback__)[-3:]
        result = unknown(
            spec.id,
            f"checker {spec.name} raised {type(err).__name__}: {err}",
            {"traceback": [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}: {f.line}" for f in frames]},
        )
    return dataclasses.replace(result, check=spec.id, name=spec.name, tier=tier or spec.tier)


def run_checks(obs: Observation, selection: Mapping[str, Tier] | None = None) -> tuple[CheckResult, ...]:
    """Run the selected checks (ID or name → tier), or every registered one at its default tier."""
    if selection is None:
        return tuple(run_check(spec, obs) for spec in REGISTRY.values())
    return tuple(run_check(key, obs, tier) for key, tier in selection.items())


# --- the log, or why there is none ------------------------------------------------------


def log_or_verdict(obs: Observation, check_id: str) -> SessionLog | CheckResult:
    """The final session log, or the verdict a log check gives without one.

    No reader for this agent → ``unknown``. The reader refused the log → ``fail`` with its
    message, unless the task damaged the middle of the file on purpose (then the refusal is
    the expected outcome, judged by C10, and this check cannot be decided here → ``skipped``).
    """
    if obs.log is not None:
        return obs.log
    if obs.log_error:
        if any(r.damage == "mid-file" for r in obs.restarts):
            return skipped(check_id, "the task damaged the log mid-file on purpose, so it is unreadable by design "
                           "(its refusal is judged by C10)", {"reader": obs.log_error})
        return failed(check_id, f"the session log could not be read: {obs.log_error}", {"reader": obs.log_error})
    return unknown(check_id, "no log reader for this agent, so this log check cannot be decided")


# --- evidence items ---------------------------------------------------------------------


def clip(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """A short, single-line rendering of any value, for evidence."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def event_item(event: SessionEvent, note: str | None = None) -> dict[str, Any]:
    """A log event as evidence: where it is, and what it says (trimmed)."""
    fields = {k: v for k, v in event.data.items() if k not in ("seq", "type", "time", "mono_ns", "turn")}
    item: dict[str, Any] = {"line": event.line, "seq": event.seq, "type": event.type}
    if event.turn is not None:
        item["turn"] = event.turn
    item["excerpt"] = clip(fields)
    if note:
        item["note"] = note
    return item


def request_item(record: Mapping[str, Any], note: str | None = None) -> dict[str, Any]:
    """A model request the fake server received, as evidence: number and message outline."""
    outline = []
    for m in (record.get("canonical") or {}).get("messages", []):
        part = f"{m.get('role')}: {clip(m.get('text') or '', 60)}"
        calls = [c.get("id") for c in m.get("tool_calls") or []]
        if calls:
            part += f" calls={calls}"
        if m.get("tool_call_id"):
            part += f" for={m['tool_call_id']}"
        outline.append(part)
    item: dict[str, Any] = {"request": record.get("request"), "status": record.get("status"), "messages": outline}
    if record.get("error"):
        item["error"] = clip(record["error"])
    if note:
        item["note"] = note
    return item
