"""A tmux server an agent's tools run in (OpenHands runs its terminal in ``tmux -Lopenhands``) is
contained like any daemon: tmux forks its server out of the agent's session, reparented to pid 1,
and the run's end still finds it and its panes' processes, under each kind this machine offers."""

import asyncio
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from harness.containment import KINDS, Containment, ContainmentError
from harness.containment.procs import ProcRef, kill_all, reset_signals

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

# The agent: starts a detached tmux session on its own socket name whose pane runs a long
# sleep, prints the server's pid, and waits, the way OpenHands' terminal tool does.
AGENT = """
import subprocess, sys, time
name = sys.argv[1]
subprocess.run(["tmux", "-L", name, "new-session", "-d", "-s", "work", "sleep 300"], check=True)
pid = subprocess.run(["tmux", "-L", name, "display-message", "-p", "#{pid}"], check=True,
                     capture_output=True, text=True).stdout.strip()
print("server", pid, flush=True)
time.sleep(300)
"""


@pytest.fixture
def run_root() -> Iterator[Path]:
    """A run folder with a short path: a tmux socket path is limited to about 100 bytes."""
    root = Path(tempfile.mkdtemp(prefix="sbtmux-", dir="/tmp"))
    (root / "home").mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=KINDS)
def contained(request: pytest.FixtureRequest, run_root: Path):
    try:
        c = Containment.open(run_root, f"test-{secrets.token_hex(6)}", kinds=(request.param,))
    except ContainmentError as exc:
        pytest.skip(str(exc))
    yield c
    c.close()


PANE_BUDGET_S = 30.0  # failsafe: a pane's command starts within moments


async def _pane_running_sleep(server: psutil.Process) -> list[psutil.Process]:
    """The server's pane processes once one of them runs the pane's ``sleep``: tmux forks the
    pane before its command is exec'd, so right after the session exists the child may still be
    a copy of tmux. Waits on the process table, with a failsafe budget."""
    deadline = time.monotonic() + PANE_BUDGET_S
    while True:
        panes = server.children(recursive=True)
        if any("sleep" in " ".join(p.cmdline()) for p in panes):
            return panes
        assert time.monotonic() < deadline, f"no pane of tmux server {server.pid} ran sleep: {panes}"
        await asyncio.sleep(0.01)


async def test_a_tmux_server_and_its_panes_are_ended_with_the_run(contained: Containment, run_root: Path):
    home = run_root / "home"
    name = f"sbtest-{secrets.token_hex(4)}"
    env = {**os.environ, **contained.env, "HOME": str(home), "TMUX_TMPDIR": str(home)}
    env.pop("TMUX", None)  # not a client of a tmux the tests happen to run in
    refs: list[ProcRef] = []
    try:
        agent = await asyncio.create_subprocess_exec(
            sys.executable, "-c", AGENT, name, env=env, cwd=str(home), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, start_new_session=True, preexec_fn=contained.preexec(reset_signals))
        refs.append(ProcRef.of(agent.pid))
        assert agent.stdout is not None
        line = await asyncio.wait_for(agent.stdout.readline(), 30)
        assert line.startswith(b"server "), line
        server = psutil.Process(int(line.split()[1]))
        refs.append(ProcRef.of(server.pid))
        panes = await _pane_running_sleep(server)
        refs += [ProcRef.of(p.pid) for p in panes]
        assert server.ppid() != agent.pid and os.getsid(server.pid) != os.getsid(agent.pid)  # it left the agent
        assert (home / f"tmux-{os.getuid()}" / name).is_socket()  # its socket is in the run's HOME
        members = {m.pid for m in contained.members()}
        assert {server.pid, *(p.pid for p in panes)} <= members

        report = await asyncio.to_thread(contained.end, 30)

        assert report.clean, report.to_json()
        assert not any(ref.alive() for ref in refs)
        assert await asyncio.wait_for(agent.wait(), 30) != 0
    finally:
        assert kill_all(refs) == []  # whatever the containment did, nothing outlives the test
