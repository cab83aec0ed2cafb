"""A published results file: what a tracked leaderboard keeps of an agent's run.

A run's results file carries its whole evidence — every process's argv and output tails, the
fake server's records, the timeline, each check's evidence items — hundreds of kilobytes per
agent. A leaderboard kept in a repository needs what its renderers read: every task run's
status and reason, every check's outcome with its one-line summary (and ``consequence_of``,
``non_strict``), the latency samples, the run's header, and per task run the command that
runs it again and whether the profile fit. That is what ``published`` keeps; the rest stays
in the run's own report folder. The file is a results file like any other: every reader loads
it, and it is written through the same redaction as every results file.

Task runs measured again later (a fixed harness, one task re-run) replace the earlier ones
task by task: ``merged`` takes the later file's runs of each (task, driver, adapter) it holds
and the latency samples they timed, and names what it replaced in ``run.published``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.model import CheckResult, Evidence, LatencySample, RunResult, TaskResult

# What a published task run keeps of its evidence: the command that runs it again, why the
# agent ended it early, why its store was refused, and the profile's fit (below) without the
# screens a misfit carries.
KEPT_EVIDENCE = ("reproduce", "agent_failure", "log_error")
DROPPED_FROM_FIT = ("screen", "holders")  # a misfit's screen lines and the processes holding a connection
PUBLISHED_KEEPS = ("statuses, reasons, checks' outcomes and summaries, latency samples; of each task run's evidence: "
                   + ", ".join(KEPT_EVIDENCE) + ", profile_fit (without its screens and connection holders)")


class PublishError(Exception):
    """Results files that cannot be published together, and why."""


def published_name(run: RunResult) -> str:
    """``NAME@VERSION.json``: one file per agent release in the leaderboard's folder."""
    agent, version = run.run.get("agent") or "unknown", run.run.get("agent_version") or "unknown"
    return f"{agent}@{version}.json".replace("/", "_")


def published(run: RunResult, note_text: str = "") -> RunResult:
    """``run`` with only what a leaderboard renders (module docstring), and ``note_text``
    (how it was measured, for the reader) when given. Paths of the machine it ran on are
    shortened (``local``): a tracked file says where in a run, not where on someone's disk."""
    note = {**(run.run.get("published") or {}), "kept": PUBLISHED_KEEPS, **({"note": note_text} if note_text else {})}
    note["replaced"] = [{**r, "from": local_file(str(r.get("from", "")))} for r in note.get("replaced", [])]
    return dataclasses.replace(run, run={**run.run, "published": note},
                               tasks=tuple(_task(t) for t in run.tasks), concurrent=())


def merged(base: RunResult, later: Sequence[RunResult], names: Sequence[str]) -> RunResult:
    """``base`` with each (task, driver, adapter) that a ``later`` run holds taken from it
    (the last one that holds it), and the latency samples those runs timed. ``names`` name the
    later files in ``run.published.replaced``, beside the later run's start, stopbench version
    and digests of the tasks taken. Refused when a later run is of another agent or version
    (a leaderboard row is one release), or holds no task run."""
    tasks, samples, replaced = list(base.tasks), list(base.latencies), []
    for name, run in zip(names, later, strict=True):
        mismatch = [k for k in ("agent", "agent_version") if run.run.get(k) != base.run.get(k)]
        if mismatch:
            theirs = ", ".join(f"{k} {run.run.get(k)!r}" for k in mismatch)
            ours = ", ".join(repr(base.run.get(k)) for k in mismatch)
            raise PublishError(f"{name}: {theirs} is not the first file's ({ours}): one file per release")
        keys = {_key(t) for t in run.tasks}
        if not keys:
            raise PublishError(f"{name}: holds no task run to take")
        tasks = [t for t in tasks if _key(t) not in keys] + list(run.tasks)
        samples = [s for s in samples if _sample_key(s) not in keys] + list(run.latencies)
        taken = {t.split("[")[0] for t, _, _ in keys}  # a task's variants share its files' digests
        digests = {kind: {k: v for k, v in table.items() if k in taken}
                   for kind, table in (run.run.get("digests") or {}).items() if isinstance(table, Mapping)}
        replaced.append({"from": local_file(name), "started": run.run.get("started"),
                         "stopbench_version": run.run.get("stopbench_version"), "digests": digests,
                         "task_runs": sorted(f"{t} ({d}, {a})" for t, d, a in keys)})
    note = dict(base.run.get("published") or {})
    note["replaced"] = [*note.get("replaced", []), *replaced]
    return dataclasses.replace(base, run={**base.run, "published": note}, tasks=tuple(tasks), latencies=tuple(samples))


def _key(task: TaskResult) -> tuple[str, str, str]:
    return task.task, task.driver, task.adapter


def _sample_key(sample: LatencySample) -> tuple[str, str, str]:
    return sample.task, str(sample.detail.get("driver", "")), sample.adapter


def _task(task: TaskResult) -> TaskResult:
    evidence: dict[str, Any] = {k: _localized(task.evidence[k]) for k in KEPT_EVIDENCE if task.evidence.get(k)}
    fit = task.evidence.get("profile_fit")
    if isinstance(fit, Mapping):
        expectations = [{k: v for k, v in e.items() if k not in DROPPED_FROM_FIT}
                        for e in fit.get("expectations") or () if isinstance(e, Mapping)]
        evidence["profile_fit"] = {**fit, "expectations": expectations}
    reason = local(task.reason) if task.reason else task.reason
    return dataclasses.replace(task, checks=tuple(_check(c) for c in task.checks), timeline=(), evidence=evidence,
                               reason=reason)


def _check(check: CheckResult) -> CheckResult:
    return dataclasses.replace(check, evidence=Evidence(local(check.evidence.summary)))


# A task run's own folder, wherever its run kept it (``<report dir>/runs/<run>/``) or made it
# (``<temp>/stopbench-<tag>/``): what follows it is the same on every machine.
RUN_FOLDER = re.compile(r"(?:/[^\s'\"/]+)*?/(?:runs/[^\s'\"/]+|stopbench-[^\s'\"/]+)/")


def local(text: str) -> str:
    """``text`` with each task run's folder written ``<run folder>/``."""
    return RUN_FOLDER.sub("<run folder>/", text)


def _localized(value: Any) -> Any:
    """``value`` with ``local`` applied to every text in it."""
    if isinstance(value, str):
        return local(value)
    if isinstance(value, Mapping):
        return {k: _localized(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_localized(v) for v in value]
    return value


def local_file(path: str) -> str:
    """A results file named by its folder and name alone (``recheck-codex/results.json``)."""
    parts = path.rstrip("/").split("/")
    return "/".join(parts[-2:])
