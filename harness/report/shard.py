"""Splitting a run's task × repeat work across machines, and joining the pieces again.

``stopbench run --shard i/n`` runs the i-th of n shares (1-based, like ``--shard 1/3`` …
``3/3``). The split must be the same on every machine and every run, so it does not use
``hash()`` (salted per process): items are ordered by a canonical JSON text of their value
and dealt round-robin, which also keeps the shares within one item of each other.

``merge`` joins the shard files of one run into the result the unsharded run would have
produced, apart from timings: tasks and latency samples in a canonical order, run info of
the whole run (``shard`` null, ``started``/``ended`` spanning all shards, ``argv`` without
``--shard``), and ``merged_from`` recording where each piece ran.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from typing import Any, Mapping, Sequence, TypeVar

from harness.model import RunResult, TaskResult

T = TypeVar("T")

# Run info that must agree between shards of one run (when present).
SAME_IN_EVERY_SHARD = ("agent", "agent_version", "profile", "stopbench_version", "repeat")
# Run info listing what a shard covered: the merged run lists the union, sorted.
UNION_IN_MERGE = ("adapters", "tasks", "mutants")
# What "apart from timings" leaves out when two runs are compared (at any depth).
TIMING_KEYS = frozenset({"started", "ended", "time", "created", "duration_s", "value_ns", "argv", "shard",
                         "host", "merged_from"})
TIMING_SUFFIXES = ("_ns", "_ms")


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


def _task_identity(t: TaskResult) -> tuple:
    return (t.agent, t.adapter, t.task, t.repeat, t.mutant or "")


def merge(results: Sequence[RunResult]) -> RunResult:
    """Join the shard results of one run; refuses gaps, overlaps and shards of other runs."""
    if not results:
        raise ShardError("nothing to merge")
    specs = []
    for i, r in enumerate(results):
        shard = r.run.get("shard")
        if not isinstance(shard, str):
            raise ShardError(f"not a shard result (run.shard is {shard!r})", i)
        specs.append(parse_shard(shard))
    counts = {n for _, n in specs}
    if len(counts) > 1:
        raise ShardError(f"shards of different splits: {sorted(counts)}")
    count = counts.pop()
    seen: dict[int, int] = {}
    for i, (index, _) in enumerate(specs):
        if index in seen:
            raise ShardError(f"shard {index}/{count} given twice", i)
        seen[index] = i
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in seen]
    if missing:
        raise ShardError(f"missing shard(s) {', '.join(missing)}")
    ordered = [results[seen[k]] for k in range(1, count + 1)]
    first = ordered[0].run
    for k, r in enumerate(ordered, 1):
        for key in SAME_IN_EVERY_SHARD:
            if r.run.get(key) != first.get(key):
                raise ShardError(f"shard {k}/{count} has {key}={r.run.get(key)!r}, shard 1/{count} has "
                                 f"{first.get(key)!r}: not shards of one run", seen[k])
    owner: dict[tuple, int] = {}
    for k, r in enumerate(ordered, 1):
        for t in r.tasks:
            if _task_identity(t) in owner:
                raise ShardError(f"task {t.task} ({t.agent}/{t.adapter}, repeat {t.repeat}) is in shards "
                                 f"{owner[_task_identity(t)]}/{count} and {k}/{count}", seen[k])
            owner[_task_identity(t)] = k
    task_key = _canonical_order(first)
    tasks = sorted((t for r in ordered for t in r.tasks), key=lambda t: task_key(t.task, t.agent, t.adapter,
                                                                                   t.repeat, t.mutant))
    latencies = sorted((s for r in ordered for s in r.latencies),
                       key=lambda s: (task_key(s.task, s.agent, s.adapter, s.repeat, None), s.latency))
    run = _merged_run(ordered)
    if any("mutation" in r.run for r in ordered):
        run["mutation"] = _merged_mutation(ordered, tasks)
    return RunResult(run=run, tasks=tuple(tasks), latencies=tuple(latencies))


def _merged_mutation(ordered: Sequence[RunResult], tasks: Sequence[TaskResult]) -> dict[str, Any]:
    """The mutation score of the whole run, recomputed from all tasks by the runner's own
    function (each shard's score only counts the mutant runs it made)."""
    from harness.runner import mutation_summary

    targets: dict[str, list[str]] = {}
    for r in ordered:
        for name, mutant in (r.run.get("mutation") or {}).get("mutants", {}).items():
            targets.setdefault(name, list(mutant.get("targets", ())))
    return mutation_summary(tasks, targets)


def _canonical_order(run: Mapping[str, Any]):
    """Tasks in the run's task list order, then adapters in its adapter order, then repeat."""
    def position(listing: Any) -> dict[str, int]:
        return {str(v): i for i, v in enumerate(listing)} if isinstance(listing, list) else {}

    tasks, adapters = position(run.get("tasks")), position(run.get("adapters"))

    def key(task: str, agent: str, adapter: str, repeat: int, mutant: str | None) -> tuple:
        return (tasks.get(task, len(tasks)), task, agent, adapters.get(adapter, len(adapters)), adapter,
                mutant or "", repeat)

    return key


def _merged_run(ordered: Sequence[RunResult]) -> dict[str, Any]:
    run = dict(ordered[0].run)
    for key in UNION_IN_MERGE:
        listings = [r.run.get(key) for r in ordered]
        if all(isinstance(v, list) for v in listings):
            run[key] = sorted({str(v) for listing in listings for v in listing})
    hosts = sorted({str(r.run.get("host", "")) for r in ordered})
    starts = [r.run["started"] for r in ordered if r.run.get("started")]
    ends = [r.run["ended"] for r in ordered if r.run.get("ended")]
    run.update(
        shard=None,
        host=hosts[0] if len(hosts) == 1 else ", ".join(hosts),
        started=min(starts) if starts else run.get("started"),  # ISO 8601 UTC strings sort in time order
        ended=max(ends) if ends else run.get("ended"),
        argv=_without_shard(run.get("argv")),
        merged_from=[{k: r.run.get(k) for k in ("shard", "host", "started", "ended", "argv")} for r in ordered],
    )
    return run


def _without_shard(argv: Any) -> Any:
    if not isinstance(argv, list):
        return argv
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--shard":
            skip = True
        elif not str(arg).startswith("--shard="):
            out.append(arg)
    return out


def comparable(run: RunResult) -> Any:
    """What a run found, without what differs between two runs of the same work: timings
    (``TIMING_KEYS``, ``*_ns``, ``*_ms`` at any depth), and evidence and error texts (they
    quote process IDs, call IDs and temporary paths). Tasks and samples are sorted. A merged
    sharded run and the unsharded run compare equal when every verdict and sample agree."""
    data = _drop_timings(run.to_json())
    for task in data["tasks"]:
        task["error"] = task["error"] is not None
        for check in task["checks"]:
            del check["evidence"]
    data["tasks"].sort(key=item_key)
    data["latencies"].sort(key=item_key)
    return data


def _drop_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_timings(v) for k, v in value.items()
                if k not in TIMING_KEYS and not k.endswith(TIMING_SUFFIXES)}
    if isinstance(value, list):
        return [_drop_timings(v) for v in value]
    return value
