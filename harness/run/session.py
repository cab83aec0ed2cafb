"""The run session: one agent's planned task runs, from the first to the results on disk.

What a run must keep whatever happens lives here, in one object instead of closures: the
finished task runs inherited from an earlier run (``--resume``, refused when the profile, a
task or a scenario changed since), a checkpoint of the results after every task run (a
killed harness leaves a readable file), the mutation summary, the machine's costs (measured
right after the first task run, so that its result shows at once) and, when the run is cut
short (a signal, an internal error), the reason — the reports are then rendered from what it
has. The command line only parses arguments and prints (``harness.cli.run``).
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.calibrate import quick_floor_async
from harness.cli import signals
from harness.model import LatencySample, RunResult, RunStatus, TaskResult
from harness.model.mutation import mutation_summary
from harness.profiles import Profile
from harness.report import ResultsError, load_results, write_reports
from harness.report.progress import Progress, item_label
from harness.report.writer import ResultsCheckpoint, folder_problem, write_text
from harness.run.planning import WorkItem
from harness.run.provenance import digests, driven_version, run_header
from harness.run.rundir import make_private
from harness.run.runner import ItemOutcome
from harness.run.schedule import run_all
from harness.timing.machine import null_agent_costs


class RunRefused(Exception):
    """The run cannot start as asked (a results file to resume that does not fit, a folder that
    cannot be written); nothing has run."""


@dataclass
class Options:
    """What of the command line the session acts on."""

    argv: list[str]
    jobs: int = 1
    retries: int = 2
    repeat: int = 1
    shard: str | None = None
    keep: bool = False
    resume: str | None = None
    swept: dict[str, Any] | None = None  # what a stale sweep ended before this run (run.swept)


@dataclass
class Ended:
    """How a session ended: its results, the files written, and why it is incomplete (None: it is not)."""

    run: RunResult
    written: list[Path]
    incomplete: str | None
    rescued: bool  # the reports had to go to a temporary folder


@dataclass
class RunSession:
    """One agent's task runs (``items``, a share of ``planned``) into ``report_dir``, which the
    caller holds against other runs."""

    profile: Profile
    items: list[WorkItem]
    planned: list[WorkItem]
    failpoints: dict[str, tuple[str, ...]]
    report_dir: Path
    options: Options
    done: list[TaskResult] = field(default_factory=list)  # inherited from the run resumed
    earlier: RunResult = field(default_factory=lambda: RunResult(run={}, tasks=(), latencies=()))
    outcomes: dict[int, ItemOutcome] = field(default_factory=dict)  # by position in the plan: reports keep its order
    checkpoint_failed: bool = False  # said once

    def __post_init__(self) -> None:
        if self.options.resume:
            self.done, self.earlier = resumed(self.options.resume, self.profile, self.items,
                                              digests(self.profile, self.planned))
        finished = {t.key for t in self.done}
        self.todo = [i for i in self.items if i.key not in finished]
        self.progress = Progress(len(self.todo))
        self.keep = (self.report_dir / "runs").resolve() if self.options.keep else None
        if self.keep is not None:
            if problem := folder_problem(self.keep):
                raise RunRefused(f"--keep {problem}")
            self.keep.mkdir(parents=True, exist_ok=True)
            make_private(self.keep)  # made, or kept from an earlier run: the owner's alone before any run writes
        self.machine: dict[str, Any] = {"loadavg": list(os.getloadavg()), "cpus": os.cpu_count(),
                                        "not_measured": "measured after the first task run, which has not ended"}
        started = _now()
        # Provenance once (the version command is a process start); only the end moves.
        self.header = run_header(self.profile, self.items, argv=self.options.argv, repeat=self.options.repeat,
                                 shard=self.options.shard, started=started, ended=started, planned=self.planned)
        if self.options.swept:
            self.header["swept"] = self.options.swept
        self.checkpoint = ResultsCheckpoint()

    def snapshot(self, incomplete: str | None) -> RunResult:
        """The results as they stand: the inherited and the finished task runs, in plan order."""
        header = {**self.header, "ended": _now()}
        ended = [self.outcomes[n] for n in sorted(self.outcomes)]
        tasks_so_far = tuple(self.done) + tuple(o.result for o in ended)
        if self.failpoints:
            header["mutation"] = mutation_summary(tasks_so_far, self.failpoints)
        header["machine"] = {**self.machine, "loadavg_end": list(os.getloadavg())}  # a load that came mid-run
        if incomplete:
            header["incomplete"] = incomplete
        return RunResult(run=header, tasks=tasks_so_far,
                         latencies=self.earlier.latencies + tuple(s for o in ended for s in o.latencies),
                         concurrent=self.earlier.concurrent + tuple(s for o in ended for s in o.concurrent))

    def finished(self, n: int, item: WorkItem, outcome: ItemOutcome) -> None:
        """Task run ``n`` of the plan ended: shown, and checkpointed into results.json."""
        self.outcomes[n] = outcome
        self.progress.done(n, label(item), outcome.result)
        try:
            write_text(self.report_dir / "results.json", self.checkpoint.text(
                self.snapshot(f"in progress: {len(self.outcomes)} of {len(self.todo)} done")))
        except OSError as exc:  # the run goes on; what it measured is in memory, written at the end
            if not self.checkpoint_failed:
                self.checkpoint_failed = True
                print(f"stopbench: cannot write the checkpoint into {self.report_dir} ({exc}); the run goes on",
                      file=sys.stderr)

    def _run_from(self, first: int, part: list[WorkItem]) -> None:
        """``part`` of ``todo``, which begins at its position ``first`` (from 1)."""
        if part:
            signals.run_until_signalled(run_all(
                self.profile, part, jobs=self.options.jobs, retries=self.options.retries, keep=self.keep,
                on_start=lambda n, item: self.progress.start(first - 1 + n, label(item)),
                on_done=lambda n, item, outcome: self.finished(first - 1 + n, item, outcome)))

    def execute(self, summary: Callable[[RunResult, list[Path]], None]) -> Ended:
        """Every task run still to do, then the reports (``summary`` prints them, with the run's
        signals deferred so that what was kept is written whole)."""
        incomplete: str | None = None
        try:
            self._run_from(1, self.todo[:1])
            self.machine = {**null_agent_costs(), "floor": signals.run_until_signalled(quick_floor_async())}
            self._run_from(2, self.todo[1:])
        except signals.Interrupted as exc:
            incomplete = str(exc)
        except Exception as exc:  # a harness bug: keep what was measured, say so, never read as "not conformant"
            traceback.print_exc()
            incomplete = f"internal error: {type(exc).__name__}: {exc}"
        if self.keep is not None:
            make_private(self.keep)
        with signals.deferred():  # what was kept is written whole, whatever arrives meanwhile
            run = self.snapshot(incomplete)
            written, rescued = write_reports_somewhere(run, self.report_dir)
            summary(run, written)
        return Ended(run, written, incomplete, rescued)


def resumed(path: str, profile: Profile, items: Sequence[WorkItem],
            now: dict[str, Any]) -> tuple[list[TaskResult], RunResult]:
    """The finished task runs of an earlier, incomplete run of the same work: the same agent,
    profile, tasks and scenarios (``now`` holds their digests), or nothing is inherited."""
    try:
        earlier = load_results(path)
    except ResultsError as exc:
        raise RunRefused(str(exc)) from None
    if earlier.run.get("agent") != profile.name:
        raise RunRefused(f"{path}: results of agent {earlier.run.get('agent')!r}, not {profile.name!r}")
    version = driven_version(profile)
    if version and "agent_version_reported" in earlier.run and earlier.run.get("agent_version") != version:
        raise RunRefused(f"{path}: results of {profile.name} {earlier.run.get('agent_version')}, not {version}")
    changed = changed_since(earlier.run.get("digests"), now)
    if changed:
        raise RunRefused(f"{path}: cannot resume: {changed}; its verdicts are not this run's — "
                         "run again without --resume")
    wanted = {i.key for i in items}
    kept = [t for t in earlier.tasks if t.key in wanted and t.status is not RunStatus.ERRORED]
    keys = {(t.task, t.adapter, t.repeat) for t in kept}

    def ours(samples: tuple[LatencySample, ...]) -> tuple[LatencySample, ...]:
        return tuple(s for s in samples if (s.task, s.adapter, s.repeat) in keys)

    return kept, RunResult(run={}, tasks=(), latencies=ours(earlier.latencies), concurrent=ours(earlier.concurrent))


def changed_since(then: Any, now: dict[str, Any]) -> str | None:
    """What differs between the digests an earlier run recorded and today's, for the tasks
    both know; None when nothing does."""
    if not isinstance(then, dict):
        return "the results record no digests of the profile, tasks and scenarios they ran with"
    changes = ["the profile changed"] if then.get("profile") != now["profile"] else []
    for kind, what in (("tasks", "task"), ("scenarios", "scenario of task")):
        recorded = then.get(kind)
        before: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        changes += [f"{what} {name} changed" for name, digest in now[kind].items()
                    if name in before and before[name] != digest]
    return ", ".join(changes) or None


def write_reports_somewhere(run: RunResult, report_dir: Path) -> tuple[list[Path], bool]:
    """The reports in ``report_dir`` or, should that fail now (the folder went away, the disk
    filled up), in a new temporary folder named on stderr: a run's results are never lost to
    its folder. Whether they had to go elsewhere."""
    try:
        return write_reports(run, report_dir), False
    except OSError as exc:
        rescue = Path(tempfile.mkdtemp(prefix="stopbench-reports-"))
        print(f"stopbench: cannot write the reports into {report_dir} ({exc}); they are in {rescue}",
              file=sys.stderr)
        return write_reports(run, rescue), True


def label(item: WorkItem) -> str:
    return item_label(item.variant, item.driver, item.adapter, item.repeat, item.mutant)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
