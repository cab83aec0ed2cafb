"""``stopbench serve`` / ``python -m fake_server``: run the fake model server until told to stop.

The first line on stdout is the base URL OpenAI clients take (``http://127.0.0.1:PORT/v1``),
so a script can start the server with port 0 and read where it landed.
"""
from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from .scenario import ScenarioError, load_scenario


def add_arguments(parser: argparse.ArgumentParser):
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: any free port)")
    parser.add_argument("--scenario", metavar="FILE", help="scenario TOML (default: the built-in demo)")
    parser.add_argument("--seed", help="id seed, for byte-identical runs (default: random per run)")
    parser.add_argument("--records", metavar="FILE", help="write every record as JSONL here on exit")


async def serve(args) -> int:
    from .server import FakeServer
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
                server.records.to_jsonl(args.records)
    except OSError as exc:
        print(f"stopbench serve: cannot listen on 127.0.0.1:{args.port} ({exc.strerror})", file=sys.stderr)
        return 2
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="stopbench serve", description="Run the deterministic fake model server.")
    add_arguments(parser)
    return asyncio.run(serve(parser.parse_args(argv)))
