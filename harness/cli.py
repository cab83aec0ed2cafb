"""The ``stopbench`` command: ``run``, ``list``, ``agents``, ``serve``, ``report`` (and ``report merge``),
``gate``, ``diff``, ``calibrate``.

Exit codes of ``run``: 0 the agent is conformant or conformant (black-box) (and with
``--mutants`` every mutant was caught), 1 it is not conformant or the score is incomplete,
2 a harness or usage error, or a run cut short (a bad profile, task or option, with a
message naming the file and the problem; SIGINT, SIGTERM, SIGHUP, a closed stdout).

An interrupted run loses nothing: the results gathered so far are rewritten atomically
after every task run, and on an interruption the run is marked incomplete with the reason
and the reports are rendered from what it has; ``--resume RESULTS`` continues it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import sys
import tempfile
import textwrap
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from harness import signals
from harness.contract import DRIVERS
from harness.machine import null_agent_costs
from harness.signals import Interrupted
from harness.usage import Parser

if TYPE_CHECKING:
    from harness.model import LatencySample, RunResult, TaskResult
    from harness.planning import WorkItem
    from harness.profiles import Profile
    from harness.runner import ItemOutcome
    from harness.tasks import Task

# What a command needs is imported when it runs, not here: `stopbench --help`, `list`,
# `report` and `gate` start at once, and the drivers, the fake server (aiohttp) and the
# process tools (psutil, pexpect, pyte) are loaded by `run` alone
# (tests/harness/test_cli_imports.py; benchmarks/startup_bench.py prints the start-up times).
DEFAULT_RETRIES = 2  # harness.runner.DEFAULT_RETRIES, for --help without loading the runner (a test holds them equal)


def run_all(*args: Any, **kwargs: Any) -> Any:
    """``harness.schedule.run_all``, imported on the first call."""
    from harness.schedule import run_all as schedule_run_all

    return schedule_run_all(*args, **kwargs)


def quick_floor_async() -> Any:
    """``harness.calibrate.quick_floor_async()``, imported on the first call."""
    from harness.calibrate import quick_floor_async as floor

    return floor()


def _harness_error() -> type[Exception]:
    """``harness.runner.HarnessError``, imported when an error is being handled."""
    from harness.runner import HarnessError

    return HarnessError

EXIT_OK, EXIT_NOT_CONFORMANT, EXIT_USAGE = 0, 1, 2
T = TypeVar("T")

COMMANDS = (
    ("run", "score an agent on the tasks (scoreboard, latencies, reports)"),
    ("list", "the tasks, the checks and the built-in agents"),
    ("serve", "the fake model server on 127.0.0.1 (first stdout line: its base URL)"),
    ("report", "render results files (several make a leaderboard); 'report merge' joins shards"),
    ("gate", "compare a run with a baseline: exit 1 on pass→fail or a real latency regression"),
    ("calibrate", "the error and floor of stopbench's own stopwatch on this machine"),
    ("diff", "what changed between two results files (releases of an agent): exit 1 on anything newly broken"),
)


class UsageError(Exception):
    pass


class _Version(argparse.Action):
    """``--version``: the installed package's version, looked up only when asked for."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"stopbench {version('stopbench')}")
        except PackageNotFoundError:
            print("stopbench (not installed: no package metadata; pip install it to have a version)")
        parser.exit()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    with signals.handled():
        try:
            return _main(argv)
        except BrokenPipeError:  # `stopbench list | head`: the reader has what it wanted
            _quiet_stdout()
            return EXIT_OK
        except Interrupted as exc:  # during setup: what was begun is undone on the way out
            print(f"stopbench: cut short ({exc})", file=sys.stderr)
            return EXIT_USAGE


