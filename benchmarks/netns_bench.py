"""What running a task's agent offline costs (docs/offline.md): making and removing a run's
network namespace, and how soon an outbound attempt fails from inside it.

    python benchmarks/netns_bench.py [--rounds N]

Per round: ``Netns.open`` (the namespace, its TUN device, addresses and routes, the fake
server's listening socket), then from a thread inside it a TCP connect to a public address
and a DNS lookup of a package registry, each timed until it fails (the harness's event loop
answers the TUN device meanwhile), then ``Netns.close``. Prints p50 and max of each, with
the machine's load. Needs root and /dev/net/tun.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import threading
import time

from harness.containment.stale import NETNS_DIR, owner_tag
from harness.offline.netns import Netns, setns


def _inside(name: str) -> tuple[float, float]:
    """Seconds until a connect to a public address fails, and a DNS lookup, from inside ``name``."""
    timings: list[float] = []

    def run() -> None:
        fd = os.open(NETNS_DIR / name, os.O_RDONLY)
        setns(fd)
        os.close(fd)
        start = time.perf_counter()
        try:
            socket.create_connection(("93.184.216.34", 443), timeout=10).close()
        except OSError:
            pass
        timings.append(time.perf_counter() - start)
        start = time.perf_counter()
        try:
            socket.getaddrinfo("registry.npmjs.org", 443)
        except OSError:
            pass
        timings.append(time.perf_counter() - start)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return timings[0], timings[1]


async def bench(rounds: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"open": [], "connect refused": [], "dns refused": [], "close": []}
    for _ in range(rounds):
        start = time.perf_counter()
        network = Netns.open(owner_tag())
        figures["open"].append(time.perf_counter() - start)
        network.watch()
        connect_s, dns_s = await asyncio.to_thread(_inside, network.name)
        figures["connect refused"].append(connect_s)
        figures["dns refused"].append(dns_s)
        network.unwatch()
        start = time.perf_counter()
        network.close()
        figures["close"].append(time.perf_counter() - start)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    figures = asyncio.run(bench(args.rounds))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.rounds} rounds")
    print(f"{'':18}{'p50 ms':>10}{'max ms':>10}")
    for name, values in figures.items():
        print(f"{name:18}{statistics.median(values) * 1e3:>10.2f}{max(values) * 1e3:>10.2f}")


if __name__ == "__main__":
    main()
