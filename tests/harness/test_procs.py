"""Agent processes: default signal dispositions, own session, tree kill by PID, leftovers."""

import asyncio
import os
import signal
import sys
import time

import psutil

from harness.containment import procs
from harness.containment.procs import (
    GoneWatch,
    ProcRef,
    kill_all,
    kill_tree,
    leftovers,
    signal_group,
    spawn,
    tree,
    wait_gone,
)

# A child that starts two children, one of which leaves the session with setsid; once both
# are ready it prints their PIDs and waits.
FAMILY = r"""
import os, subprocess, sys, time
ready = "print('ready', flush=True); time.sleep(120)"
kids = [subprocess.Popen([sys.executable, "-c", "import time; " + ready], stdout=subprocess.PIPE)]
kids.append(subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); " + ready], stdout=subprocess.PIPE))
for k in kids:
    k.stdout.readline()
print(" ".join(str(k.pid) for k in kids), flush=True)
time.sleep(120)
"""

async def test_sigint_is_at_default_even_when_the_harness_ignores_it(tmp_path):
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as under `cmd &` in a script
    try:
        proc = await spawn([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"],
                           env=dict(os.environ), cwd=str(tmp_path))
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        assert await asyncio.wait_for(proc.stdout.readline(), 30) == b"up\n"
        os.kill(proc.pid, signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGINT
    finally:
        kill_tree(ProcRef.of(proc.pid))


async def test_each_agent_leads_its_own_session(tmp_path):
    proc = await spawn([sys.executable, "-c", "import os; print(os.getsid(0), os.getpgid(0))"],
                       env=dict(os.environ), cwd=str(tmp_path))
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert out.split() == [str(proc.pid).encode()] * 2


async def test_kill_tree_ends_descendants_including_a_setsid_escapee(tmp_path):
    proc = await spawn([sys.executable, "-c", FAMILY], env=dict(os.environ), cwd=str(tmp_path))
    root = ProcRef.of(proc.pid, "agent")
    kids = [int(p) for p in (await asyncio.wait_for(proc.stdout.readline(), 30)).split()]
    family = [root, *(ProcRef.of(k) for k in kids)]
    try:
        assert {r.pid for r in tree(root)} >= {proc.pid, *kids}
        assert os.getsid(kids[1]) == kids[1]  # really escaped the agent's session
        assert kill_tree(root) == []
        assert leftovers(family) == []
        assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGKILL  # reaped by its owner, not stolen
    finally:
        kill_all(family)


def test_a_reused_pid_is_not_mistaken_for_the_process():
    me = ProcRef.of(os.getpid())
    assert me.alive()
    impostor = ProcRef(os.getpid(), me.create_time - 1000)
    assert not impostor.alive() and leftovers([impostor]) == []


def test_wait_gone_is_immediate_for_gone_processes_and_none_at_the_deadline():
    assert wait_gone([ProcRef(2**22 + 12345, 1.0)], deadline_s=1) is not None
    assert wait_gone([ProcRef.of(os.getpid())], deadline_s=0.01) is None


def test_record_pids_become_refs():
    p = psutil.Process()
    ref = ProcRef.from_record({"pid": p.pid, "create_time": p.create_time(), "role": "root"})
    assert ref.alive() and ref.role == "root" and ref.to_json()["pid"] == p.pid


async def test_an_exit_is_stamped_off_the_pidfd(tmp_path):
    from harness.containment.procs import ExitStamp

    proc = await spawn([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"],
                       env=dict(os.environ), cwd=str(tmp_path))
    stamp = ExitStamp(proc.pid)
    assert await proc.stdout.readline() == b"up\n" and stamp.ns is None      # alive: nothing seen
    killed_ns = time.monotonic_ns()
    os.kill(proc.pid, signal.SIGKILL)
    await proc.wait()
    for _ in range(100):      # the pidfd's callback may run in the loop pass after the wait's
        if stamp.ns is not None:
            break
        await asyncio.sleep(0)
    assert stamp.ns is not None and killed_ns < stamp.ns <= time.monotonic_ns()
    stamp.close()
    stamp.close()             # idempotent: the driver closes it at settle and again at close


async def test_gone_watch_stamps_the_last_exit_of_a_tree_without_polling(tmp_path):
    procs = [await spawn([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"],
                         env=dict(os.environ), cwd=str(tmp_path)) for _ in range(2)]
    refs = [ProcRef.of(p.pid) for p in procs]
    try:
        for p in procs:
            assert await asyncio.wait_for(p.stdout.readline(), 30) == b"up\n"
        watch = GoneWatch(refs, deadline_s=60)
        os.kill(procs[0].pid, signal.SIGKILL)
        await asyncio.wait_for(procs[0].wait(), 30)
        assert watch.gone_ns is None  # one of two is not the tree
        killed_ns = time.monotonic_ns()
        os.kill(procs[1].pid, signal.SIGKILL)
        await asyncio.wait_for(procs[1].wait(), 30)  # reaped by asyncio: after the exit was seen
        gone = await watch.finish()
        assert gone is not None and gone >= killed_ns
    finally:
        kill_all(refs)


async def test_gone_watch_finished_early_says_not_gone(tmp_path):
    proc = await spawn([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"],
                       env=dict(os.environ), cwd=str(tmp_path))
    ref = ProcRef.of(proc.pid)
    try:
        assert await asyncio.wait_for(proc.stdout.readline(), 30) == b"up\n"
        watch = GoneWatch([ref], deadline_s=60)
        assert await watch.finish() is None
        gone_before = GoneWatch([ProcRef(2**22 + 12345, 1.0)], deadline_s=60)  # no such process
        assert gone_before.gone_ns is not None
    finally:
        kill_all([ref])
        await asyncio.wait_for(proc.wait(), 30)


def _deliveries(monkeypatch) -> list[tuple[str, int, int]]:
    """Every kill(2) the harness makes, recorded and then made."""
    calls: list[tuple[str, int, int]] = []
    real_kill, real_killpg = os.kill, os.killpg

    def kill(pid: int, sig: int) -> None:
        calls.append(("kill", pid, sig))
        real_kill(pid, sig)

    def killpg(group: int, sig: int) -> None:
        calls.append(("killpg", group, sig))
        real_killpg(group, sig)

    monkeypatch.setattr(procs.os, "kill", kill)
    monkeypatch.setattr(procs.os, "killpg", killpg)
    return calls


async def test_a_group_stop_reaches_the_leader_once_like_one_ctrl_c(tmp_path, monkeypatch):
    """A second SIGINT is a double Ctrl-C ("quit now" to many agents): the leader of its group
    gets the group's one delivery and no other."""
    proc = await spawn([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"],
                       env=dict(os.environ), cwd=str(tmp_path))
    try:
        assert await asyncio.wait_for(proc.stdout.readline(), 30) == b"up\n"
        calls = _deliveries(monkeypatch)
        assert signal_group(proc.pid, signal.SIGINT) is True
        assert calls == [("killpg", proc.pid, signal.SIGINT)]
        assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGINT
    finally:
        kill_tree(ProcRef.of(proc.pid))


async def test_a_process_that_leads_no_group_is_signalled_itself(tmp_path, monkeypatch):
    """The agent's group is gone or is not its own (it is no leader): the signal goes to it."""
    leader = await spawn([sys.executable, "-c", "import subprocess, sys, time; "
                          "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)']); "
                          "print(kid.pid, flush=True); time.sleep(120)"], env=dict(os.environ), cwd=str(tmp_path))
    try:
        kid = int(await asyncio.wait_for(leader.stdout.readline(), 30))
        calls = _deliveries(monkeypatch)
        assert signal_group(kid, signal.SIGTERM) is True
        assert calls[-1] == ("kill", kid, signal.SIGTERM)
    finally:
        kill_tree(ProcRef.of(leader.pid))
