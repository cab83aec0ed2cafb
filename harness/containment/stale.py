"""What dead runs left: their cgroups (frozen ones too), their run folders, their agents' processes,
their network namespaces.

Why: a harness that is SIGKILLed (or loses its terminal before it could clean up) leaves its
task runs as they were: the run's cgroup with a non-cooperative agent still in it (frozen, if
another run was timing something), the agent's processes, the run folder. Nothing else will
end them. So every run is named after its owner — the harness process, by PID *and* start
time (``owner_tag``) — in its tag (hence its cgroup's name and the ``STOPBENCH_RUN`` its
processes carry) and its run folder's name, and ``sweep`` ends and removes what belongs to
runs whose owner is gone, and only those: a live harness's runs (a nested one, one in another
terminal) are never touched, nor anything not named that way.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from harness.containment.cgroup import Cgroup, CgroupV1, CgroupV2, Unavailable, _own_cgroup
from harness.containment.sweep import ENV_VAR

OWNED = re.compile(r"o(?P<pid>\d+)-(?P<ticks>\d+)-[0-9a-f]+")
CGROUP_PREFIX = "stopbench-"  # harness.containment.cgroup.make_cgroup names a run's cgroup so
FOLDER_PREFIX = "stopbench-"  # harness.run.rundir.RunDirs.create names a run folder so
NETNS_PREFIX = "stopbench-"  # harness.offline.netns.Netns.open names a run's network namespace so
NETNS_DIR = Path("/run/netns")  # where ``ip netns`` keeps the named namespaces
EMPTY_WAIT_S = 10.0  # failsafe: SIGKILLed members leave their cgroup within milliseconds
POLL_S = 0.005
IP_BUDGET_S = 10.0  # failsafe: ``ip netns del`` takes milliseconds


def start_ticks(pid: int) -> int | None:
    """``pid``'s start time in clock ticks since boot (field 22 of /proc/<pid>/stat): with the
    PID, it names one process for the machine's uptime. None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2:].split()[19])


def owner_tag() -> str:
    """A new run tag naming this process as its owner: ``o<pid>-<start ticks>-<random>``."""
    pid = os.getpid()
    return f"o{pid}-{start_ticks(pid)}-{os.urandom(6).hex()}"


def owner_gone(name: str) -> bool:
    """Whether ``name`` (a tag, or a folder name's rest) names an owner that no longer runs.
    A name without an owner is never gone: nothing proves it dead."""
    match = OWNED.match(name)
    if match is None:
        return False
    pid, ticks = int(match["pid"]), int(match["ticks"])
    return start_ticks(pid) != ticks


@dataclass
class StaleReport:
    """What ``sweep`` found of dead runs and ended or removed."""

    cgroups: list[str] = field(default_factory=list)
    frozen: list[str] = field(default_factory=list)  # of ``cgroups``, those found frozen
    folders: list[str] = field(default_factory=list)
    processes: list[dict[str, Any]] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)  # network namespaces removed
    problems: list[str] = field(default_factory=list)  # what could not be removed, and why

    def __bool__(self) -> bool:
        return bool(self.cgroups or self.folders or self.processes or self.namespaces or self.problems)

    def to_json(self) -> dict[str, Any]:
        return {"cgroups": self.cgroups, "frozen": self.frozen, "folders": self.folders,
                "processes": self.processes, "namespaces": self.namespaces, "problems": self.problems}

    def summary(self) -> str:
        parts = [f"{len(self.cgroups)} cgroup(s) ({len(self.frozen)} frozen)", f"{len(self.folders)} run folder(s)",
                 f"{len(self.processes)} process(es)", f"{len(self.namespaces)} network namespace(s)"]
        text = "what dead runs left was ended and removed: " + ", ".join(parts)
        return text + ("; not removed: " + "; ".join(self.problems) if self.problems else "")


