"""``refagent``: run one turn headless, chat in a terminal, serve ACP, fork or search a session, list failpoints.

Exit codes of ``run`` (contract C8): 0 completed; 2 error, blocked, max_tokens or bad input
(a damaged log included); 3 aborted or interrupted. SIGINT and SIGTERM are Stop: the turn
settles first, then the process exits 3.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from . import failpoints, log
from .api import default_sessions_dir, fork, latest_session_id, log_path_of, open_session
from .log import LogDamage
from .search import SearchIndex

EXIT_CODES = {"completed": 0, "error": 2, "blocked": 2, "max_tokens": 2, "aborted": 3, "interrupted": 3}


def exit_code_for(settlement: dict, stop_source: str | None) -> int:
    code = EXIT_CODES[settlement["reason"]]
    if stop_source == "timeout" and failpoints.on("exit-1-on-timeout"):
        return 1
    if stop_source in ("user", "parent") and failpoints.on("exit-0-on-stop"):
        return 0
    return code


def _version() -> str:
    from importlib import metadata  # only for --version: it costs every start ~30 ms

    try:
        return metadata.version("stopbench")
    except metadata.PackageNotFoundError:
        return "0+unknown"


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any):
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"refagent {_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="refagent",
                                     description="A small coding agent that keeps the interruption contract.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)

    def session_options(p: argparse.ArgumentParser, *, resume_options: bool = True) -> None:
        if resume_options:
            resume = p.add_mutually_exclusive_group()
            resume.add_argument("--resume", metavar="ID", help="continue this session")
            resume.add_argument("--continue", dest="continue_", action="store_true",
                                help="continue the latest session")
        p.add_argument("--adapter", choices=["http", "inproc", "openai-sdk"], default="http")
        p.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"))
        p.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"))
        p.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "stopbench-1"))
        p.add_argument("--sessions-dir", default=None)
        p.add_argument("--cwd", default=None)
        p.add_argument("--scenario", help="scenario file (inproc adapter)")
        p.add_argument("--failpoints", help="comma-separated failpoints to enable (testing the harness)")

    run = sub.add_parser("run", help="run one turn and print the answer")
    session_options(run)
    run.add_argument("--timeout", type=float, help="Stop the turn after this many seconds (exit 3)")
    run.add_argument("prompt")
    chat = sub.add_parser("chat", help="interactive session in the terminal")
    session_options(chat)
    acp = sub.add_parser("acp", help="serve the Agent Client Protocol on stdin/stdout (sessions: session/new, "
                                     "session/load)")
    session_options(acp, resume_options=False)
    fk = sub.add_parser("fork", help="copy a session up to an event into a new session")
    fk.add_argument("session_id")
    fk.add_argument("--at", type=int, required=True, metavar="SEQ")
    fk.add_argument("--sessions-dir", default=None)
    sr = sub.add_parser("search", help="full-text search of a session's messages, tool commands and outputs")
    sr.add_argument("session", metavar="SESSION", help="a session id, or the path of a session log")
    sr.add_argument("query", metavar="QUERY", help="words that must all occur (FTS5 syntax with --raw)")
    sr.add_argument("--sessions-dir", default=None)
    sr.add_argument("--limit", type=int, default=20, help="show the latest N matches (default 20)")
    sr.add_argument("--raw", action="store_true", help="QUERY is an SQLite FTS5 query (AND, OR, NOT, prefix*, ...)")
    fp = sub.add_parser("failpoints", help="list the failpoints")
    fp.add_argument("--json", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    code = _main(argv)
    if argv is None:
        # Run as the program: every session file is closed and fsync'd by now, so the
        # interpreter's teardown (26 ms with aiohttp loaded, ~100 ms with the openai SDK)
        # would only delay the exit a caller is waiting for after Stop or --timeout.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    return code


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if argv is None:  # run as the program: this process is the agent (see log.paused_gc)
        log.freeze_loaded = True
    try:
        failpoints.check_env()
        if getattr(args, "failpoints", None):
            failpoints.enable(failpoints.active() | failpoints.parse(args.failpoints))
        if args.command == "failpoints":
            return _list_failpoints(args.json)
        if args.command == "fork":
            new_id, path = fork(args.sessions_dir or default_sessions_dir(), args.session_id, args.at)
            print(f"refagent: session {new_id} {path}", file=sys.stderr)
            print(new_id)
            return 0
        if args.command == "search":
            return _search(args)
        if args.command == "run":
            return asyncio.run(_run(args))
        if args.command == "acp":
            from .acp import acp_main

            return asyncio.run(acp_main(args, _version))
        from .chat import chat_main

        return asyncio.run(chat_main(args, _open))
    except LogDamage as exc:
        print(f"refagent: error: damaged session log: {exc} (the file was left untouched)", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError, failpoints.UnknownFailpoint) as exc:
        print(f"refagent: error: {exc}", file=sys.stderr)
        return 2


def _list_failpoints(as_json: bool) -> int:
    if as_json:
        catalog = {n: {"checks": list(c), "description": d} for n, (c, d) in failpoints.CATALOG.items()}
        print(json.dumps(catalog, indent=1))
    else:
        for name, (checks, description) in failpoints.CATALOG.items():
            print(f"{name:24} {','.join(checks):8} {description}")
    return 0


def _search(args: argparse.Namespace) -> int:
    """Exit 0 with matches, 1 with none (as grep), 2 on a damaged log or a bad query."""
    given = Path(args.session)
    path = given if given.suffix == ".jsonl" or "/" in args.session else log_path_of(
        args.sessions_dir or default_sessions_dir(), args.session)
    if not path.exists():
        raise FileNotFoundError(f"no session log {path}")
    if args.limit < 1:
        raise ValueError("--limit must be at least 1")
    index = SearchIndex.of_log(path)
    try:
        hits, total = index.search(args.query, args.limit, raw=args.raw)
    finally:
        index.close()
    for hit in hits:
        print(f"{hit.seq:>7}  {hit.type:<17}  {' '.join(hit.snippet.split())}")
    if total > len(hits):
        print(f"refagent: {total} matching events, the latest {len(hits)} shown (--limit)", file=sys.stderr)
    return 0 if hits else 1


async def _open(args: argparse.Namespace):
    sessions_dir = args.sessions_dir or default_sessions_dir()
    resume = args.resume or (latest_session_id(sessions_dir) if args.continue_ else None)
    session = await open_session(
        sessions_dir=sessions_dir, cwd=args.cwd, adapter=args.adapter, model=args.model,
        base_url=args.base_url, api_key=args.api_key, scenario=args.scenario, resume=resume,
    )
    print(f"refagent: session {session.id} {session.log_path}", file=sys.stderr, flush=True)
    return session


async def _run(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    stop_requests: list[str] = []  # a signal that arrives before the turn exists
    turn = None

    def on_signal() -> None:
        if turn is None:
            stop_requests.append("user")
        else:
            turn.stop("user")

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    session = await _open(args)
    try:
        session.subscribe(_print_text)
        turn = session.start_turn(args.prompt)
        if stop_requests:
            turn.stop("user")
        if args.timeout is not None:
            loop.call_later(max(0.0, args.timeout - _seconds_since_start()), turn.stop, "timeout")
        settlement = await turn.settled()
    finally:
        await session.close()
    sys.stdout.write("\n")
    sys.stdout.flush()
    if settlement.get("error"):
        print(f"refagent: turn ended {settlement['reason']}: {settlement['error']}", file=sys.stderr)
    return exit_code_for(settlement, turn.stop_source)


def _seconds_since_start() -> float:
    """``--timeout T`` counts from the process's start, not from when the turn began:
    a caller measuring the run sees it end shortly after T, whatever start-up cost."""
    with open("/proc/self/stat", "rb") as f:
        stat = f.read()
    return _elapsed_since_start(stat, time.clock_gettime(time.CLOCK_BOOTTIME), os.sysconf("SC_CLK_TCK"))


def _elapsed_since_start(stat: bytes, now_s: float, ticks_per_s: int) -> float:
    """Seconds since the start ``stat`` (``/proc/<pid>/stat``) records, at boot time ``now_s``.

    The kernel gives the start in whole clock ticks, rounded down. Counted from the end of
    that tick, the time never exceeds what really passed, so the timeout never falls before T
    (at most a tick after it); counted from its beginning, it fell up to a tick early.
    """
    start_ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])  # field 22: starttime, since boot
    return max(0.0, now_s - (start_ticks + 1) / ticks_per_s)


def _print_text(event: dict) -> None:
    if event["type"] == "text_delta":
        sys.stdout.write(event["text"])
        sys.stdout.flush()
