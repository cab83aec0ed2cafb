"""A run's network namespace: made and removed, what it falls back to, each flow recorded
once, and a dead harness's namespaces swept."""

import os
import socket
import subprocess
import threading
import time

import pytest

from harness.containment import stale
from harness.containment.sockets import unread_bytes
from harness.containment.stale import NETNS_DIR, NETNS_PREFIX, owner_tag
from harness.offline import netns
from harness.offline.netns import Netns, open_network, setns, unavailable
from harness.offline.packets import SYN
from tests.harness.test_offline_packets import ip4, tcp

needs_netns = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))


def test_the_in_process_agent_runs_on_the_host_and_says_so():
    network = open_network(owner_tag(), in_process=True)
    assert network.report(0) == {"kind": "host", "why": "offline not enforced: in-process (the agent runs "
                                                         "inside the harness)"}


def test_without_root_the_run_falls_back_to_the_host(monkeypatch):
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    report = open_network(owner_tag(), in_process=False).report(0)
    assert report["kind"] == "host" and "not root" in report["why"], report


@needs_netns
def test_each_flow_is_one_attempt_up_to_a_bound_and_the_namespace_goes_at_close():
    network = Netns.open(owner_tag())
    try:
        assert (NETNS_DIR / network.name).exists()
        syn = ip4("192.0.2.2", "93.184.216.34", 6, tcp(40000, 443, SYN))
        network.take(syn, 1_000_000)
        network.take(syn, 2_000_000)  # the same connection's SYN again
        network.take(ip4("192.0.2.2", "93.184.216.34", 6, tcp(40001, 443, SYN)), 3_000_000)
        assert network.report(0)["attempts"] == [
            {"at_ms": 1.0, "proto": "tcp", "dst": "93.184.216.34", "port": 443},
            {"at_ms": 3.0, "proto": "tcp", "dst": "93.184.216.34", "port": 443}]
        for port in range(50000, 50000 + netns.MAX_ATTEMPTS):  # an agent retrying in a loop
            network.take(ip4("192.0.2.2", "93.184.216.34", 6, tcp(port, 443, SYN)), 4_000_000)
        report = network.report(0)
        assert (len(report["attempts"]), report["more"]) == (netns.MAX_ATTEMPTS, 2)
    finally:
        network.close()
    assert not (NETNS_DIR / network.name).exists()
    network.close()  # twice is fine


@needs_netns
def test_a_dead_owners_namespace_is_swept_and_a_live_ones_kept(tmp_path):
    dead = NETNS_PREFIX + "o999999999-1-" + os.urandom(6).hex()
    alive = NETNS_PREFIX + owner_tag()
    for name in (dead, alive):
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        report = stale.sweep(tmp_path)
        assert dead in report.namespaces and alive not in report.namespaces
        assert not (NETNS_DIR / dead).exists() and (NETNS_DIR / alive).exists()
    finally:
        for name in (dead, alive):
            stale.remove_namespace(name)



@needs_netns
def test_unread_bytes_are_read_off_the_namespaces_tables():
    """A client inside the namespace that has not read what the server sent: the namespace's
    tables show it, the host's (where the harness itself runs) do not."""
    network = Netns.open(owner_tag())
    clients: list[socket.socket] = []
    try:
        server = network.server_socket()
        assert server is not None
        port = server.getsockname()[1]

        def connect() -> None:
            fd = os.open(NETNS_DIR / network.name, os.O_RDONLY)
            setns(fd)
            os.close(fd)
            clients.append(socket.create_connection(("127.0.0.1", port)))

        thread = threading.Thread(target=connect)
        thread.start()
        thread.join()
        server.setblocking(True)
        accepted, _ = server.accept()
        with accepted:
            accepted.sendall(b"x" * 100)
            deadline = time.monotonic() + 5  # failsafe: loopback delivers at once
            while network.unread_bytes(port) < 100 and time.monotonic() < deadline:
                time.sleep(0.001)  # polls the kernel's table for the bytes to land
            assert network.unread_bytes(port) == 100
            assert unread_bytes(port) == 0
    finally:
        for client in clients:
            client.close()
        network.close()