def sweep(tmp_dir: Path | None = None) -> StaleReport:
    """End and remove what runs whose owner is gone left: their cgroups (under this process's
    own, where this harness makes its runs'), processes carrying their tag, and their run
    folders in ``tmp_dir`` (default: the temporary folder run folders are made in)."""
    report = StaleReport()
    for kind, cls in (("cgroup-v2", CgroupV2), ("cgroup-v1", CgroupV1)):
        try:
            parent, rel = _own_cgroup(kind)
        except (Unavailable, OSError):
            continue
        for path in _children(parent):
            if path.name.startswith(CGROUP_PREFIX) and owner_gone(path.name[len(CGROUP_PREFIX):]):
                _end_cgroup(cls(path, f"{rel.rstrip('/')}/{path.name}"), report)
    folder = tmp_dir or Path(tempfile.gettempdir())
    dead = [path for path in _children(folder)
            if path.name.startswith(FOLDER_PREFIX) and owner_gone(path.name[len(FOLDER_PREFIX):])]
    _end_strays(dead, report)
    for path in dead:
        shutil.rmtree(path, ignore_errors=True)
        (report.problems if path.exists() else report.folders).append(str(path))
    for name in _dead_namespaces():  # after their processes: a namespace lives on while one is in it
        try:
            remove_namespace(name)
        except (OSError, subprocess.SubprocessError) as exc:
            report.problems.append(f"network namespace {name}: {exc}")
            continue
        report.namespaces.append(name)
    return report


def remove_namespace(name: str) -> None:
    """Remove the named network namespace (``ip netns del``); one already gone is fine."""
    if not (NETNS_DIR / name).exists():
        return
    done = subprocess.run(["ip", "netns", "del", name], capture_output=True, text=True, timeout=IP_BUDGET_S)
    if done.returncode != 0:
        raise OSError(f"`ip netns del {name}` failed: {done.stderr.strip()}")


def _dead_namespaces() -> list[str]:
    """The network namespaces of runs whose owner is gone."""
    try:
        names = sorted(os.listdir(NETNS_DIR))
    except OSError:
        return []
    return [n for n in names if n.startswith(NETNS_PREFIX) and owner_gone(n[len(NETNS_PREFIX):])]


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir())
    except OSError:
        return []


def _end_cgroup(cgroup: Cgroup, report: StaleReport) -> None:
    """Kill every process in a dead run's cgroup (frozen or not), then remove it."""
    if _frozen(cgroup):
        report.frozen.append(str(cgroup.path))
    pids = cgroup.pids()
    report.processes += [_describe(pid, "cgroup") for pid in sorted(pids)]
    cgroup.kill()
    for pid in pids:  # v1 has no cgroup.kill; SIGKILL ends a frozen process too once thawed
        _kill(pid)
    cgroup.thaw()
    deadline = time.monotonic() + EMPTY_WAIT_S
    while cgroup.pids() and time.monotonic() < deadline:
        time.sleep(POLL_S)  # the killed are leaving; the cgroup has no wait of its own in v1
    try:
        cgroup.remove()
    except Exception as exc:  # noqa: BLE001 - reported, and tried again by the next sweep
        report.problems.append(str(exc))
        return
    report.cgroups.append(str(cgroup.path))


def _frozen(cgroup: Cgroup) -> bool:
    try:
        if isinstance(cgroup, CgroupV2):
            return "frozen 1" in (cgroup.path / "cgroup.events").read_text().splitlines()
        return (cgroup.path / "freezer.state").read_text().strip() != "THAWED"
    except OSError:
        return False


def _end_strays(dead_folders: list[Path], report: StaleReport) -> None:
    """Kill the processes of dead runs outside any cgroup (env-tag runs, and whatever left a dead
    run's cgroup): those whose ``STOPBENCH_RUN`` names a run whose owner is gone, and those
    working in (or run from) a dead run's folder."""
    me = psutil.Process()
    spared = {me.pid, *(p.pid for p in me.parents())}  # a harness run inside a dead run's agent
    for proc in psutil.process_iter(["environ", "cwd", "exe"], ad_value=None):
        if proc.pid in spared:
            continue
        tags = ((proc.info["environ"] or {}).get(ENV_VAR) or "").split(":")
        how = "env-tag" if any(owner_gone(tag) for tag in tags if tag) else next(
            (key for key in ("cwd", "exe") if proc.info[key]
             and any(Path(proc.info[key]).is_relative_to(d) for d in dead_folders)), None)
        if how is None:
            continue
        report.processes.append(_describe(proc.pid, how))
        try:
            proc.kill()  # psutil checks the PID still names the process it listed
        except psutil.Error:
            continue


def _describe(pid: int, how: str) -> dict[str, Any]:
    try:
        cmdline = psutil.Process(pid).cmdline()
    except psutil.Error:
        cmdline = []
    return {"pid": pid, "cmdline": cmdline, "how": how}


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
