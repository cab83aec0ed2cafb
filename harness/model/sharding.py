"""How a run is split across machines: ``--shard i/n`` runs the i-th of n shares (1-based).

The split must be the same on every machine and every run, so it does not use ``hash()``
(salted per process): items are ordered by a stable key and dealt round-robin, which keeps
the shares within one item of each other. ``stopbench report merge`` uses the same parsing to
join the shares. Nothing here knows profiles, tasks or drivers, so the reports can read
shards without loading them.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class ShardError(ValueError):
    """A bad ``--shard`` spec, or shard files that do not make one run.

    ``index`` is the position of the offending file among the inputs, when there is one.
    """

    def __init__(self, problem: str, index: int | None = None):
        self.problem, self.index = problem, index
        super().__init__(problem)


def work_key(task: str, adapter: str, repeat: int, mutant: str | None) -> str:
    """The one name of a work item and of its result, stable across runs and machines: what
    shards are cut on, and what ``--resume`` matches finished task runs by."""
    return f"{task}/{adapter}/{repeat}/{mutant or '-'}"


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
