"""The cgroup kinds of containment: the run's own directory in a cgroup2 hierarchy or the v1 freezer's.

A kind is accepted only after a throwaway child has joined the new cgroup and seen itself
inside, so a hierarchy that looks writable but is not is never chosen. The directory is made
under this process's own cgroup, so a nested run's cgroup is a sub-cgroup of the outer run's
and ends with it.
"""

from __future__ import annotations

import abc
import math
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

PROBE_TIMEOUT_S = 30.0  # failsafe: the probe child is a bare interpreter that exits at once
FREEZER_POLL_S = 0.001  # the v1 freezer.state has no change notification, so it is read again


class ContainmentError(Exception):
    """No containment could be set up, or its cgroup could not be removed (with what was in the way)."""


class Unavailable(Exception):
    """This kind of containment cannot be had on this machine; the message says why."""


class Cgroup(abc.ABC):
    """The run's directory in one cgroup hierarchy (with the sub-cgroups of nested runs)."""

    kind: ClassVar[str]
    required: ClassVar[tuple[str, ...]]

    def __init__(self, path: Path, rel: str):
        self.path = path
        self.rel = rel  # the path as /proc/<pid>/cgroup names it
        self._procs = str(path / "cgroup.procs")

    def check(self) -> None:
        """The files this kind needs exist, and a child can join and then finds itself inside."""
        missing = [f for f in self.required if not (self.path / f).exists()]
        if missing:
            raise Unavailable(f"{self.path} has no {', '.join(missing)}")
        code = ("import os, sys\n"
                f"open({self._procs!r}, 'w').write(str(os.getpid()))\n"
                "sys.stdout.write(open('/proc/self/cgroup').read())\n")
        try:
            out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                                 stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Unavailable(f"the probe child failed: {exc}") from None
        if out.returncode != 0:
            last = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
            raise Unavailable(f"a child cannot join {self.path}: {last}")
        if not any(self.names_it(line) for line in out.stdout.splitlines()):
            raise Unavailable(f"a child that joined {self.path} is not in it "
                              f"(its /proc/self/cgroup: {out.stdout.strip()!r})")

    @abc.abstractmethod
    def names_it(self, line: str) -> bool:
        """Whether a line of /proc/<pid>/cgroup places the process in this cgroup."""

    @abc.abstractmethod
    def freeze(self, deadline: float) -> None:
        """Freeze the subtree; return once frozen or at the deadline (SIGSTOP covers the rest)."""

    @abc.abstractmethod
    def thaw(self) -> None:
        """Thaw the subtree, sub-cgroups included (a nested run may have frozen its own)."""

    @abc.abstractmethod
    def kill(self) -> None:
        """Kill the whole subtree at once where the kernel can (members are signalled one by one anyway)."""

    def join(self, pid: int) -> None:
        """Move ``pid`` in. Plain os calls: this runs in a forked child before exec."""
        fd = os.open(self._procs, os.O_WRONLY)
        try:
            os.write(fd, str(pid).encode())
        finally:
            os.close(fd)

    def dirs(self, top_down: bool = True) -> list[Path]:
        return [Path(root) for root, _, _ in os.walk(self.path, topdown=top_down)]

    def pids(self) -> set[int]:
        """Every process in the run's cgroup and its sub-cgroups (none once it is removed)."""
        found: set[int] = set()
        for d in self.dirs():
            try:
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except FileNotFoundError:  # a nested run removed its sub-cgroup meanwhile
                continue
        return found

    def remove(self) -> None:
        """Remove the directory, sub-cgroups first; ContainmentError while a process is inside."""
        for d in self.dirs(top_down=False):
            try:
                d.rmdir()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise ContainmentError(f"cannot remove {d} ({exc.strerror}); still inside: "
                                       f"{sorted(self.pids())}") from None

    @staticmethod
    def write(path: Path, value: str) -> None:
        try:
            path.write_text(value)
        except FileNotFoundError:  # a nested run removed its sub-cgroup meanwhile
            pass


class CgroupV2(Cgroup):
    """cgroup2: freeze and wait on ``cgroup.events`` (kernfs signals each change), ``cgroup.kill``."""

    kind = "cgroup-v2"
    required = ("cgroup.procs", "cgroup.freeze", "cgroup.events")

    def names_it(self, line: str) -> bool:
        return line == f"0::{self.rel}"

    def freeze(self, deadline: float) -> None:
        self.write(self.path / "cgroup.freeze", "1")
        fd = os.open(self.path / "cgroup.events", os.O_RDONLY)
        try:
            poller = select.poll()
            poller.register(fd, select.POLLPRI)
            while b"frozen 1" not in os.pread(fd, 4096, 0):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                poller.poll(math.ceil(remaining * 1000))
        finally:
            os.close(fd)

    def kill(self) -> None:
        if (self.path / "cgroup.kill").exists():
            self.write(self.path / "cgroup.kill", "1")

    def thaw(self) -> None:
        for d in self.dirs():
            self.write(d / "cgroup.freeze", "0")


class CgroupV1(Cgroup):
    """The v1 freezer: ``freezer.state`` reads FREEZING until every member is frozen."""

    kind = "cgroup-v1"
    required = ("cgroup.procs", "freezer.state")

    def names_it(self, line: str) -> bool:
        _, controllers, path = line.split(":", 2)
        return "freezer" in controllers.split(",") and path == self.rel

    def freeze(self, deadline: float) -> None:
        state = self.path / "freezer.state"
        self.write(state, "FROZEN")
        while state.read_text().strip() != "FROZEN" and time.monotonic() < deadline:
            time.sleep(FREEZER_POLL_S)

    def kill(self) -> None:
        """v1 has no ``cgroup.kill``: the members, frozen, are signalled one by one."""

    def thaw(self) -> None:
        for d in self.dirs():  # a frozen sub-cgroup stays frozen when only its parent thaws
            self.write(d / "freezer.state", "THAWED")


def make_cgroup(kind: str, tag: str) -> Cgroup:
    """The run's cgroup, made under this process's own cgroup and checked with a probe child."""
    cls: type[Cgroup] = CgroupV2 if kind == "cgroup-v2" else CgroupV1
    parent, rel = _own_cgroup(kind)
    name = f"stopbench-{tag}"
    path = parent / name
    try:
        path.mkdir()
    except OSError as exc:
        raise Unavailable(f"cannot make {path}: {exc.strerror}") from None
    cgroup = cls(path, rel.rstrip("/") + "/" + name)
    try:
        cgroup.check()
    except Unavailable:
        path.rmdir()
        raise
    return cgroup


def _own_cgroup(kind: str) -> tuple[Path, str]:
    """This process's cgroup in the hierarchy of ``kind``: its directory and its path as
    ``/proc/self/cgroup`` names it. The mount may show a subtree only (its root field)."""
    fstype, controller = ("cgroup2", "") if kind == "cgroup-v2" else ("cgroup", "freezer")
    own = None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        if (controller in controllers.split(",")) if controller else (number == "0" and not controllers):
            own = path
    if own is None:
        raise Unavailable(f"this process is in no {controller or fstype} hierarchy")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        rest = fields[fields.index("-") + 1:]
        if rest[0] != fstype or (controller and controller not in rest[2].split(",")):
            continue
        root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        inside = os.path.relpath(own, root)
        if inside != ".." and not inside.startswith("../"):
            return Path(os.path.normpath(Path(mount_point) / inside)), own
    raise Unavailable(f"no {controller or fstype} hierarchy is mounted where this process's cgroup {own} shows")


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)
