"""Evidence as a person reads it: each item's fields in words, times relative to the task's
start, PIDs with their roles, requests outlined, and what each field points at on the
run's timeline.

Pure data in, plain values out (no markup): the HTML renderer lays the fields out as
tables and turns ``ref`` into a link to the timeline mark with that ref; the raw item stays
available beside them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.model import TaskResult

# Fields that say what an item is about come first, in this order; the rest keep theirs.
LEADING = ("kind", "type", "what", "request", "window", "pid", "role", "turn", "line", "seq", "restart", "at",
           "stop", "phase", "note")
PID_KEYS = ("pid", "agent_pid", "ppid")  # shown with the process's role
PID_LISTS = ("pids", "tree")
COMMAND_LINES = ("argv", "cmdline")  # shown as one line, as a shell would
EPOCH_MIN = 1e9  # a float above this in a *time field is seconds since 1970 (psutil's create_time)


@dataclass(frozen=True)
class Context:
    """What a run knows that makes its evidence readable."""

    start_ns: int | None = None  # the task's start on CLOCK_MONOTONIC, when the run recorded it
    roles: Mapping[int, str] = field(default_factory=dict)  # pid -> what the process was

    @classmethod
    def of(cls, task: TaskResult) -> Context:
        roles: dict[int, str] = {}
        evidence = task.evidence if isinstance(task.evidence, Mapping) else {}
        for process in evidence.get("processes") or ():
            if isinstance(process, Mapping) and isinstance(process.get("pid"), int) and process.get("role"):
                roles[process["pid"]] = str(process["role"])
        failure = evidence.get("agent_failure")
        exit_ = failure.get("exit") if isinstance(failure, Mapping) else None
        if isinstance(exit_, Mapping) and isinstance(exit_.get("pid"), int) and exit_.get("role"):
            roles.setdefault(exit_["pid"], str(exit_["role"]))
        for c in task.checks:
            for item in c.evidence.items:
                _collect_roles(item, roles)
        start = evidence.get("start_ns")
        return cls(start_ns=start if isinstance(start, int) and not isinstance(start, bool) else None, roles=roles)


def _collect_roles(value: Any, roles: dict[int, str]) -> None:
    if isinstance(value, Mapping):
        if isinstance(value.get("pid"), int) and isinstance(value.get("role"), str):
            roles.setdefault(value["pid"], value["role"])
        for v in value.values():
            _collect_roles(v, roles)
    elif isinstance(value, list | tuple):
        for v in value:
            _collect_roles(v, roles)


@dataclass(frozen=True)
class Field:
    """One field of an evidence item, readable: ``text``, or ``lines`` (a list), or ``rows``
    (a nested table); ``ref`` is the timeline mark it points at ("request 3", "pid 4242")."""

    key: str
    text: str = ""
    ref: str | None = None
    lines: tuple[str, ...] = ()
    rows: tuple[tuple[Field, ...], ...] = ()


def fields(item: Mapping[str, Any], ctx: Context) -> list[Field]:
    keys = [k for k in LEADING if k in item] + [k for k in item if k not in LEADING]
    return [_field(str(k), item[k], ctx) for k in keys]


def _field(key: str, value: Any, ctx: Context) -> Field:
    if value is None:
        return Field(key, "—")
    if key == "request" and isinstance(value, int) and not isinstance(value, bool):
        return Field(key, f"request {value}", ref=f"request {value}")
    if key == "window" and isinstance(value, str):
        ref = value if value.startswith("window ") else f"window {value}"
        return Field(key, ref, ref=ref)
    if key in PID_KEYS and isinstance(value, int) and not isinstance(value, bool):
        return Field(key, pid_text(value, ctx), ref=f"pid {value}" if key in ("pid", "agent_pid") else None)
    if key in PID_LISTS and isinstance(value, list) and all(isinstance(v, int) for v in value):
        return Field(key, ", ".join(pid_text(v, ctx) for v in value))
    if key in COMMAND_LINES and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return Field(key, " ".join(value))
    if isinstance(value, bool):
        return Field(key, "yes" if value else "no")
    if isinstance(value, int | float):
        return Field(key, number_text(key, value, ctx))
    if isinstance(value, str):
        return Field(key, value)
    if isinstance(value, Mapping):
        if all(not isinstance(v, Mapping | list) for v in value.values()):
            return Field(key, "; ".join(f"{k}: {_scalar(v)}" for k, v in value.items()) or "{}")
        return Field(key, rows=(tuple(fields(value, ctx)),))
    if isinstance(value, list | tuple):
        if not value:
            return Field(key, "none")
        if all(isinstance(v, Mapping) for v in value):
            return Field(key, rows=tuple(tuple(fields(v, ctx)) for v in value))
        return Field(key, lines=tuple(_scalar(v) for v in value))
    return Field(key, str(value))


def _scalar(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


def pid_text(pid: int, ctx: Context) -> str:
    role = ctx.roles.get(pid)
    return f"{pid} ({role})" if role else str(pid)


def number_text(key: str, value: float, ctx: Context) -> str:
    """Times in words: ``*_ns`` on the monotonic clock relative to the task's start,
    ``*_ms`` as milliseconds, epoch seconds (``create_time``) as a UTC clock time."""
    if key.endswith("_ns") and isinstance(value, int):
        if ctx.start_ns is not None:
            return f"{(value - ctx.start_ns) / 1e6:+.1f} ms from the task's start"
        return f"{value / 1e9:.6f} s on the monotonic clock"
    if key.endswith("_ms"):
        return f"{value:g} ms"
    if key.endswith("_s"):
        return f"{value:g} s"
    if (key.endswith("time") or key.endswith("_at")) and isinstance(value, float) and value > EPOCH_MIN:
        when = dt.datetime.fromtimestamp(value, dt.UTC)
        return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d} UTC"
    return f"{value:g}" if isinstance(value, float) else str(value)


def refs_in(item: Mapping[str, Any]) -> list[str]:
    """Every timeline ref an item points at, in field order (nested tables included)."""
    found: list[str] = []

    def walk(fs: Sequence[Field]) -> None:
        for f in fs:
            if f.ref and f.ref not in found:
                found.append(f.ref)
            for row in f.rows:
                walk(row)

    walk(fields(item, Context()))
    return found
