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
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli import signals
from harness.cli.signals import Interrupted
from harness.cli.usage import Parser

if TYPE_CHECKING:
    from harness.tasks import Task

# What a command needs is imported when it runs, not here: `stopbench --help`, `list`,
# `report` and `gate` start at once, and the drivers, the fake server (aiohttp) and the
# process tools (psutil, pexpect, pyte) are loaded by `run` alone
# (tests/harness/test_cli_imports.py; benchmarks/startup_bench.py prints the start-up times).
DEFAULT_RETRIES = 2  # harness.run.runner.DEFAULT_RETRIES, for --help without the runner (a test holds them equal)
DRIVER_NAMES = "inproc, subprocess, terminal, acp"  # model.drivers.DRIVERS, for --help (a test holds them equal)


def _harness_error() -> type[Exception]:
    """``harness.run.runner.HarnessError``, imported when an error is being handled."""
    from harness.run.runner import HarnessError

    return HarnessError


EXIT_OK, EXIT_NOT_CONFORMANT, EXIT_USAGE = 0, 1, 2

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
            quiet_stdout()
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
        from harness.cli.report import merge_main, report_main

        return merge_main(argv[2:]) if argv[1:2] == ["merge"] else report_main(argv[1:])
    if argv[:1] == ["gate"]:
        from harness.cli.report import gate_main

        return gate_main(argv[1:])
    if argv[:1] == ["diff"]:
        from harness.cli.report import diff_main

        return diff_main(argv[1:])
    if argv[:1] == ["calibrate"]:
        from harness.cli.calibrate import main as calibrate_main

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


def _command(module: str, name: str) -> Any:
    """A command's function, from its module under ``harness.cli``, imported when it runs."""
    def call(args: argparse.Namespace) -> int:
        from importlib import import_module

        code: int = getattr(import_module(f"harness.cli.{module}"), name)(args)
        return code

    return call


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
                     help=f"driver(s) to run the tasks on: {DRIVER_NAMES} (default: every one they have)")
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
    run.set_defaults(func=_command("run", "cmd_run"))

    lst = sub.add_parser("list", help=COMMANDS[1][1])
    lst.add_argument("--tasks-dir", default=None, help="folder of task folders (default: the built-in tasks)")
    lst.add_argument("--json", action="store_true", help="as one JSON document (tasks, checks, agents)")
    lst.set_defaults(func=_command("listing", "cmd_list"))
    from harness.agents.cli import add_parser as add_agents_parser
    add_agents_parser(sub)
    for name, what in COMMANDS[2:]:  # parsed by their own modules; listed here for --help
        sub.add_parser(name, help=what, add_help=False)
    return parser


def tasks_of(args: argparse.Namespace) -> list[Task]:
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


def split(values: list[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]



def quiet_stdout() -> None:
    """After the reader of stdout went away, send what is left nowhere (no traceback at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())




if __name__ == "__main__":
    sys.exit(main())
