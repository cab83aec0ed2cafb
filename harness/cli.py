"""The ``stopbench`` command: ``run``, ``list``, ``serve``, ``report`` (and ``report merge``), ``gate``.

Exit codes of ``run``: 0 the agent is conformant (every mandatory check passed, and with
``--mutants`` every mutant was caught), 1 it is not, 2 harness or usage error (a bad
profile, task or option, with a message naming the file and the problem).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import signal
import sys
import traceback
from pathlib import Path
from typing import Sequence

EXIT_OK, EXIT_NOT_CONFORMANT, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Subcommands owned by other parts parse their own arguments.
    if argv[:1] == ["serve"]:
        try:
            from fake_server.cli import main as serve_main
        except ImportError as exc:
            print(f"stopbench: serve is not available ({exc})", file=sys.stderr)
            return EXIT_USAGE
        return serve_main(argv[1:])
    if argv[:1] == ["report"]:
        return _delegate("merge_main" if argv[1:2] == ["merge"] else "report_main",
                         argv[2:] if argv[1:2] == ["merge"] else argv[1:])
    if argv[:1] == ["gate"]:
        return _delegate("gate_main", argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = ["stopbench", *argv]
    from harness.runner import HarnessError

    try:
        return args.func(args)
    except (UsageError, HarnessError) as exc:
        print(f"stopbench: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # a harness bug: say so, and never let it read as "not conformant" (exit 1)
        traceback.print_exc()
        print("stopbench: internal error (above); the run's verdict is unknown", file=sys.stderr)
        return EXIT_USAGE


def _delegate(name: str, argv: list[str]) -> int:
    try:
        import harness.report as report
    except ImportError as exc:
        print(f"stopbench: reports are not available ({exc})", file=sys.stderr)
        return EXIT_USAGE
    return getattr(report, name)(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stopbench", description=(
        "Conformance and evaluation harness for the interruption contract of coding agents. "
        "Also: 'stopbench serve' (fake model server), 'stopbench report [merge]', 'stopbench gate'."))
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="score an agent on the tasks")
    run.add_argument("--agent", default="reference", help="built-in profile name or path of a profile TOML")
    run.add_argument("--adapter", action="append", default=[], help="adapter(s) to run (default: all the agent has)")
    run.add_argument("--task", action="append", default=[], help="task name(s) (default: all)")
    run.add_argument("--repeat", type=int, default=1, help="runs of each task variant (default 1)")
    run.add_argument("--report-dir", default="reports", help="where results go (default reports/)")
    run.add_argument("--shard", help="run only share i of n (e.g. 2/4); merge with 'stopbench report merge'")
    run.add_argument("--mutants", action="store_true",
                     help="also run every failpoint of the agent through the tasks and report the mutation score")
    run.add_argument("--failpoint", action="append", default=[], help="with --mutants: only these failpoints")
    run.add_argument("--tasks-dir", default=None, help="folder of task folders (default: the project's tasks/)")
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser("list", help="show tasks, checks and agents")
    lst.add_argument("--tasks-dir", default=None, help="folder of task folders (default: the project's tasks/)")
    lst.set_defaults(func=cmd_list)
    from harness.agents.cli import add_parser as add_agents_parser
    add_agents_parser(sub)
    return parser


# ---------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from harness import runner
    from harness.model import RunResult
    from harness.progress import Progress, latency_table, mutation_table, scoreboard

    profile, tasks = _load(args)
    if args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    adapters = _split(args.adapter)
    for adapter in adapters:
        if adapter not in profile.adapters:
            raise UsageError(f"agent {profile.name!r} has no adapter {adapter!r} (it has: {', '.join(profile.adapters)})")
    failpoints: dict[str, tuple[str, ...]] = {}
    if args.mutants:
        try:
            failpoints = runner.list_failpoints(profile)
        except runner.FailpointsError as exc:
            raise UsageError(str(exc)) from None
        chosen = _split(args.failpoint)
        unknown = [f for f in chosen if f not in failpoints]
        if unknown:
            raise UsageError(f"unknown failpoint {unknown[0]!r} (the agent has: {', '.join(failpoints)})")
        if chosen:
            failpoints = {f: failpoints[f] for f in chosen}
    elif args.failpoint:
        raise UsageError("--failpoint needs --mutants")
    items = runner.plan(profile, tasks, adapters=adapters or None, repeat=args.repeat,
                        mutants=[None, *failpoints])
    if args.shard:
        try:
            from harness.report import ShardError, parse_shard, shard_items
        except ImportError as exc:
            raise UsageError(f"--shard is not available ({exc})") from None
        try:
            index, count = parse_shard(args.shard)
        except ShardError as exc:
            raise UsageError(str(exc)) from None
        items = shard_items(items, index, count)
    if not items:
        raise UsageError("nothing to run: no task applies to the chosen adapters")

    started = _now()
    progress = Progress(len(items))
    try:
        outcomes = asyncio.run(_until_signalled(runner.run_items(
            profile, items,
            on_start=lambda n, item: progress.start(n, _label(item)),
            on_done=lambda n, item, outcome: progress.done(n, _label(item), outcome.result),
        )))
    except asyncio.CancelledError:
        raise UsageError("interrupted: the task run in progress was cleaned up (agent and tool processes "
                         "ended, temp folders removed); no results written") from None
    header = runner.run_header(profile, items, argv=args.argv,
                               repeat=args.repeat, shard=args.shard, started=started, ended=_now())
    task_results = tuple(o.result for o in outcomes)
    if failpoints:
        header["mutation"] = runner.mutation_summary(task_results, failpoints)
    run = RunResult(run=header, tasks=task_results, latencies=tuple(s for o in outcomes for s in o.latencies))

    print()
    print(scoreboard([t for t in run.tasks if t.mutant is None]))
    print(latency_table(run.latencies))
    if failpoints:
        print(mutation_table(run))
    for where in write_results(run, Path(args.report_dir)):
        print(where)
    conformant = run.conformant
    survived = failpoints and header["mutation"]["caught"] < header["mutation"]["total"]
    print("verdict:", "conformant" if conformant else "NOT conformant",
          *([f"— mutation score {header['mutation']['caught']}/{header['mutation']['total']}"] if failpoints else []))
    return EXIT_OK if conformant and not survived else EXIT_NOT_CONFORMANT


async def _until_signalled(work):
    """Run ``work``; SIGINT or SIGTERM cancels it, so every task run's cleanup still happens
    (the agents run in their own sessions: killing the harness alone would orphan them).
    A signal the caller set to be ignored stays ignored."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            loop.add_signal_handler(sig, task.cancel)
    return await work


