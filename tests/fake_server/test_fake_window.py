"""The bash window: its reported tree is the real process table, marker only when finished,
and every process of it is forked from the window process, not a new interpreter."""
import asyncio
import os
import signal
import subprocess

import psutil
import pytest

from fake_server.scenario import Window
from fake_server.shell import window_command


def ignores_sigterm(pid: int) -> bool:
    """Whether the kernel has SIGTERM set to ignored for ``pid`` (the SigIgn mask)."""
    with open(f"/proc/{pid}/status") as f:
        mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigIgn:"))
    return bool(mask & (1 << (signal.SIGTERM - 1)))


def start_window(server, tmp_path, reaper, **shape):
    command = window_command(Window(**shape), server.beacon_url)
    proc = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, stdout=subprocess.PIPE,
                            start_new_session=True)
    reaper.append((proc.pid, psutil.Process(proc.pid).create_time()))
    return proc


@pytest.mark.slow(reason="a bash window's process tree started and ended")
async def test_reported_tree_matches_the_process_table(server, tmp_path, reaper):
    proc = start_window(server, tmp_path, reaper, id="w1", depth=2, fanout=2, ignore_term=True,
                        escape=True, hold_s=120)
    try:
        async with asyncio.timeout(30):
            record = await server.records.wait_window("w1")
        pids = record.pids
        reaper.extend((p.pid, p.create_time) for p in pids)
        roles = [p.role for p in pids]
        assert roles.count("root") == 1 and roles.count("child") == 2 + 4
        assert roles.count("term-ignorer") == 1 and roles.count("escapee") == 1
        for p in pids:
            real = psutil.Process(p.pid)
            assert real.create_time() == pytest.approx(p.create_time, abs=0.01)
            assert real.ppid() == p.ppid
            assert (os.getpgid(p.pid), os.getsid(p.pid)) == (p.pgid, p.sid)
        by_pid = {p.pid: p for p in pids}
        root = next(p for p in pids if p.role == "root")
        escapee = next(p for p in pids if p.role == "escapee")
        assert escapee.pgid == escapee.pid == escapee.sid != root.pgid
        assert all(p.pgid == root.pgid for p in pids if p.role != "escapee")
        assert all(p.ppid in by_pid for p in pids if p.role != "root")
        ignoring = {p.role: ignores_sigterm(p.pid) for p in pids}
        assert ignoring["term-ignorer"] and not ignoring["root"] and not ignoring["escapee"]
        os.killpg(root.pgid, signal.SIGTERM)
        async with asyncio.timeout(30):
            done = await server.records.wait_window_done("w1")
        assert done.finished is False and done.signal == "SIGTERM"
        assert not (tmp_path / "stopbench-window-w1.done").exists()
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


async def test_window_allowed_to_finish_writes_marker_and_output(server, tmp_path, reaper):
    proc = start_window(server, tmp_path, reaper, id="short", depth=1, fanout=1, hold_s=0.2)
    try:
        async with asyncio.timeout(30):
            record = await server.records.wait_window("short")
            reaper.extend((p.pid, p.create_time) for p in record.pids)
            done = await server.records.wait_window_done("short")
        out, _ = await asyncio.to_thread(proc.communicate, timeout=30)
        assert done.finished is True and proc.returncode == 0
        assert out.decode() == "window short: open, 2 processes\nwindow short: done\n"
        assert (tmp_path / "stopbench-window-short.done").read_text() == "window short finished\n"
        assert record.marker == str(tmp_path / "stopbench-window-short.done")
        assert not [p for p in record.pids if psutil.pid_exists(p.pid)
                    and psutil.Process(p.pid).create_time() == pytest.approx(p.create_time, abs=0.01)
                    and psutil.Process(p.pid).status() != psutil.STATUS_ZOMBIE]
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow(reason="a bash window's process tree started and ended")
async def test_every_child_is_forked_from_the_window_process_not_a_new_interpreter(server, tmp_path, reaper):
    """A fresh interpreter per child is what made windows slow to open under load: every child
    must run the root's own program image and command line (a re-executed child would show its
    own arguments), and hold no file of the tool but /dev/null and its closed report pipe."""
    proc = start_window(server, tmp_path, reaper, id="forked", depth=2, fanout=2, ignore_term=True,
                        escape=True, hold_s=120)
    try:
        async with asyncio.timeout(30):
            record = await server.records.wait_window("forked")
        reaper.extend((p.pid, p.create_time) for p in record.pids)
        root = next(p for p in record.pids if p.role == "root")
        image = {p.pid: (os.readlink(f"/proc/{p.pid}/exe"), read(f"/proc/{p.pid}/cmdline")) for p in record.pids}
        assert b"fake_server.window" in image[root.pid][1]
        assert len(image) == 1 + 6 + 2 and set(image.values()) == {image[root.pid]}
        for p in record.pids:
            if p.role != "root":
                fds = {os.readlink(f"/proc/{p.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{p.pid}/fd")}
                assert fds == {os.devnull}, (p, fds)
        os.killpg(root.pgid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
