"""Containment of a task run: a daemon that double-forks, leaves the session, reparents and
ignores SIGTERM is found and ended, under each kind this machine offers."""

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import psutil
import pytest

from harness.containment import ENV_VAR, KINDS, Containment, ContainmentError, Member
from harness.containment import cgroup as containment_module
from harness.containment.boundary import _pidfd
from harness.containment.procs import ProcRef, kill_all, reset_signals

LIFETIME_S = 300  # failsafe: a helper that was never ended still exits on its own

# The daemon proper: ignores SIGTERM, then reports its PID on the fd it was handed.
DAEMON = f"""
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
fd = int(sys.argv[1])
os.write(fd, str(os.getpid()).encode())
os.close(fd)
time.sleep({LIFETIME_S})
"""

# An agent that starts a daemon the classic way: fork, setsid, fork again, the middle exits
# and is reaped, so the daemon is an orphan in a session of its own. ``keep`` keeps the
# environment and folder; ``clean-env`` execs it with an empty environment; ``clean-all``
# also moves it to / (no tag, no folder: only a cgroup still holds it). Prints "daemon PID"
# once the daemon is orphaned and ignores SIGTERM.
AGENT = f"""
import os, sys, time
mode, daemon = sys.argv[1], sys.argv[2]
r, w = os.pipe()
middle = os.fork()
if middle == 0:
    os.setsid()
    if os.fork() == 0:
        os.close(r)
        os.set_inheritable(w, True)
        if mode == "clean-all":
            os.chdir("/")
        env = dict(os.environ) if mode == "keep" else {{}}
        os.execve(sys.executable, [sys.executable, "-S", "-c", daemon, str(w)], env)
    os._exit(0)
os.close(w)
os.waitpid(middle, 0)
pid = int(os.read(r, 32))
print("daemon", pid, flush=True)
time.sleep({LIFETIME_S})
"""

# A harness run inside a contained agent: it opens its own containment and starts the
# daemonizing agent in it, then prints what it made.
INNER = """
import json, os, subprocess, sys, time
from pathlib import Path
from harness.containment import Containment
from harness.containment.procs import reset_signals
root, kind, tag, agent, daemon, mode = sys.argv[1:7]
inner = Containment.open(Path(root), tag, kinds=(kind,))
proc = subprocess.Popen([sys.executable, "-c", agent, mode, daemon], env={**os.environ, **inner.env}, cwd=root,
                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True,
                        preexec_fn=inner.preexec(reset_signals))
pid = int(proc.stdout.readline().split()[1])
print(json.dumps({"cgroup": inner.cgroup and str(inner.cgroup), "env": inner.env, "agent": proc.pid,
                  "daemon": pid}), flush=True)
time.sleep(int(sys.argv[7]))
"""

CGROUP_KINDS = [k for k in KINDS if k != "env-tag"]


def new_tag() -> str:
    return f"test-{secrets.token_hex(6)}"


def open_kind(run_root: Path, kind: str) -> Containment:
    """The containment of ``kind``, or a skip saying why this machine has none."""
    try:
        return Containment.open(run_root, new_tag(), kinds=(kind,))
    except ContainmentError as exc:
        pytest.skip(str(exc))


@pytest.fixture
def run_root(tmp_path: Path) -> Path:
    root = tmp_path / "run"
    (root / "work").mkdir(parents=True)
    return root


@pytest.fixture
def started() -> Iterator[list[ProcRef]]:
    """Every helper process a test learns of, ended by PID at teardown whatever the containment
    did: a test of a broken containment must not leave its daemon behind."""
    refs: list[ProcRef] = []
    yield refs
    assert kill_all(refs) == []


@pytest.fixture(params=KINDS)
def contained(request: pytest.FixtureRequest, run_root: Path):
    """A containment of each kind; at teardown everything in it is ended and its cgroup removed."""
    c = open_kind(run_root, request.param)
    assert c.kind == request.param
    yield c
    report = c.end(budget_s=30)
    c.close()
    assert report.clean, report.to_json()
    assert c.cgroup is None or not c.cgroup.exists()


