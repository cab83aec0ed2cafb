"""``stopbench serve`` / ``python -m fake_server``: run the fake model server until told to stop.

The first line on stdout is the base URL OpenAI clients take (``http://127.0.0.1:PORT/v1``),
so a script can start the server with port 0 and read where it landed.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
from pathlib import Path

from .scenario import ScenarioError
from .scenario_loader import load_scenario


def port(text: str) -> int:
    """A TCP port number, 0 (any free port) to 65535; argparse names the option otherwise."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 (any free port) to 65535, not {number}")
    return number


def add_arguments(parser: argparse.ArgumentParser):
    parser.add_argument("--port", type=port, default=0, help="TCP port on 127.0.0.1 (default: any free port)")
    parser.add_argument("--scenario", metavar="FILE", help="scenario TOML (default: the built-in demo)")
    parser.add_argument("--seed", help="id seed, for byte-identical runs (default: random per run)")
    parser.add_argument("--records", metavar="FILE", help="write every record as JSONL here on exit")


def records_problem(path: Path) -> str | None:
    """Why the records could not be written at ``path`` on exit, or None: asked before
    serving, so a bad path is known before any request is recorded."""
    if path.is_dir():
        return f"{path}: is a folder; name a file"
    folder = path.parent
    if not folder.is_dir():
        return f"{path}: {folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{path}: cannot write in {folder}"
    return None


def write_records(records, path: str) -> int:
    """The records to ``path``; if that fails after all (the folder went away), to a new file
    of their own, named on stderr — served records are never lost. The exit code."""
    try:
        records.to_jsonl(path)
        return 0
    except OSError as exc:
        fd, kept = tempfile.mkstemp(prefix="stopbench-records-", suffix=".jsonl")
        os.close(fd)
        records.to_jsonl(kept)
        print(f"stopbench serve: cannot write the records to {path} ({exc.strerror}); they are kept in {kept}",
              file=sys.stderr)
        return 2


async def serve(args) -> int:
    from .server import FakeServer
    problem = records_problem(Path(args.records)) if args.records else None
    if problem:
        print(f"stopbench serve: --records {problem}", file=sys.stderr)
        return 2
    try:
        scenario = load_scenario(args.scenario) if args.scenario else None
    except ScenarioError as exc:
        print(f"stopbench serve: {exc}", file=sys.stderr)
        return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with FakeServer(scenario=scenario, port=args.port, seed=args.seed) as server:
            print(server.base_url, flush=True)
            print(f"serving scenario '{server.scenario.name}' ({server.scenario.source}); "
                  f"records from other processes (an in-process adapter's --base-url): {server.beacon_url}; "
                  "SIGINT or SIGTERM stops", file=sys.stderr, flush=True)
            await stop.wait()
            if args.records:
                return write_records(server.records, args.records)
    except OSError as exc:
        print(f"stopbench serve: cannot listen on 127.0.0.1:{args.port} ({exc.strerror})", file=sys.stderr)
        return 2
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    return 0


def main(argv=None, parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> int:
    """``parser_class``: how a bad option is answered (``stopbench serve`` passes its own)."""
    parser = parser_class(prog="stopbench serve", description="Run the deterministic fake model server.")
    add_arguments(parser)
    return asyncio.run(serve(parser.parse_args(argv)))
