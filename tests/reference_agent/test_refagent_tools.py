"""Stop inside bash reaches every process of the call, however it hid, before the result.

The walk by parent links finds descendants that left the process group or cleared their
environment (their parent still lives); the scan by tag finds those whose parent had
already exited. Each test's command writes the PIDs it hid into files, then writes to a
FIFO the test waits on.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys

import pytest
from refagent_testkit import alive, kill_pids

from reference_agent.tools import ToolRun

# A daemon's double fork: the grandchild starts its own session and its parent exits
# before the command says it is ready, so it is an orphan outside the group.
DAEMON = f"""{shlex.quote(sys.executable)} -c '
import os, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, str(os.getpid()).encode())
        time.sleep(300)
    os._exit(0)
os.wait()
open("a.pid", "w").write(os.read(r, 32).decode())
'"""

HIDDEN = {
    # left the group and dropped the tag, parent alive: only the parent links lead to it
    "setsid, no environment": "setsid env -i sleep 300 & echo $! > a.pid; echo > ready; wait",
    # left the group, parent gone: only the tag leads to it
    "daemon": f"{DAEMON}; echo > ready; sleep 300",
    # the child of a process that left the group (in that process's group)
    "child of an escapee": "setsid bash -c 'sleep 300 & echo $! > a.pid; wait' & "
                           "while [ ! -s a.pid ]; do sleep 0.01; done; echo > ready; wait",
}


@pytest.mark.parametrize("command", HIDDEN.values(), ids=HIDDEN.keys())
async def test_stop_kills_processes_however_they_hid(tmp_path, command):
    ready = tmp_path / "ready"
    os.mkfifo(ready)
    run = ToolRun("bash", {"command": command}, tmp_path, "c1", tmp_path / "c1.out")
    started = asyncio.Event()
    task = asyncio.create_task(run.run(lambda pid, pgid: started.set()))
    await started.wait()
    await asyncio.to_thread(ready.read_bytes)
    hidden = [int((tmp_path / "a.pid").read_text())]
    try:
        assert alive(hidden) == hidden
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        result = await run.abort()
        assert result.aborted and alive(hidden + [run.proc.pid]) == []
    finally:
        kill_pids(alive(hidden))  # (a zombie's wait would only cost time)
