"""Joining the shards of one run again (the split itself is ``harness.model.sharding``'s).

``merge`` joins the shard files of one run into the result the unsharded run would have
produced, apart from timings: tasks and latency samples in a canonical order, run info of
the whole run (``shard`` null, ``started``/``ended`` spanning all shards, ``argv`` without
``--shard``), and ``merged_from`` recording where each piece ran and what its machine cost.
Shards of different selections (``--task``, ``--adapter``, …) or of different profile, task
or scenario contents are not one run, and are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.model import LatencySample, RunResult, TaskResult
from harness.model.sharding import ShardError, item_key, parse_shard

# Run info that must agree between shards of one run (when present).
SAME_IN_EVERY_SHARD = ("agent", "agent_version", "profile", "stopbench_version", "repeat", "selection", "digests")
# Run info listing what a shard covered: the merged run lists the union, sorted.
UNION_IN_MERGE = ("adapters", "tasks", "mutants")
# What "apart from timings" leaves out when two runs are compared (at any depth); ``machine``
# is what the machine cost a process and how loaded it was when the run (or shard) began.
TIMING_KEYS = frozenset({"started", "ended", "time", "created", "duration_s", "value_ns", "argv", "shard",
                         "host", "merged_from", "machine"})
# Per shard in ``merged_from``: where and when it ran, and on what machine.
SHARD_ORIGIN = ("shard", "host", "started", "ended", "argv", "machine")
TIMING_SUFFIXES = ("_ns", "_ms")


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
                name, theirs, ours = _difference(key, r.run.get(key), first.get(key))
                raise ShardError(f"shard {k}/{count} has {name}={theirs!r}, shard 1/{count} has "
                                 f"{ours!r}: not shards of one run", seen[k])
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
    def samples(of: Callable[[RunResult], Sequence[LatencySample]]) -> tuple[LatencySample, ...]:
        return tuple(sorted((s for r in ordered for s in of(r)),
                            key=lambda s: (task_key(s.task, s.agent, s.adapter, s.repeat, None), s.latency)))

    run = _merged_run(ordered)
    if any("mutation" in r.run for r in ordered):
        run["mutation"] = _merged_mutation(ordered, tasks)
    return RunResult(run=run, tasks=tuple(tasks), latencies=samples(lambda r: r.latencies),
                     concurrent=samples(lambda r: r.concurrent))


def _difference(key: str, theirs: Any, ours: Any) -> tuple[str, Any, Any]:
    """The first place two run-info values differ, named with its path (``selection.tasks``)."""
    while isinstance(theirs, dict) and isinstance(ours, dict):
        inner = next(k for k in (*ours, *theirs) if theirs.get(k) != ours.get(k))  # in the file's order
        key, theirs, ours = f"{key}.{inner}", theirs.get(inner), ours.get(inner)
    return key, theirs, ours


def _merged_mutation(ordered: Sequence[RunResult], tasks: Sequence[TaskResult]) -> dict[str, Any]:
    """The mutation score of the whole run, recomputed from all tasks by the runner's own
    function (each shard's score only counts the mutant runs it made)."""
    from harness.model.mutation import mutation_summary

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
        listings = [v for r in ordered if isinstance(v := r.run.get(key), list)]
        if len(listings) == len(ordered):
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
        merged_from=[{k: r.run.get(k) for k in SHARD_ORIGIN} for r in ordered],
    )
    run.pop("machine", None)  # each shard's own is in merged_from: no one machine ran them all
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
    (``TIMING_KEYS``, ``*_ns``, ``*_ms`` at any depth), and evidence, timelines and reasons (they
    quote process IDs, call IDs and temporary paths). Tasks and samples are sorted. A merged
    sharded run and the unsharded run compare equal when every verdict and sample agree."""
    data = _drop_timings(run.to_json())
    for task in data["tasks"]:
        task["reason"] = task["reason"] is not None
        for key in ("timeline", "evidence", "attempts"):  # moments, PIDs and paths of one machine's run
            task.pop(key, None)
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
