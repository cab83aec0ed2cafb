"""A task run is offline for real: its agent reaches the fake server, and nothing else. A tool
the agent runs tries a public address and a package registry's name; both fail within a
second, and the run's evidence lists both attempts."""

import asyncio
import json
import os
import sys
import textwrap

import pytest
from tool_task import one_tool_call_task

from harness.containment.stale import NETNS_DIR, NETNS_PREFIX
from harness.model import RunStatus
from harness.offline.netns import unavailable
from harness.profiles import load_profile
from harness.run.planning import WorkItem
from harness.run.runner import run_item
from harness.tasks import load_task

PUBLIC = ("93.184.216.34", 443)
REGISTRY = "registry.npmjs.org"
FAIL_FAST_S = 1.0

# What an agent's ``npm install`` amounts to: a connection to a public address, a name looked up.
REACH_OUT = textwrap.dedent("""\
    import json, socket, sys, time
    tried = {}
    start = time.monotonic()
    try:
        socket.create_connection(("%s", %d), timeout=30)
        tried["connect"] = "connected"
    except OSError as exc:
        tried["connect"] = type(exc).__name__
    tried["connect_s"] = time.monotonic() - start
    start = time.monotonic()
    try:
        socket.getaddrinfo("%s", 443)
        tried["dns"] = "resolved"
    except OSError as exc:
        tried["dns"] = type(exc).__name__
    tried["dns_s"] = time.monotonic() - start
    with open(sys.argv[1], "w") as f:
        json.dump(tried, f)
""") % (*PUBLIC, REGISTRY)


@pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
def test_outbound_attempts_fail_fast_and_are_reported(tmp_path):
    script, out = tmp_path / "reach_out.py", tmp_path / "tried.json"
    script.write_text(REACH_OUT)
    task_dir = one_tool_call_task(tmp_path, "reach-out", f"{sys.executable} {script} {out}",
                                  ask="Install the dependencies.", answer="Installed.")
    before = set(os.listdir(NETNS_DIR)) if NETNS_DIR.exists() else set()
    result = asyncio.run(run_item(load_profile("reference"), WorkItem(load_task(task_dir), "subprocess", "http", 1)))
    result = result.result
    assert result.status is RunStatus.RAN, result.reason
    tried = json.loads(out.read_text())
    assert tried["connect"] != "connected" and tried["connect_s"] < FAIL_FAST_S, tried
    assert tried["dns"] != "resolved" and tried["dns_s"] < FAIL_FAST_S, tried
    network = result.evidence["network"]
    assert network["kind"] == "netns", network
    attempts = network["attempts"]
    assert {"proto": "tcp", "dst": PUBLIC[0], "port": PUBLIC[1]}.items() <= next(
        a for a in attempts if a["proto"] == "tcp").items(), attempts
    assert any(a["proto"] == "udp" and a["port"] == 53 and a.get("dns_name") == REGISTRY for a in attempts), attempts
    assert all(a["at_ms"] >= 0 for a in attempts), attempts
    # This run's own namespace, by name: other runs on the machine may hold namespaces of theirs.
    assert network["name"].startswith(NETNS_PREFIX) and network["name"] not in before
    assert not (NETNS_DIR / network["name"]).exists(), "the run's namespace was removed"