def write_results(run, report_dir: Path) -> list[str]:
    """All report formats when the reports package is there, else the results JSON alone."""
    report_dir.mkdir(parents=True, exist_ok=True)
    try:
        from harness.report import format_written, write_reports
    except ImportError:
        path = report_dir / "results.json"
        path.write_text(json.dumps(run.to_json(), indent=1) + "\n", encoding="utf-8")
        return [f"results written: {path}"]
    return [format_written(write_reports(run, report_dir))]


def cmd_list(args: argparse.Namespace) -> int:
    from harness.profiles import ProfileError, builtin_names, load_profile

    tasks = _tasks(args)
    print("tasks:")
    for t in tasks:
        tiers: dict[str, list[str]] = {}
        for check, tier in t.checks.items():
            tiers.setdefault(tier.value, []).append(check)
        print(f"  {t.name:<22} drivers: {', '.join(t.drivers):<22} "
              + "; ".join(f"{tier}: {' '.join(ids)}" for tier, ids in tiers.items()))
        print(f"  {'':<22} {' '.join(t.description.split())[:110]}")
    print("checks:")
    try:
        from harness.checks import REGISTRY
    except ImportError as exc:
        print(f"  (checkers not available: {exc})")
        REGISTRY = {}
    for check_id, spec in REGISTRY.items():
        print(f"  {check_id:<4} {spec.name:<32} observes {spec.observes:<4} default {spec.tier.value}")
    print("agents:")
    for name in builtin_names():
        try:
            p = load_profile(name)
            print(f"  {name:<12} adapters: {', '.join(p.adapters):<14} drivers: {', '.join(p.drivers()):<28} {p.description}")
        except ProfileError as exc:
            print(f"  {name:<12} (broken profile: {exc})")
    return EXIT_OK


# ---------------------------------------------------------------------------------------


def _load(args):
    from harness.profiles import ProfileError, load_profile

    try:
        profile = load_profile(args.agent)
    except ProfileError as exc:
        raise UsageError(str(exc)) from None
    tasks = _tasks(args)
    wanted = _split(args.task)
    if wanted:
        names = {t.name for t in tasks}
        missing = [w for w in wanted if w not in names]
        if missing:
            raise UsageError(f"unknown task {missing[0]!r} (tasks: {', '.join(sorted(names))})")
        tasks = [t for t in tasks if t.name in wanted]
    return profile, tasks


def _tasks(args):
    from harness.tasks import TASKS_DIR, TaskError, load_all

    try:
        from harness.checks import REGISTRY

        known = set(REGISTRY)
    except ImportError:
        known = None
    root = Path(args.tasks_dir) if args.tasks_dir else TASKS_DIR
    try:
        tasks = load_all(root, known_checks=known)
    except TaskError as exc:
        raise UsageError(str(exc)) from None
    if not tasks:
        raise UsageError(f"no tasks found under {root} (expected {root}/<name>/task.toml)")
    return tasks


def _split(values: list[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _label(item) -> str:
    label = f"{item.variant} on {item.adapter} #{item.repeat}"
    return label + (f" [mutant {item.mutant}]" if item.mutant else "")


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


if __name__ == "__main__":
    sys.exit(main())