async def start_agent(c: Containment, mode: str, cwd: Path,
                      started: list[ProcRef]) -> tuple[asyncio.subprocess.Process, int]:
    """The daemonizing agent started the way the headless driver starts an agent; (agent, daemon PID)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", AGENT, mode, DAEMON, env={**os.environ, **c.env}, cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, start_new_session=True,
        preexec_fn=c.preexec(reset_signals),
    )
    started.append(ProcRef.of(proc.pid))
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert line.startswith(b"daemon "), line
    started.append(ProcRef.of(int(line.split()[1])))
    return proc, int(line.split()[1])


def assert_daemonized(daemon: int, agent: int) -> int:
    """The daemon really is one: not the agent's child, not in its session, SIGTERM ignored. Its ppid."""
    p = psutil.Process(daemon)
    assert p.ppid() != agent and os.getsid(daemon) != os.getsid(agent)
    ignored = int(next(x for x in Path(f"/proc/{daemon}/status").read_text().splitlines()
                       if x.startswith("SigIgn:")).split()[1], 16)
    assert ignored & (1 << (signal.SIGTERM - 1))
    return p.ppid()


def by_pid(members, pid: int) -> Member:
    (member,) = [m for m in members if m.pid == pid]
    return member


async def test_a_daemon_is_found_and_ended(contained: Containment, run_root: Path, started: list[ProcRef]):
    # Under a cgroup the daemon leaves with no tag and no folder: the cgroup alone holds it.
    mode, how = ("keep", "env-tag") if contained.kind == "env-tag" else ("clean-all", "cgroup")
    proc, daemon = await start_agent(contained, mode, run_root / "work", started)
    ppid = assert_daemonized(daemon, proc.pid)
    assert by_pid(contained.members(), daemon).how == how

    report = await asyncio.to_thread(contained.end, 30)

    assert report.clean and report.gone_ns is not None and report.kind == contained.kind
    found = by_pid(report.found, daemon)
    assert (found.how, found.ppid) == (how, ppid) and "-c" in found.cmdline
    assert by_pid(report.found, proc.pid).how == how
    assert not ProcRef(daemon, found.create_time).alive()
    assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGKILL  # reaped by its owner, not stolen
    assert contained.members() == []


@pytest.mark.parametrize("mode, how", [("clean-env", "cwd"), ("clean-all", None)])
async def test_env_tag_finds_a_daemon_that_cleared_its_environment_by_its_folder(run_root: Path, started, mode, how):
    """Without a cgroup, a daemon with no tag is found only while it works in the run folder."""
    with Containment.open(run_root, new_tag(), kinds=("env-tag",)) as c:
        proc, daemon = await start_agent(c, mode, run_root / "work", started)
        assert_daemonized(daemon, proc.pid)
        assert [m.how for m in c.members() if m.pid == daemon] == ([how] if how else [])
        if how is None:  # the sweep cannot see it: end it by PID (it holds the agent's stdout open)
            os.kill(daemon, signal.SIGKILL)
    assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGKILL


async def test_env_tag_finds_an_untagged_child_of_a_member_by_descent(run_root: Path, tmp_path: Path, started):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    script = (f"import subprocess, sys, time; c = subprocess.Popen(['sleep', '{LIFETIME_S}'], env={{}}, "
              f"cwd={str(outside)!r}); print(c.pid, flush=True); time.sleep({LIFETIME_S})")
    with Containment.open(run_root, new_tag(), kinds=("env-tag",)) as c:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, env={**os.environ, **c.env}, cwd=str(outside),
            stdout=asyncio.subprocess.PIPE, start_new_session=True)
        started.append(ProcRef.of(proc.pid))
        assert proc.stdout is not None
        child = int(await asyncio.wait_for(proc.stdout.readline(), 30))
        started.append(ProcRef.of(child))
        members = c.members()
        assert (by_pid(members, proc.pid).how, by_pid(members, child).how) == ("env-tag", "descendant")
        report = await asyncio.to_thread(c.end, 30)
        assert {m.pid for m in report.found} == {proc.pid, child} and report.clean
    assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGKILL


@pytest.mark.parametrize("kind", CGROUP_KINDS)
def test_preexec_puts_the_child_in_before_exec(run_root: Path, tmp_path: Path, kind: str):
    """``cat /proc/self/cgroup`` reads its cgroup as its first act: it was inside at exec. ``then``
    runs in the child after the move."""
    seen = tmp_path / "then-saw"
    with open_kind(run_root, kind) as c:
        def then() -> None:
            seen.write_text(Path("/proc/self/cgroup").read_text())

        out = subprocess.run(["cat", "/proc/self/cgroup"], preexec_fn=c.preexec(then), capture_output=True,
                             text=True, timeout=30, check=True).stdout
        assert in_run_cgroup(out, c) and in_run_cgroup(seen.read_text(), c)


