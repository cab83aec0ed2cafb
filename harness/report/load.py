"""Reading a results JSON file, with errors that name the file and the item at fault.

Every renderer and the gate read results through ``load_results``, so a truncated upload or
a file from another tool is refused once, here, with a message a person can act on — never
as a traceback from deep inside a renderer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.model import (
    READABLE_RESULTS_VERSIONS,
    RESULTS_FORMAT,
    CheckResult,
    LatencySample,
    RunResult,
    TaskResult,
    TimelineMark,
)
from harness.model.redaction import redact


class ResultsError(Exception):
    """A results file that cannot be used: which file, which item, what is wrong."""

    def __init__(self, file: str | Path, problem: str, item: str | None = None):
        self.file, self.problem, self.item = str(file), problem, item
        where = f"{self.file}: {item}" if item else self.file
        super().__init__(f"{where}: {problem}")


def load_results(path: str | Path) -> RunResult:
    """The run in a results file, secrets redacted (a file may come from anywhere)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(path, f"cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(path, f"not JSON: {exc.msg}", f"line {exc.lineno} column {exc.colno}") from None
    return parse_results(redact(data), path)


def parse_results(data: Any, source: str | Path = "<results>") -> RunResult:
    """``RunResult.from_json`` with the failing item located (``tasks[3].checks[1]``)."""
    if not isinstance(data, dict):
        raise ResultsError(source, f"expected a JSON object, found {type(data).__name__}")
    if data.get("format") != RESULTS_FORMAT:
        raise ResultsError(source, f"not a stopbench results file (format={data.get('format')!r})")
    if data.get("version") not in READABLE_RESULTS_VERSIONS:
        readable = ", ".join(map(str, READABLE_RESULTS_VERSIONS))
        raise ResultsError(source, f"results version {data.get('version')!r} is not supported (readable: {readable})")
    for key, kind in (("run", dict), ("tasks", list), ("latencies", list)):
        if not isinstance(data.get(key), kind):
            raise ResultsError(source, f"'{key}' must be a JSON {'object' if kind is dict else 'array'}")
    for key in ("agent", "adapter", "driver"):
        if key in data["run"] and not isinstance(data["run"][key], str | None):
            raise ResultsError(source, f"'{key}' must be a string, found {type(data['run'][key]).__name__}", "run")
    tasks = []
    for i, task in enumerate(data["tasks"]):
        if isinstance(task, dict) and data["version"] >= 2 and "status" not in task:
            raise ResultsError(source, "missing field 'status'", f"tasks[{i}]")  # only version 1 had none
        for key in ("checks", "timeline", "attempts"):
            if isinstance(task, dict) and key in task and not isinstance(task[key], list):
                raise ResultsError(source, f"'{key}' must be a JSON array, found {type(task[key]).__name__}",
                                   f"tasks[{i}]")
        checks = task.get("checks") if isinstance(task, dict) else None
        for j, check in enumerate(checks if isinstance(checks, list) else ()):
            _check_item(source, f"tasks[{i}].checks[{j}]", check, CheckResult.from_json)
        marks = task.get("timeline") if isinstance(task, dict) else None
        for j, mark in enumerate(marks if isinstance(marks, list) else ()):
            parsed = _check_item(source, f"tasks[{i}].timeline[{j}]", mark, TimelineMark.from_json)
            for key in ("at_ms", "end_ms"):
                value = getattr(parsed, key)
                if value is not None and not finite_number(value):
                    raise ResultsError(source, f"{key} must be a number, found {value!r}", f"tasks[{i}].timeline[{j}]")
        parsed_task = _check_item(source, f"tasks[{i}]", task, TaskResult.from_json)
        _check_count(source, f"tasks[{i}]", "repeat", parsed_task.repeat)
        attempts = [(f"tasks[{i}].attempts[{j}]", a.duration_s) for j, a in enumerate(parsed_task.attempts)]
        for where, duration in [(f"tasks[{i}]", parsed_task.duration_s), *attempts]:
            if not finite_number(duration) or duration < 0:
                raise ResultsError(source, f"duration_s must be a number of seconds >= 0, found {duration!r}", where)
        tasks.append(parsed_task)
    concurrent = data.get("concurrent_latencies", [])
    if not isinstance(concurrent, list):
        raise ResultsError(source, "'concurrent_latencies' must be a JSON array")
    return RunResult(run=data["run"], tasks=tuple(tasks), latencies=_samples(source, "latencies", data["latencies"]),
                     concurrent=_samples(source, "concurrent_latencies", concurrent))


def _samples(source: str | Path, key: str, items: list[Any]) -> tuple[LatencySample, ...]:
    samples = []
    for i, sample in enumerate(items):
        where = f"{key}[{i}]"
        parsed = _check_item(source, where, sample, LatencySample.from_json)
        if not isinstance(parsed.value_ns, int) or isinstance(parsed.value_ns, bool):
            raise ResultsError(source, f"value_ns must be an integer, found {parsed.value_ns!r}", where)
        _check_count(source, where, "repeat", parsed.repeat)
        samples.append(parsed)
    return tuple(samples)


def finite_number(value: Any) -> bool:
    """A JSON number that is one (Python's JSON reader also takes NaN and Infinity)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_count(source: str | Path, where: str, key: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ResultsError(source, f"{key} must be an integer >= 0, found {value!r}", where)


def _check_item(source: str | Path, where: str, item: Any, parse: Callable[[Mapping[str, Any]], Any]) -> Any:
    if not isinstance(item, dict):
        raise ResultsError(source, f"expected a JSON object, found {type(item).__name__}", where)
    try:
        return parse(item)
    except KeyError as exc:
        raise ResultsError(source, f"missing field {exc.args[0]!r}", where) from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise ResultsError(source, f"bad value: {exc}", where) from None
