"""The task file's schema: msgspec Structs that take only the keys a ``task.toml`` has, with
their types, and one Struct per kind of step (a union tagged by ``do``). Decoding a parsed
task into :class:`TaskFile` refuses an unknown key, a missing required key or a value of the
wrong type, and :func:`decode` says which item (``steps[3].timeout``, ``checks.mandatory``,
``drivers``) in the words a task author reads. What types cannot say (a driver that exists,
a beacon a wait reads, an interrupt that follows a wait) is checked after, in
``harness.tasks`` and ``harness.tasks.steps``. ``[notes]`` is keyed by the author's check
IDs, so it is typed ``dict[str, Any]`` here and checked key by key there, so an error names
the key.

A new kind of step is a Struct here, a member of :data:`AnyStep`, and a row of
``harness.tasks.steps.STEPS`` (a test holds the two equal); ``docs/tasks.md`` describes it.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, NoReturn

import msgspec
from msgspec import UNSET, UnsetType

from harness.model.drivers import DRIVERS

Number = int | float  # seconds, as TOML writes them: 2 or 2.5 (the range is the step's check)


class StepTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="do"):
    """A step: ``do`` names its kind, the other keys are its own; an optional key left out is
    UNSET, so a step keeps only what its author wrote."""


class SendStep(StepTable, frozen=True, forbid_unknown_fields=True, tag="send"):
    text: str
    timeout: Number | UnsetType = UNSET
    expect: str | UnsetType = UNSET


class WaitStep(StepTable, frozen=True, forbid_unknown_fields=True, tag="wait"):
    beacon: str = msgspec.field(name="for")
    request: int | UnsetType = UNSET
    chunk: int | UnsetType = UNSET
    window: str | UnsetType = UNSET


class StopStep(StepTable, frozen=True, forbid_unknown_fields=True, tag="stop"):
    source: str | UnsetType = UNSET
    phase: str | UnsetType = UNSET


class SettleStep(StepTable, frozen=True, forbid_unknown_fields=True, tag="settle"):
    pass


class KillStep(StepTable, frozen=True, forbid_unknown_fields=True, tag="kill"):
    at: str | UnsetType = UNSET


class DamageStep(StepTable, frozen=True, forbid_unknown_fields=True, tag="damage"):
    kind: str


class RestartStep(StepTable, frozen=True, forbid_unknown_fields=True, tag="restart"):
    expect: str | UnsetType = UNSET
    text: str | UnsetType = UNSET


class QueueStep(StepTable, frozen=True, forbid_unknown_fields=True, tag="queue"):
    text: str
    name: str | UnsetType = msgspec.field(default=UNSET, name="as")


class CancelQueuedStep(StepTable, frozen=True, forbid_unknown_fields=True, tag="cancel-queued"):
    item: str


AnyStep = (SendStep | WaitStep | StopStep | SettleStep | KillStep | DamageStep | RestartStep | QueueStep
           | CancelQueuedStep)
# Each kind's Struct by the name ``do`` gives it.
STEP_SCHEMAS: dict[str, type[StepTable]] = {str(s.__struct_config__.tag): s for s in typing.get_args(AnyStep)}


class ChecksTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """[checks]: the check IDs of each tier (``harness.model.Tier``)."""

    mandatory: list[str] = []
    advisory: list[str] = []
    informational: list[str] = []


class TaskFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    drivers: Annotated[list[str], msgspec.Meta(min_length=1)]
    checks: ChecksTable
    steps: Annotated[list[AnyStep], msgspec.Meta(min_length=1)]
    description: str = ""
    scenario: str = "scenario.toml"
    adapters: list[str] = []
    notes: dict[str, Any] = {}


def step_keys(schema: type[StepTable]) -> tuple[str, ...]:
    """The keys a kind of step takes besides ``do``, as its author writes them."""
    return schema.__struct_encode_fields__


def step_args(step: StepTable) -> dict[str, Any]:
    """The keys its author gave a step (``do`` aside), under the names written."""
    given = ((name, getattr(step, field)) for field, name in zip(step.__struct_fields__,
                                                                  step.__struct_encode_fields__, strict=True))
    return {name: value for name, value in given if value is not UNSET}


# What each top-level item must be, in a task author's words; the items a task must have say
# "required: …" whatever is wrong with them (absent, empty or of the wrong type).
MUST = {
    "name": "required: lower-case letters, digits and '-'",
    "drivers": f"required: a non-empty list of driver names ({', '.join(DRIVERS)})",
    "checks": "required: a table with mandatory / advisory / informational lists of check IDs",
    "steps": "required: at least one [[steps]] table",
    "description": "must be a string",
    "scenario": "must be a file name",
    "adapters": "must be a list of adapter names",
    "notes": "must be a table of check ID = text",
}
_AT = re.compile(r"^(?P<problem>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)


def decode(data: Mapping[str, Any], fail: Callable[[str, str], NoReturn]) -> TaskFile:
    """``data`` as a :class:`TaskFile`, or ``fail(item, problem)`` with what is wrong and where."""
    try:
        return msgspec.convert(data, TaskFile)
    except msgspec.ValidationError as exc:
        fail(*_explain(str(exc), data))


def _explain(message: str, data: Mapping[str, Any]) -> tuple[str, str]:
    """msgspec's words (``Expected `str`, got `int` - at `$.steps[0].text```) in a task's."""
    m = _AT.match(message)
    assert m is not None
    problem, path = m["problem"], m["path"] or ""
    keys: list[str | int] = [key or int(index) for key, index in re.findall(r"\.([\w-]+)|\[(\d+)\]", path)]
    unknown = re.match(r"Object contains unknown field `(.+)`", problem)
    missing = re.match(r"Object missing required field `(.+)`", problem)
    if not keys:
        if unknown:
            return unknown[1], f"unknown key (known: {', '.join(sorted(TaskFile.__struct_fields__))})"
        assert missing, message
        return missing[1], MUST[missing[1]]
    if keys[0] == "steps" and len(keys) > 1:
        return _explain_step(typing.cast(int, keys[1]), keys[2:], problem, data)
    if keys[0] == "checks":
        if unknown:
            return f"checks.{unknown[1]}", "not a tier (mandatory, advisory, informational)"
        if len(keys) > 1:
            return f"checks.{keys[1]}", "must be a list of check IDs"
    return str(keys[0]), MUST[str(keys[0])]


def _explain_step(index: int, keys: list[str | int], problem: str, data: Mapping[str, Any]) -> tuple[str, str]:
    """An error inside ``steps[index]`` (0-based), named the 1-based way a task's steps are."""
    item = f"steps[{index + 1}]"
    raw = data["steps"][index]
    kind = raw.get("do") if isinstance(raw, dict) else None
    if keys == ["do"] and isinstance(kind, str):
        return f"{item}.do", f"{kind!r} is not a step (known: {', '.join(STEP_SCHEMAS)})"
    if kind not in STEP_SCHEMAS or problem == "Object missing required field `do`":
        return item, f"each step needs do = one of {', '.join(STEP_SCHEMAS)}"
    if missing := re.match(r"Object missing required field `(.+)`", problem):
        return f"{item}.{missing[1]}", f"required by '{kind}'"
    if unknown := re.match(r"Object contains unknown field `(.+)`", problem):
        takes = ", ".join(step_keys(STEP_SCHEMAS[kind])) or "nothing"
        return f"{item}.{unknown[1]}", f"'{kind}' takes no {unknown[1]!r} (takes: {takes})"
    key = str(keys[0])
    return f"{item}.{key}", f"wrong type {type(raw[key]).__name__}"