@pytest.mark.parametrize("kind", CGROUP_KINDS)
def test_preexec_works_in_a_pseudo_terminal(run_root: Path, kind: str):
    """The terminal driver's path: pexpect forks the child, which joins before exec."""
    with open_kind(run_root, kind) as c:
        child = pexpect.spawn("cat", ["/proc/self/cgroup"], preexec_fn=c.preexec(reset_signals), timeout=30,
                              encoding="utf-8")
        try:
            out = child.read()
        finally:
            child.close(force=True)
        assert in_run_cgroup(out.replace("\r\n", "\n"), c)


def in_run_cgroup(proc_cgroup: str, c: Containment) -> bool:
    """Whether a /proc/<pid>/cgroup text places the process in ``c``'s cgroup."""
    for line in proc_cgroup.splitlines():
        number, controllers, path = line.split(":", 2)
        right = number == "0" if c.kind == "cgroup-v2" else "freezer" in controllers.split(",")
        if right and path.endswith(f"/stopbench-{c.tag}"):
            return True
    return False


@pytest.mark.parametrize("kind", CGROUP_KINDS)
def test_a_failed_move_fails_the_spawn(run_root: Path, kind: str):
    """Once the cgroup is gone a child cannot join it, and the spawn fails instead of running uncontained."""
    c = open_kind(run_root, kind)
    c.close()
    c.close()  # idempotent
    with pytest.raises(subprocess.SubprocessError):
        subprocess.run(["true"], preexec_fn=c.preexec(), timeout=30)


@pytest.mark.parametrize("kind", CGROUP_KINDS)
def test_close_refuses_while_a_process_is_inside(run_root: Path, kind: str):
    c = open_kind(run_root, kind)
    proc = subprocess.Popen([sys.executable, "-c", f"print(flush=True); import time; time.sleep({LIFETIME_S})"],
                            stdout=subprocess.PIPE, preexec_fn=c.preexec())
    assert proc.stdout is not None and c.cgroup is not None
    try:
        proc.stdout.readline()
        with pytest.raises(ContainmentError, match=str(proc.pid)):
            c.close()
        assert c.end(budget_s=30).clean
        assert proc.wait(timeout=30) == -signal.SIGKILL
        c.close()
        assert not c.cgroup.exists()
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        c.end(budget_s=30)
        c.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_nested_run_is_contained_by_the_outer_one(run_root: Path, tmp_path: Path, started, kind: str):
    """A harness run inside a contained agent: its cgroup is a sub-cgroup of the outer one, its tag
    carries the outer tag, and ending the outer run ends the inner harness, agent and daemon."""
    inner_root, elsewhere = tmp_path / "inner", tmp_path / "elsewhere"
    inner_root.mkdir()
    elsewhere.mkdir()
    mode, how = ("keep", "env-tag") if kind == "env-tag" else ("clean-all", "cgroup")
    outer = open_kind(run_root, kind)
    inner_tag = new_tag()
    try:
        harness = await asyncio.create_subprocess_exec(
            sys.executable, "-c", INNER, str(inner_root), kind, inner_tag, AGENT, DAEMON, mode, str(LIFETIME_S),
            env={**os.environ, **outer.env}, cwd=str(elsewhere), stdout=asyncio.subprocess.PIPE,
            start_new_session=True, preexec_fn=outer.preexec(reset_signals))
        started.append(ProcRef.of(harness.pid))
        assert harness.stdout is not None
        made = json.loads(await asyncio.wait_for(harness.stdout.readline(), 60))
        started.extend(ProcRef.of(made[k]) for k in ("agent", "daemon"))
        assert made["env"][ENV_VAR] == f"{outer.env[ENV_VAR]}:{inner_tag}"
        if outer.cgroup is not None:
            assert Path(made["cgroup"]).parent == outer.cgroup

        report = await asyncio.to_thread(outer.end, 30)

        assert report.clean
        assert {by_pid(report.found, p).how for p in (harness.pid, made["agent"], made["daemon"])} == {how}
        assert await asyncio.wait_for(harness.wait(), 30) == -signal.SIGKILL
        outer.close()  # removes the sub-cgroup the killed inner run could not
        assert made["cgroup"] is None or not Path(made["cgroup"]).exists()
    finally:
        outer.end(budget_s=30)
        outer.close()


