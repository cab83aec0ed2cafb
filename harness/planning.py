"""What a run will do: work items (task variant × adapter × repeat × mutant), which of them
apply to the agent, and how they are split across machines.

A work item that does not apply to the agent — the task needs a driver its profile lacks,
or damage its reader cannot do — is still planned, with the reason, so it is reported as
*not run* instead of silently vanishing or, worse, counting as conformant.

``--shard i/n`` runs the i-th of n shares (1-based). The split must be the same on every
machine and every run, so it does not use ``hash()`` (salted per process): items are ordered
by a stable key and dealt round-robin, which keeps the shares within one item of each other.
``stopbench report merge`` uses the same parsing to join the shares.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.profiles import Profile
from harness.readers import get_reader
from harness.tasks import Task

T = TypeVar("T")


@dataclass(frozen=True)
class WorkItem:
    """One unit of work: a task variant for one adapter, one repeat, maybe one mutant."""

    task: Task
    driver: str
    adapter: str
    repeat: int
    mutant: str | None = None
    not_run: str | None = None  # why this task does not apply to the agent, if it does not

    @property
    def variant(self) -> str:
        return self.task.variant(self.driver)

    @property
    def key(self) -> str:
        """Stable across runs and machines: what shards are cut on and results matched by."""
        return f"{self.variant}/{self.adapter}/{self.repeat}/{self.mutant or '-'}"


def plan(profile: Profile, tasks: Sequence[Task], *, adapters: Sequence[str] | None = None, repeat: int = 1,
         mutants: Sequence[str | None] = (None,)) -> list[WorkItem]:
    """Every work item, in a deterministic order: mutant, task, driver, adapter, repeat.

    Mutants skip the in-process driver: a failpoint is switched on in the environment of a
    process the harness starts, and an agent loaded into the harness never sees it — its
    run would test the unmutated agent and count as the mutant's. A not-run item is planned
    once (repeat 1), with its reason.
    """
    items = []
    for mutant in mutants:
        for task in tasks:
            for driver in task.drivers:
                if mutant is not None and driver == "inproc":
                    continue
                reason = not_applicable(profile, task, driver)
                for adapter in adapters or profile.adapters:
                    if adapter not in profile.adapters or (task.adapters and adapter not in task.adapters):
                        continue
                    if reason is not None:
                        if mutant is None:
                            items.append(WorkItem(task, driver, adapter, 1, mutant, not_run=reason))
                        continue
                    for r in range(1, repeat + 1):
                        items.append(WorkItem(task, driver, adapter, r, mutant))
    return items


def not_applicable(profile: Profile, task: Task, driver: str) -> str | None:
    """Why ``task`` cannot run on ``driver`` for this agent (None when it can)."""
    if driver not in profile.drivers():
        section = {"inproc": "[inproc] factory", "subprocess": "[headless] command",
                   "terminal": "[interactive] command"}[driver]
        return f"profile {profile.name!r} has no {section}"
    if driver == "terminal" and profile.interactive is not None:
        steps = {s.do for s in task.steps}
        if "queue" in steps and not profile.interactive.queued_regex:
            return f"profile {profile.name!r} names no [interactive] queued_regex: queueing cannot be observed"
        if "cancel-queued" in steps and not profile.interactive.cancel_command:
            return (f"profile {profile.name!r} names no [interactive] cancel_command: its terminal UI has no way "
                    "to withdraw a queued item")
    damage = {s.get("kind") for s in task.steps if s.do == "damage"}
    if damage:
        reader = get_reader(profile.log_reader)
        if reader is None:
            return f"the task damages the session store, and profile {profile.name!r} has no log reader to do it"
        missing = sorted(damage - reader.damage_kinds)
        if missing:
            return f"the {reader.name} reader's store has no {', '.join(missing)} damage"
    return None


# --- sharding ---------------------------------------------------------------------------


class ShardError(ValueError):
    """A bad ``--shard`` spec, or shard files that do not make one run.

    ``index`` is the position of the offending file among the inputs, when there is one.
    """

    def __init__(self, problem: str, index: int | None = None):
        self.problem, self.index = problem, index
        super().__init__(problem)


def parse_shard(spec: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(2, 3)``; the index is 1-based."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", spec or "")
    if not m:
        raise ShardError(f"shard must look like i/n (e.g. 1/3), got {spec!r}")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ShardError(f"shard {spec!r}: need 1 <= i <= n")
    return index, count


def item_key(item: Any) -> str:
    """A text that identifies an item the same way on every machine and Python process:
    the item's own ``key`` string when it has one (a work item names itself without paths
    that differ between machines), else a canonical JSON text of its value."""
    own = getattr(item, "key", None)
    if isinstance(own, str):
        return own
    return json.dumps(_plain(item), sort_keys=True, ensure_ascii=True, separators=(",", ":"))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def shard_items(items: Sequence[T], index: int, count: int) -> list[T]:
    """The items of shard ``index`` of ``count`` (1-based), in their original order."""
    if count < 1 or not 1 <= index <= count:
        raise ShardError(f"shard {index}/{count}: need 1 <= i <= n")
    ranked = sorted(range(len(items)), key=lambda i: (item_key(items[i]), i))
    mine = {pos for rank, pos in enumerate(ranked) if rank % count == index - 1}
    return [item for pos, item in enumerate(items) if pos in mine]
