"""``stopbench run``: its options checked and turned into a plan; the run itself is a
``harness.run.session.RunSession``, and this module prints what it ends with."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli import EXIT_NOT_CONFORMANT, EXIT_OK, EXIT_USAGE, UsageError, quiet_stdout, split, tasks_of
from harness.model.drivers import DRIVERS

if TYPE_CHECKING:
    from harness.model import RunResult
    from harness.profiles import Profile
    from harness.tasks import Task


def cmd_run(args: argparse.Namespace) -> int:
    """One agent into ``--report-dir``; several (``--agent A --agent B``) in turn, each into
    its own folder below it, and a leaderboard of them all in it."""
    from harness.cli import signals
    from harness.containment import stale
    from harness.report import format_written, load_results
    from harness.report.writer import LEADERBOARD_FILES, write_leaderboard

    names = split(args.agent)
    if args.agents:
        if names:
            raise UsageError("--agents installed chooses the agents itself; drop --agent")
        names = installed_profiles()
        if not names:
            raise UsageError("no built-in profile's agent is installed (see: stopbench agents list; "
                             "install one with: stopbench agents install NAME)")
        print(f"agents installed: {', '.join(names)}")
    names = names or ["reference"]
    swept = stale.sweep()  # what harnesses killed before they could clean up left
    args.swept = swept.to_json() if swept else None
    if swept:
        print(f"stopbench: {swept.summary()}", file=sys.stderr)
    if len(names) == 1 and not args.agents:
        return run_agent(args, names[0], Path(args.report_dir))
    if args.resume:
        raise UsageError("--resume continues one agent's run; name one --agent")
    for name in names:  # every agent loads and is installed before the first one runs
        profile_of(name)
    codes, runs = [], []
    with report_dir_held(args, Path(args.report_dir), LEADERBOARD_FILES):
        for name in names:
            folder = Path(args.report_dir) / _folder_name(name)
            codes.append(run_agent(args, name, folder))
            runs.append(load_results(folder / "results.json"))
            if signals.received() or (codes[-1] == EXIT_USAGE and runs[-1].run.get("incomplete", "").startswith(
                    ("SIGINT", "SIGTERM", "SIGHUP"))):
                break  # the person asked the whole run to stop
        print(format_written(write_leaderboard(runs, Path(args.report_dir))))
    return max(codes)


@contextlib.contextmanager
def report_dir_held(args: argparse.Namespace, report_dir: Path, files: Sequence[str] | None = None) -> Iterator[None]:
    """The report folder checked (its files can be written) and held against another run,
    before any task runs: a bad path or a busy folder costs nothing and loses nothing."""
    from harness.report.folder_lock import FolderLocked, hold_folder
    from harness.report.writer import RUN_FILES, report_dir_problem

    files = RUN_FILES if files is None else files
    problem = report_dir_problem(report_dir, files)
    if problem:
        raise UsageError(f"--report-dir {problem}")
    try:
        with hold_folder(report_dir, args.argv, lambda notice: print(f"stopbench: {notice}", file=sys.stderr)):
            yield
    except FolderLocked as exc:
        raise UsageError(str(exc)) from None


def installed_profiles() -> list[str]:
    """The built-in profiles that drive a real agent of the catalog which is installed."""
    from harness.agents.install import NotInstalled
    from harness.profiles import ProfileError, agent_binary, builtin_names, load_profile

    out = []
    for name in builtin_names():
        try:
            profile = load_profile(name)
            if profile.agent:
                agent_binary(profile)
                out.append(name)
        except (ProfileError, NotInstalled):
            continue
    return out


def _folder_name(agent: str) -> str:
    return Path(agent).stem if agent.endswith(".toml") else agent


def run_agent(args: argparse.Namespace, agent: str, report_dir: Path) -> int:
    """One agent's run: the options checked against its profile and tasks, the plan cut to
    ``--driver`` and ``--shard``, then the session, in the held folder."""
    from harness.model.sharding import ShardError, parse_shard, shard_items
    from harness.run.planning import plan
    from harness.run.session import Options, RunRefused, RunSession

    profile, tasks = _load(args, agent)
    for option, least in (("repeat", 1), ("jobs", 1), ("retries", 0)):
        if getattr(args, option) < least:
            bound = f"at least {least}" if least else "0 or more"
            raise UsageError(f"--{option} must be {bound}, got {getattr(args, option)}")
    adapters = split(args.adapter)
    for adapter in adapters:
        if adapter not in profile.adapters:
            raise UsageError(f"agent {profile.name!r} has no adapter {adapter!r} "
                             f"(it has: {', '.join(profile.adapters)})")
    failpoints = _failpoints(args, profile)
    items = plan(profile, tasks, adapters=adapters or None, repeat=args.repeat, mutants=[None, *failpoints])
    drivers = split(args.driver)
    unknown_drivers = [d for d in drivers if d not in DRIVERS]
    if unknown_drivers:
        raise UsageError(f"unknown driver {unknown_drivers[0]!r} (drivers: {', '.join(DRIVERS)})")
    if drivers:
        items = [i for i in items if i.driver in drivers]
    planned = items  # the whole run, before any --shard
    if args.shard:
        try:
            items = shard_items(items, *parse_shard(args.shard))
        except ShardError as exc:
            raise UsageError(str(exc)) from None
    if not items:
        raise UsageError("nothing to run: no task applies to the chosen adapters")
    options = Options(argv=args.argv, jobs=args.jobs, retries=args.retries, repeat=args.repeat, shard=args.shard,
                      keep=args.keep, resume=args.resume, swept=getattr(args, "swept", None))
    with report_dir_held(args, report_dir):
        try:
            session = RunSession(profile, items, planned, failpoints, report_dir, options)
        except RunRefused as exc:
            raise UsageError(str(exc)) from None
        ended = session.execute(lambda run, written: _summary(run, failpoints, written, session.keep))
    if ended.incomplete:
        print(f"stopbench: run incomplete ({ended.incomplete}); {len(ended.run.tasks)} task run(s) kept in "
              f"{ended.written[0]} — continue with --resume", file=sys.stderr)
        return EXIT_USAGE
    if ended.rescued:
        return EXIT_USAGE
    mutation = ended.run.run.get("mutation")
    survived = mutation is not None and mutation["caught"] < mutation["total"]
    return EXIT_OK if ended.run.verdict.ok and not survived else EXIT_NOT_CONFORMANT


def _summary(run: RunResult, failpoints: dict[str, tuple[str, ...]], written: list[Path], kept: Path | None) -> None:
    from harness.report import format_written
    from harness.report.latency import recorded_floors
    from harness.report.progress import latency_table, mutation_table, scoreboard

    try:
        print()
        print(scoreboard([t for t in run.tasks if t.mutant is None]))
        print(latency_table(run.latencies, recorded_floors(run.run)))
        if run.concurrent:
            print(f"({len(run.concurrent)} latency sample(s) timed beside another task run are kept apart in "
                  "concurrent_latencies, out of the table and the gate: docs/parallel.md)")
        if failpoints:
            print(mutation_table(run))
        print(format_written(written))
        mutation = run.run.get("mutation")
        print("verdict:", run.verdict.value,
              *([f"— mutation score {mutation['caught']}/{mutation['total']}"] if mutation else []))
        if kept is not None:
            print(f"run folders kept in {kept} (each task run's evidence names its own: run_dir)")
        sys.stdout.flush()
    except BrokenPipeError:  # `stopbench run | head`: the reports are written already
        quiet_stdout()


def _failpoints(args: argparse.Namespace, profile: Profile) -> dict[str, tuple[str, ...]]:
    from harness.run.mutants import FailpointsError, list_failpoints

    if not args.mutants:
        if args.failpoint:
            raise UsageError("--failpoint needs --mutants")
        return {}
    try:
        failpoints = list_failpoints(profile)
    except FailpointsError as exc:
        raise UsageError(str(exc)) from None
    chosen = split(args.failpoint)
    unknown = [f for f in chosen if f not in failpoints]
    if unknown:
        raise UsageError(f"unknown failpoint {unknown[0]!r} (the agent has: {', '.join(failpoints)})")
    return {f: failpoints[f] for f in chosen} if chosen else failpoints


def profile_of(agent: str) -> Profile:
    """The profile ``--agent`` names, its real agent installed (at the version asked for)."""
    from harness.agents.install import NotInstalled
    from harness.profiles import ProfileError, agent_binary, load_profile

    try:
        profile = load_profile(agent)
        if profile.agent:
            agent_binary(profile)
    except (ProfileError, NotInstalled) as exc:
        raise UsageError(str(exc)) from None
    return profile


def _load(args: argparse.Namespace, agent: str) -> tuple[Profile, list[Task]]:
    profile = profile_of(agent)
    for warning in profile.warnings:
        print(f"stopbench: warning: {profile.path}: {warning}", file=sys.stderr)
    tasks = tasks_of(args)
    names = {t.name for t in tasks}
    strange = sorted(set(profile.not_run) - names)
    if strange:
        raise UsageError(f"{profile.path}: not_run.{strange[0]}: no such task (tasks: {', '.join(sorted(names))})")
    wanted = split(args.task)
    if wanted:
        missing = [w for w in wanted if w not in names]
        if missing:
            raise UsageError(f"unknown task {missing[0]!r} (tasks: {', '.join(sorted(names))})")
        tasks = [t for t in tasks if t.name in wanted]
    return profile, tasks
