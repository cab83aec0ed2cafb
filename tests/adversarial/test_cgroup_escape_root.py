"""An agent running as root that moves a process out of the run's cgroup — into the
hierarchy's root — is found, ended and reported as an escape, not left or passed over."""

import asyncio
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from containment_testkit import one_tool_call_task

from harness.containment.cgroup import Unavailable, _own_cgroup
from harness.model import RunStatus
from harness.profiles import load_profile
from harness.run.planning import WorkItem
from harness.run.runner import run_item
from harness.tasks import load_task

# A tool that daemonizes and writes its PID into the hierarchy's root cgroup, then lingers. The
# tool returns only once its child has moved (a pipe says so): the escape has happened before the
# run ends, whatever the machine's load.
ESCAPE = textwrap.dedent("""\
    import os, sys, time
    moved_r, moved_w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        with open(sys.argv[1], "w") as f:
            f.write(str(os.getpid()))
        os.write(moved_w, b"moved")
        time.sleep(300)  # stopbench-escapee-marker
        os._exit(0)
    os.read(moved_r, 5)
""")


def hierarchy_root() -> Path:
    """The cgroup2 mount's root cgroup.procs, or a skip saying why there is none to move to."""
    try:
        own, rel = _own_cgroup("cgroup-v2")
    except Unavailable as exc:
        pytest.skip(f"no cgroup2 hierarchy: {exc}")
    depth = len([part for part in rel.split("/") if part])
    root = own.parents[depth - 1] if depth else own
    return root / "cgroup.procs"


def test_a_process_moved_to_the_root_cgroup_is_ended_and_reported(tmp_path: Path):
    procs = hierarchy_root()
    script = tmp_path / "escape.py"
    script.write_text(ESCAPE)
    task_dir = one_tool_call_task(tmp_path, "escape-tool", f"{sys.executable} {script} {procs}")
    result = asyncio.run(run_item(load_profile("reference"), WorkItem(load_task(task_dir), "subprocess", "http", 1),
                                  retries=0)).result
    assert result.status is RunStatus.RAN, result.reason
    contained = result.evidence["containment"]
    if contained["kind"] != "cgroup-v2":
        pytest.skip(f"the run was not held by a cgroup2 cgroup: {contained['why']}")
    escaped = [m for m in contained.get("escaped", []) if str(script) in " ".join(m["cmdline"])]
    assert escaped, contained
    alive = [p for p in psutil.process_iter(["cmdline"]) if str(script) in " ".join(p.info["cmdline"] or [])]
    assert [p for p in alive if p.status() != psutil.STATUS_ZOMBIE] == []


def test_a_started_process_that_moved_itself_out_is_an_escapee(tmp_path: Path):
    """The agent itself (a process the harness started inside the cgroup) moves out, with an
    empty environment and working in /: nothing but its having been started inside names it."""
    import subprocess

    from harness.containment import Containment
    from harness.containment.procs import ProcRef, kill_all
    from harness.containment.stale import owner_tag

    procs = hierarchy_root()
    root = tmp_path / "run"
    (root / "work").mkdir(parents=True)
    containment = Containment.open(root, owner_tag())
    if containment.kind != "cgroup-v2":
        containment.close()
        pytest.skip(f"no cgroup2 containment: {containment.why}")
    code = f"import os, sys, time\nopen({str(procs)!r}, 'w').write(str(os.getpid()))\nprint('out', flush=True)\n" \
           "time.sleep(300)"
    agent = subprocess.Popen([sys.executable, "-c", code], env={}, cwd="/", stdout=subprocess.PIPE,
                             preexec_fn=containment.preexec(), start_new_session=True)
    try:
        assert agent.stdout is not None and agent.stdout.readline() == b"out\n"
        ref = ProcRef.of(agent.pid)
        assert [m.pid for m in containment.escapees([ref])] == [agent.pid]
        assert containment.escapees([ref])[0].how == "escaped"
    finally:
        kill_all([ProcRef.of(agent.pid)])
        agent.wait()
        containment.end()
        containment.close()