def _main(argv: list[str]) -> int:
    # Subcommands owned by other parts parse their own arguments.
    if argv[:1] == ["serve"]:
        from fake_server.cli import main as serve_main

        return serve_main(argv[1:], parser_class=Parser)
    if argv[:1] == ["report"]:
        from harness.report.cli import merge_main, report_main

        return merge_main(argv[2:]) if argv[1:2] == ["merge"] else report_main(argv[1:])
    if argv[:1] == ["gate"]:
        from harness.report.cli import gate_main

        return gate_main(argv[1:])
    if argv[:1] == ["diff"]:
        from harness.report.cli import diff_main

        return diff_main(argv[1:])
    if argv[:1] == ["calibrate"]:
        from harness.calibrate.cli import main as calibrate_main

        return calibrate_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = ["stopbench", *argv]
    try:
        code: int = args.func(args)
        return code
    except (UsageError, _harness_error()) as exc:
        print(f"stopbench: {exc}", file=sys.stderr)
        return EXIT_USAGE


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="stopbench",
        description="Conformance and evaluation harness for the interruption contract of coding agents.",
        epilog="'stopbench COMMAND --help' for each command's options.")
    parser.add_argument("--version", action=_Version, help="print stopbench's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help=COMMANDS[0][1])
    run.add_argument("--agent", action="append", default=[],
                     help="built-in profile name or path of a profile TOML (default reference); NAME@VERSION "
                          "drives that installed version of the agent; several run in turn, with a leaderboard")
    run.add_argument("--agents", choices=["installed"],
                     help="'installed': every built-in profile whose real agent is installed, in turn, one leaderboard")
    run.add_argument("--keep", action="store_true",
                     help="keep each task run's folder (HOME, working folder, sessions) under REPORT_DIR/runs, "
                          "its owner's alone (0700)")
    run.add_argument("--adapter", action="append", default=[], help="adapter(s) to run (default: all the agent has)")
    run.add_argument("--task", action="append", default=[], help="task name(s) (default: all)")
    run.add_argument("--driver", action="append", default=[],
                     help="driver(s) to run the tasks on: inproc, subprocess, terminal, acp "
                          "(default: every one they have)")
    run.add_argument("--repeat", type=int, default=1, help="runs of each task variant (default 1)")
    run.add_argument("--jobs", type=int, default=1, metavar="N",
                     help="run up to N task runs at once; what is timed is timed alone, the others paused "
                          "(docs/parallel.md)")
    run.add_argument("--retries", type=int, default=DEFAULT_RETRIES,
                     help=f"tries again when a race did not happen, i.e. not exercised (default {DEFAULT_RETRIES})")
    run.add_argument("--report-dir", default="reports",
                     help="where results go (default reports/); one run at a time writes a folder")
    run.add_argument("--resume", metavar="RESULTS", help="continue an incomplete run: skip its finished task runs")
    run.add_argument("--shard", help="run only share i of n (e.g. 2/4); merge with 'stopbench report merge'")
    run.add_argument("--mutants", action="store_true",
                     help="also run every failpoint of the agent through the tasks and report the mutation score")
    run.add_argument("--failpoint", action="append", default=[], help="with --mutants: only these failpoints")
    run.add_argument("--tasks-dir", default=None, help="folder of task folders (default: the built-in tasks)")
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser("list", help=COMMANDS[1][1])
    lst.add_argument("--tasks-dir", default=None, help="folder of task folders (default: the built-in tasks)")
    lst.add_argument("--json", action="store_true", help="as one JSON document (tasks, checks, agents)")
    lst.set_defaults(func=cmd_list)
    from harness.agents.cli import add_parser as add_agents_parser
    add_agents_parser(sub)
    for name, what in COMMANDS[2:]:  # parsed by their own modules; listed here for --help
        sub.add_parser(name, help=what, add_help=False)
    return parser


# ---------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    """One agent into ``--report-dir``; several (``--agent A --agent B``) in turn, each into
    its own folder below it, and a leaderboard of them all in it."""
    from harness.containment import stale
    from harness.report import format_written, load_results
    from harness.report.writer import LEADERBOARD_FILES, write_leaderboard

    names = _split(args.agent)
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
        _profile(name)
    codes, runs = [], []
    with _report_dir_held(args, Path(args.report_dir), LEADERBOARD_FILES):
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
def _report_dir_held(args: argparse.Namespace, report_dir: Path, files: Sequence[str] | None = None) -> Iterator[None]:
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
    from harness.planning import plan
    from harness.sharding import ShardError, parse_shard, shard_items

    profile, tasks = _load(args, agent)
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    if args.retries < 0:
        raise UsageError(f"--retries must be 0 or more, got {args.retries}")
    adapters = _split(args.adapter)
    for adapter in adapters:
        if adapter not in profile.adapters:
            raise UsageError(f"agent {profile.name!r} has no adapter {adapter!r} "
                             f"(it has: {', '.join(profile.adapters)})")
    failpoints = _failpoints(args, profile)
    items = plan(profile, tasks, adapters=adapters or None, repeat=args.repeat, mutants=[None, *failpoints])
    drivers = _split(args.driver)
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
    with _report_dir_held(args, report_dir):
        return _run_items(args, profile, items, planned, failpoints, report_dir)


def _run_items(args: argparse.Namespace, profile: Profile, items: list[WorkItem], planned: list[WorkItem],
               failpoints: dict[str, tuple[str, ...]], report_dir: Path) -> int:
    """The planned task runs of one agent into ``report_dir`` (held), then its reports."""
    from harness.model import RunResult
    from harness.mutants import mutation_summary
    from harness.provenance import digests, run_header
    from harness.report.progress import Progress
    from harness.report.writer import ResultsCheckpoint, folder_problem, write_text
    from harness.rundir import make_private
    from harness.signals import run_until_signalled

    done: list[TaskResult] = []
    earlier = RunResult(run={}, tasks=(), latencies=())
    if args.resume:
        done, earlier = _resumed(args.resume, profile, items, digests(profile, planned))
    started = _now()
    todo = [i for i in items if i.key not in {_key(t) for t in done}]
    outcomes: dict[int, ItemOutcome] = {}  # by position in the plan: reports keep its order
    progress = Progress(len(todo))
    keep = (report_dir / "runs").resolve() if args.keep else None
    if keep is not None:
        if problem := folder_problem(keep):
            raise UsageError(f"--keep {problem}")
        keep.mkdir(parents=True, exist_ok=True)
        make_private(keep)  # made, or kept from an earlier run: the owner's alone before any run writes in it
    # What this machine costs, and the stopwatch's floor: a second of measuring (task runs of its own: cut
    # short like any), taken right after the first task run so that its result shows at once; until then
    # the header says so.
    machine: dict[str, Any] = {"loadavg": list(os.getloadavg()), "cpus": os.cpu_count(),
                               "not_measured": "measured after the first task run, which has not ended"}

    # Provenance once (the version command is a process start); only the end moves.
    fixed = run_header(profile, items, argv=args.argv, repeat=args.repeat, shard=args.shard, started=started,
                       ended=started, planned=planned)
    if getattr(args, "swept", None):
        fixed["swept"] = args.swept

    def snapshot(incomplete: str | None) -> RunResult:
        header = {**fixed, "ended": _now()}
        ended = [outcomes[n] for n in sorted(outcomes)]
        tasks_so_far = tuple(done) + tuple(o.result for o in ended)
        if failpoints:
            header["mutation"] = mutation_summary(tasks_so_far, failpoints)
        header["machine"] = {**machine, "loadavg_end": list(os.getloadavg())}  # a load that came mid-run
        if incomplete:
            header["incomplete"] = incomplete
        return RunResult(run=header, tasks=tasks_so_far,
                         latencies=earlier.latencies + tuple(s for o in ended for s in o.latencies),
                         concurrent=earlier.concurrent + tuple(s for o in ended for s in o.concurrent))

    checkpoint = ResultsCheckpoint()

    checkpoint_failed = False  # said once

    def finished(n: int, item: WorkItem, outcome: ItemOutcome) -> None:
        nonlocal checkpoint_failed
        outcomes[n] = outcome
        progress.done(n, _label(item), outcome.result)
        # A checkpoint after every task run: a killed harness leaves a readable file.
        try:
            write_text(report_dir / "results.json",
                       checkpoint.text(snapshot(f"in progress: {len(outcomes)} of {len(todo)} done")))
        except OSError as exc:  # the run goes on; what it measured is in memory, written at the end
            if not checkpoint_failed:
                checkpoint_failed = True
                print(f"stopbench: cannot write the checkpoint into {report_dir} ({exc}); the run goes on",
                      file=sys.stderr)

    def run_from(first: int, part: list[WorkItem]) -> None:
        """``part`` of ``todo``, which begins at its position ``first`` (from 1)."""
        if part:
            run_until_signalled(run_all(profile, part, jobs=args.jobs, retries=args.retries, keep=keep,
                                        on_start=lambda n, item: progress.start(first - 1 + n, _label(item)),
                                        on_done=lambda n, item, outcome: finished(first - 1 + n, item, outcome)))

    interrupted: str | None = None
    try:
        run_from(1, todo[:1])
        machine = {**null_agent_costs(), "floor": run_until_signalled(quick_floor_async())}
        run_from(2, todo[1:])
    except Interrupted as exc:
        interrupted = str(exc)
    except Exception as exc:  # a harness bug: keep what was measured, say so, never read as "not conformant"
        traceback.print_exc()
        interrupted = f"internal error: {type(exc).__name__}: {exc}"
    if keep is not None:
        make_private(keep)
    with signals.deferred():  # what was kept is written whole, whatever arrives meanwhile
        run = snapshot(interrupted)
        written, rescued = _write_reports_somewhere(run, report_dir)
        try:
            _summary(run, failpoints, written)
            if keep is not None:
                print(f"run folders kept in {keep} (each task run's evidence names its own: run_dir)")
        except BrokenPipeError:  # `stopbench run | head`: the reports are written already
            _quiet_stdout()
    if interrupted:
        print(f"stopbench: run incomplete ({interrupted}); {len(run.tasks)} task run(s) kept in "
              f"{written[0]} — continue with --resume", file=sys.stderr)
        return EXIT_USAGE
    if rescued:
        return EXIT_USAGE
    mutation = run.run.get("mutation")
    survived = mutation is not None and mutation["caught"] < mutation["total"]
    return EXIT_OK if run.verdict.ok and not survived else EXIT_NOT_CONFORMANT


def _write_reports_somewhere(run: RunResult, report_dir: Path) -> tuple[list[Path], bool]:
    """The reports in ``report_dir`` or, should that fail now (the folder went away, the disk
    filled up), in a new temporary folder named on stderr: a run's results are never lost to
    its folder. Whether they had to go elsewhere."""
    from harness.report import write_reports

    try:
        return write_reports(run, report_dir), False
    except OSError as exc:
        rescue = Path(tempfile.mkdtemp(prefix="stopbench-reports-"))
        print(f"stopbench: cannot write the reports into {report_dir} ({exc}); they are in {rescue}",
              file=sys.stderr)
        return write_reports(run, rescue), True


def _summary(run: RunResult, failpoints: dict[str, tuple[str, ...]], written: list[Path]) -> None:
    from harness.report import format_written
    from harness.report.latency import recorded_floors
    from harness.report.progress import latency_table, mutation_table, scoreboard

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
    sys.stdout.flush()


def _failpoints(args: argparse.Namespace, profile: Profile) -> dict[str, tuple[str, ...]]:
    from harness.mutants import FailpointsError, list_failpoints

    if not args.mutants:
        if args.failpoint:
            raise UsageError("--failpoint needs --mutants")
        return {}
    try:
        failpoints = list_failpoints(profile)
    except FailpointsError as exc:
        raise UsageError(str(exc)) from None
    chosen = _split(args.failpoint)
    unknown = [f for f in chosen if f not in failpoints]
    if unknown:
        raise UsageError(f"unknown failpoint {unknown[0]!r} (the agent has: {', '.join(failpoints)})")
    return {f: failpoints[f] for f in chosen} if chosen else failpoints


def _resumed(path: str, profile: Profile, items: list[WorkItem],
             now: dict[str, Any]) -> tuple[list[TaskResult], RunResult]:
    """The finished task runs of an earlier, incomplete run of the same work: the same agent,
    profile, tasks and scenarios (``now`` holds their digests), or nothing is inherited."""
    from harness.model import RunResult, RunStatus
    from harness.provenance import driven_version
    from harness.report import ResultsError, load_results

    try:
        earlier = load_results(path)
    except ResultsError as exc:
        raise UsageError(str(exc)) from None
    if earlier.run.get("agent") != profile.name:
        raise UsageError(f"{path}: results of agent {earlier.run.get('agent')!r}, not {profile.name!r}")
    version = driven_version(profile)
    if version and "agent_version_reported" in earlier.run and earlier.run.get("agent_version") != version:
        raise UsageError(f"{path}: results of {profile.name} {earlier.run.get('agent_version')}, not {version}")
    changed = _changed_since(earlier.run.get("digests"), now)
    if changed:
        raise UsageError(f"{path}: cannot resume: {changed}; its verdicts are not this run's — "
                         "run again without --resume")
    wanted = {i.key for i in items}
    kept = [t for t in earlier.tasks if _key(t) in wanted and t.status is not RunStatus.ERRORED]
    keys = {(t.task, t.adapter, t.repeat) for t in kept}
    def ours(samples: tuple[LatencySample, ...]) -> tuple[LatencySample, ...]:
        return tuple(s for s in samples if (s.task, s.adapter, s.repeat) in keys)

    return kept, RunResult(run={}, tasks=(), latencies=ours(earlier.latencies), concurrent=ours(earlier.concurrent))


def _changed_since(then: Any, now: dict[str, Any]) -> str | None:
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


def _key(t: TaskResult) -> str:
    return f"{t.task}/{t.adapter}/{t.repeat}/{t.mutant or '-'}"


def cmd_list(args: argparse.Namespace) -> int:
    from harness.checks import REGISTRY
    from harness.profiles import builtin_names

    tasks = _tasks(args)
    agents = [_agent_entry(name) for name in builtin_names()]
    if args.json:
        print(json.dumps({
            "tasks": [{"name": t.name, "drivers": list(t.drivers), "adapters": list(t.adapters),
                       "checks": {c: tier.value for c, tier in t.checks.items()},
                       "description": " ".join(t.description.split())} for t in tasks],
            "checks": [{"id": check_id, "name": spec.name, "observes": spec.observes, "tier": spec.tier.value}
                       for check_id, spec in REGISTRY.items()],
            "agents": agents}, indent=2, ensure_ascii=False))
        return EXIT_OK
    width = max(60, min(os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else 100, 120))
    print("tasks:")
    for t in tasks:
        tiers: dict[str, list[str]] = {}
        for check, tier in t.checks.items():
            tiers.setdefault(tier.value, []).append(check)
        print(f"  {t.name:<22} drivers: {', '.join(t.drivers):<30} "
              + "; ".join(f"{tier}: {' '.join(ids)}" for tier, ids in tiers.items()))
        print(textwrap.fill(" ".join(t.description.split()), width=width, initial_indent=" " * 4,
                            subsequent_indent=" " * 4))
    print("checks:")
    for check_id, spec in REGISTRY.items():
        print(f"  {check_id:<4} {spec.name:<34} observes {spec.observes:<4} default {spec.tier.value}")
    print("agents:")
    for a in agents:
        if "error" in a:
            print(f"  {a['name']:<12} (broken profile: {a['error']})")
        else:
            print(f"  {a['name']:<12} adapters: {', '.join(a['adapters']):<22} drivers: {', '.join(a['drivers']):<28} "
                  f"{'' if a['installed'] else '(not installed) '}{a['description']}")
    return EXIT_OK


def _agent_entry(name: str) -> dict[str, Any]:
    """A built-in profile as ``list`` shows it: whether its agent is installed (a profile with
    no real agent behind it, like the reference agent, comes with stopbench), or why the
    profile cannot be loaded."""
    from harness.agents.install import NotInstalled
    from harness.profiles import ProfileError, agent_binary, load_profile

    try:
        profile = load_profile(name)
    except ProfileError as exc:
        return {"name": name, "error": str(exc)}
    installed = True
    if profile.agent:
        try:
            agent_binary(profile)
        except NotInstalled:
            installed = False
    return {"name": name, "agent": profile.agent, "installed": installed, "adapters": list(profile.adapters),
            "drivers": list(profile.drivers()), "description": profile.description}


# ---------------------------------------------------------------------------------------


def _profile(agent: str) -> Profile:
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
    profile = _profile(agent)
    for warning in profile.warnings:
        print(f"stopbench: warning: {profile.path}: {warning}", file=sys.stderr)
    tasks = _tasks(args)
    names = {t.name for t in tasks}
    strange = sorted(set(profile.not_run) - names)
    if strange:
        raise UsageError(f"{profile.path}: not_run.{strange[0]}: no such task (tasks: {', '.join(sorted(names))})")
    wanted = _split(args.task)
    if wanted:
        missing = [w for w in wanted if w not in names]
        if missing:
            raise UsageError(f"unknown task {missing[0]!r} (tasks: {', '.join(sorted(names))})")
        tasks = [t for t in tasks if t.name in wanted]
    return profile, tasks


def _tasks(args: argparse.Namespace) -> list[Task]:
    from harness.checks import REGISTRY
    from harness.tasks import TASKS_DIR, TaskError, load_all

    root = Path(args.tasks_dir) if args.tasks_dir else TASKS_DIR
    try:
        tasks = load_all(root, known_checks=set(REGISTRY))
    except TaskError as exc:
        raise UsageError(str(exc)) from None
    if not tasks:
        raise UsageError(f"no tasks found under {root} (expected {root}/<name>/task.toml)")
    return tasks


def _split(values: list[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _label(item: WorkItem) -> str:
    from harness.report.progress import item_label

    return item_label(item.variant, item.driver, item.adapter, item.repeat, item.mutant)


def _quiet_stdout() -> None:
    """After the reader of stdout went away, send what is left nowhere (no traceback at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


if __name__ == "__main__":
    sys.exit(main())
