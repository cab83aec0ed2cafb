"""Forged beacons: a window record naming a process that is not the run's never gets it killed.

The harness ends the processes a ``window`` record names. Anything on the machine can read a
running window helper's command line (and with it the beacon it posts to), and an agent sees
the window command it runs; so a record may name any process at all. A process the harness
cannot show to be the run's (its cgroup, its tag, its folder, a descendant of those) is
reported as forged evidence and left alone.
"""

import asyncio
import json
import os
import subprocess
import textwrap
import threading
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from harness.containment.procs import ProcRef, kill_all
from harness.model import RunStatus
from harness.offline.netns import setns
from harness.profiles import load_profile
from harness.run.planning import WorkItem
from harness.run.runner import run_item
from harness.tasks import load_task

FIND_WINDOW_S = 60.0  # failsafe: the window opens within a turn

SCENARIO = textwrap.dedent('''\
    name = "forged-window"
    [[responses]]
    match = { last = "user" }
    [[responses.frames]]
    shell = { window = { id = "w1", depth = 1, fanout = 1, hold_s = 60 } }
    [[responses]]
    match = { last = "tool" }
    [[responses.frames]]
    text = "Stopped."
    [[responses]]
    match = { last = "user" }
    [[responses.frames]]
    shell = { window = { id = "w9", depth = 1, fanout = 1, hold_s = 60 } }
    ''')
# w9 is the window the forged record claims: a response the run never reaches opens it, so
# the task's wait for it is one the task loader accepts (a wait for a window no frame opens is
# the task's mistake); only the forged record can satisfy it.

# The forged record is waited for like any beacon, so it is known to be in before Stop.
TASK = textwrap.dedent('''\
    name = "forged-window"
    drivers = ["subprocess"]
    [checks]
    mandatory = ["C13"]
    [[steps]]
    do = "send"
    text = "Run the long job."
    [[steps]]
    do = "wait"
    for = "window"
    window = "w1"
    [[steps]]
    do = "wait"
    for = "window"
    window = "w9"
    [[steps]]
    do = "stop"
    [[steps]]
    do = "settle"
    ''')


def describe(proc: subprocess.Popen) -> dict:
    p = psutil.Process(proc.pid)
    return {"pid": p.pid, "ppid": p.ppid(), "pgid": p.pid, "sid": p.pid, "create_time": p.create_time(),
            "role": "child"}


def window_beacon() -> tuple[str, int] | None:
    """The ``--beacon`` a running window helper of id w1 was given, read off its command line
    (this test's own: other runs on the machine have windows of that id too), and its network
    namespace as an open descriptor."""
    for proc in psutil.Process().children(recursive=True):
        try:
            argv = proc.cmdline()
        except psutil.Error:
            continue
        if "fake_server.window" in argv and "w1" in argv and "--beacon" in argv:
            try:  # its network namespace, held open: the helper may exit once it has reported
                netns = os.open(f"/proc/{proc.pid}/ns/net", os.O_RDONLY)
            except FileNotFoundError:
                continue
            return argv[argv.index("--beacon") + 1], netns
    return None


def post_beside(netns: int, url: str, record: dict) -> int:
    """``post`` from the network namespace ``netns`` (an open descriptor): the fake server
    listens in the run's own (docs/offline.md), where only the run's processes — the agent,
    which sees the window command it runs — can reach it. The post is made from a thread of its
    own that enters it."""
    status: list[int] = []

    def run() -> None:
        if os.fstat(netns).st_ino != os.stat("/proc/thread-self/ns/net").st_ino:
            setns(netns)
        status.append(post(url, record))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return status[0]


def post(url: str, record: dict) -> int:
    request = urllib.request.Request(url, data=json.dumps(record).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


async def forge(victim: dict) -> list[int]:
    """What a process of the run can do: find the window helper, and post window records
    naming the victim, once the way the helper posts and once to the server's open beacon."""
    async with asyncio.timeout(FIND_WINDOW_S):
        while (found := await asyncio.to_thread(window_beacon)) is None:
            await asyncio.sleep(0.01)  # polls the process table for the helper to appear
    beacon, netns = found
    server_root = beacon.split("/", 3)
    open_beacon = "/".join(server_root[:3]) + "/_stopbench/beacon"
    record = {"kind": "window", "pids": [victim], "marker": "/nonexistent"}
    try:
        as_helper = await asyncio.to_thread(post_beside, netns, beacon.rstrip("/") + "/_stopbench/beacon",
                                            {**record, "window": "w9"})
        unauthenticated = await asyncio.to_thread(post_beside, netns, open_beacon, {**record, "window": "w8"})
    finally:
        os.close(netns)
    return [as_helper, unauthenticated]


@pytest.fixture
def victim():
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    kill_all([ProcRef.of(proc.pid)])
    proc.wait()


def test_a_forged_window_record_gets_no_process_killed_and_is_reported(tmp_path: Path, victim):
    task_dir = tmp_path / "forged-window"
    task_dir.mkdir()
    (task_dir / "scenario.toml").write_text(SCENARIO)
    (task_dir / "task.toml").write_text(TASK)
    work = WorkItem(load_task(task_dir), "subprocess", "http", 1)
    named = describe(victim)

    async def both():
        forged = asyncio.ensure_future(forge(named))
        outcome = await run_item(load_profile("reference"), work, retries=0)
        return outcome, await forged

    outcome, statuses = asyncio.run(both())
    result = outcome.result
    assert victim.poll() is None, "the harness killed a process a forged record named"
    assert result.status is RunStatus.RAN, result.reason
    assert statuses[1] == 403, f"an unauthenticated window record was accepted ({statuses})"
    forged = result.evidence["containment"]["forged"]
    assert {"window": "w9", "pid": victim.pid} in [{k: f.get(k) for k in ("window", "pid")} for f in forged], forged
    assert any(f.get("window") == "w8" and f.get("refused") for f in forged), forged


WINDOW = {"kind": "window", "window": "w8", "marker": "/nonexistent",
          "pids": [{"pid": 1, "ppid": 0, "pgid": 1, "sid": 1, "create_time": 0.0, "role": "root"}]}
DISCONNECT = {"kind": "disconnect", "request": 1, "after_chunk": 2}


@pytest.mark.parametrize("route", ["/_stopbench/beacon", "/run/not-the-token/_stopbench/beacon", "/run/%C3%A9/_stopbench/beacon"])
@pytest.mark.parametrize("record", [WINDOW, DISCONNECT], ids=["window", "disconnect"])
async def test_a_record_without_the_runs_token_is_refused_and_recorded(route: str, record: dict):
    """The beacon stores records (windows, disconnects …: each makes the harness act) only under
    the run's token; any other is refused with 403 and kept as an error naming its kind and the
    window it claimed (the token never in the record)."""
    from fake_server import FakeServer
    from fake_server.records import Error

    async with FakeServer() as server:
        status = await asyncio.to_thread(post, server.url + route, record)
        accepted = await asyncio.to_thread(post, server.beacon_url + "/_stopbench/beacon", record)
        stored = [r.to_json() for r in server.records]
    assert (status, accepted) == (403, 200), stored
    [refused] = [r for r in stored if r["kind"] == Error.kind]
    assert refused["status"] == 403 and f"a {record['kind']} record" in refused["problem"]
    assert refused.get("window") == record.get("window")
    assert server.beacon_token not in json.dumps(stored)
    assert [r["kind"] for r in stored if r["kind"] != Error.kind] == [record["kind"]]
