"""A task run contains everything it started: a tool that daemonizes (double fork, its own
session, SIGTERM ignored, reparented to pid 1) is found after the run, ended, and reported
with how it was found — no PID the harness held led to it."""

import asyncio
import sys
import textwrap

import psutil
from tool_task import one_tool_call_task

from harness.model import RunStatus
from harness.profiles import load_profile
from harness.run.planning import WorkItem
from harness.run.runner import run_item
from harness.tasks import load_task

DAEMON = textwrap.dedent("""\
    import os, signal, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.chdir("/")
            time.sleep(300)  # stopbench-daemon-marker
            os._exit(0)
        os._exit(0)
    os.wait()
""")


def test_a_daemonizing_tool_is_ended_and_reported(tmp_path):
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON)
    task_dir = one_tool_call_task(tmp_path, "daemon-tool", f"{sys.executable} {script}",
                                  ask="Start the server.", answer="Started it.")
    work = WorkItem(load_task(task_dir), "subprocess", "http", 1)
    result = asyncio.run(run_item(load_profile("reference"), work)).result
    assert result.status is RunStatus.RAN, result.reason
    contained = result.evidence["containment"]
    daemons = [m for m in contained["outlived"] if "daemon.py" in " ".join(m["cmdline"])]
    assert daemons, contained
    assert all(m["how"] for m in daemons) and contained["kind"] in ("cgroup-v2", "cgroup-v1", "env-tag")
    alive = [p for p in psutil.process_iter(["cmdline"]) if "daemon.py" in " ".join(p.info["cmdline"] or [])
             and str(script) in " ".join(p.info["cmdline"] or [])]
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