@pytest.mark.parametrize("own, refusal", [
    (lambda tmp: (Path("/proc"), "/"), "cannot make /proc/stopbench-"),
    (lambda tmp: (tmp, "/"), "has no cgroup.procs"),  # an ordinary folder, not a cgroup
])
def test_an_unusable_hierarchy_falls_back_and_says_why(run_root, tmp_path, monkeypatch, own, refusal):
    monkeypatch.setattr(containment_module, "_own_cgroup", lambda kind: own(tmp_path))
    c = Containment.open(run_root, new_tag(), kinds=("cgroup-v2", "env-tag"))
    assert (c.kind, c.cgroup) == ("env-tag", None)
    assert c.why.startswith("env-tag, because cgroup-v2: ") and refusal in c.why
    assert not list(tmp_path.glob("stopbench-*"))  # a refused cgroup folder is removed
    with pytest.raises(ContainmentError, match="no containment available: cgroup-v1: "):
        Containment.open(run_root, new_tag(), kinds=("cgroup-v1",))


def test_the_default_is_the_first_kind_the_machine_allows(run_root: Path):
    with Containment.open(run_root, new_tag()) as c:
        assert c.kind in KINDS and c.why.startswith(c.kind)
        assert c.env == {ENV_VAR: ":".join(filter(None, [os.environ.get(ENV_VAR), c.tag]))}
        report = c.end(budget_s=30)
        assert (report.found, report.survivors) == ((), ()) and report.gone_ns is not None


def test_open_refuses_a_bad_tag_a_broad_folder_and_an_unknown_kind(run_root: Path):
    for tag in ("", "a:b", "a/b", "x" * 65):
        with pytest.raises(ValueError, match="tag"):
            Containment.open(run_root, tag)
    for root in (Path("/"), Path.cwd().parent, run_root / "missing"):
        with pytest.raises(ValueError, match="run folder"):
            Containment.open(root, new_tag())
    with pytest.raises(ValueError, match="kinds"):
        Containment.open(run_root, new_tag(), kinds=("docker",))


def test_a_process_gone_or_a_pid_taken_over_gets_no_signal():
    """The races of a sweep: a member may exit before it is held, or its PID may name another
    process by then; neither is signalled."""
    proc = subprocess.Popen(["sleep", str(LIFETIME_S)])
    try:
        ref = ProcRef.of(proc.pid)
        member = Member(proc.pid, os.getpid(), ref.create_time, ("sleep",), "cwd")
        impostor = Member(proc.pid, os.getpid(), ref.create_time - 1000, ("sleep",), "cwd")
        assert _pidfd(impostor) is None
        fd = _pidfd(member)
        assert fd is not None
        os.close(fd)
    finally:
        proc.kill()
        proc.wait()
    assert _pidfd(member) is None


def test_a_process_that_outlives_the_budget_is_reported_as_a_survivor(run_root: Path, tmp_path: Path):
    """A member frozen in a v1 freezer of its own cannot act on SIGKILL until thawed: ``end()``
    keeps to its budget and names it; thawed, it dies."""
    (tmp_path / "jail").mkdir()
    jail = open_kind(tmp_path / "jail", "cgroup-v1")
    c = Containment.open(run_root, new_tag(), kinds=("env-tag",))
    assert jail.cgroup is not None
    proc = subprocess.Popen([sys.executable, "-c", f"print(flush=True); import time; time.sleep({LIFETIME_S})"],
                            env={**os.environ, **c.env}, stdout=subprocess.PIPE, preexec_fn=jail.preexec())
    assert proc.stdout is not None
    try:
        proc.stdout.readline()
        state = jail.cgroup / "freezer.state"
        state.write_text("FROZEN")
        while state.read_text().strip() != "FROZEN":  # failsafe: the test timeout
            pass
        t0 = time.monotonic()
        report = c.end(budget_s=0.5)
        assert time.monotonic() - t0 < 5  # the budget, not the process, decided when end() returned
        assert [(m.pid, m.how) for m in report.survivors] == [(proc.pid, "env-tag")]
        assert not report.clean and report.gone_ns is None
        state.write_text("THAWED")
        assert proc.wait(timeout=30) == -signal.SIGKILL  # the kill end() sent, acted on once thawed
    finally:
        (jail.cgroup / "freezer.state").write_text("THAWED")
        proc.kill()
        proc.wait()
        proc.stdout.close()
        jail.end(budget_s=30)
        jail.close()
