"""Containment of one task run: everything the run started is found and ended.

Why: the harness ends the processes it learned of (``procs.py``), but an agent's tools and
the daemons an agent starts (Codex's TUI starts ``codex app-server``) can double-fork, leave
the session, reparent to pid 1 and ignore SIGTERM. No PID the harness holds leads to them,
and they outlive the run. A containment is a boundary drawn around the run *before* the
agent starts, so whatever it forks is inside:

- ``cgroup-v2``: a cgroup of the run's own in a writable cgroup2 hierarchy. The kernel keeps
  the membership, ``cgroup.freeze`` stops forks while the members are killed, and
  ``cgroup.kill`` (where the kernel has it) kills the whole subtree at once.
- ``cgroup-v1``: the same with the v1 ``freezer`` hierarchy (membership and freeze). The v1
  ``pids`` hierarchy adds nothing to that (its membership is the same, and it cannot
  freeze), so it is not used.
- ``env-tag``: no cgroup to be had. Members are the processes whose environment carries the
  run's tag (``STOPBENCH_RUN``), or whose working folder or executable is inside the run
  folder, and their descendants; SIGSTOP stands in for the freezer.

The sweep (tag, folder, descent) runs with the cgroup kinds too: it catches what was started
outside the cgroup, such as the tools of an agent loaded into the harness itself.

Nesting (the suite run as a tool of an agent under test): a run's cgroup is made under the
cgroup this process is in, so an inner run's cgroup is a sub-cgroup of the outer run's and
ends with it. The tag variable keeps the outer tags (``outer:inner``), so an outer sweep finds
the inner run's processes too. This process and its ancestors are never members.

Nothing here reaps: ``waitpid`` belongs to whoever started a process (asyncio, pexpect), so
"gone" means exited, a zombie or not. Waits are on pidfds and on ``cgroup.events``, each
bounded by the budget the caller passes.
"""

from __future__ import annotations

import abc
import math
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

import psutil

from harness.procs import ProcRef

ENV_VAR = "STOPBENCH_RUN"
KINDS = ("cgroup-v2", "cgroup-v1", "env-tag")
TAG = re.compile(r"[A-Za-z0-9_.-]{1,64}")
PROBE_TIMEOUT_S = 30.0  # failsafe: the probe child is a bare interpreter that exits at once
FREEZER_POLL_S = 0.001  # the v1 freezer.state has no change notification, so it is read again
SURVEY_ATTRS = ["ppid", "status", "create_time", "cmdline", "environ", "cwd", "exe"]


class ContainmentError(Exception):
    """No containment could be set up, or its cgroup could not be removed (with what was in the way)."""


class _Unavailable(Exception):
    """This kind of containment cannot be had on this machine; the message says why."""


@dataclass(frozen=True)
class Member:
    """A live process inside the containment, and how it was found.

    ``how``: ``cgroup`` (in the run's cgroup), ``env-tag`` (its environment carries the tag),
    ``cwd`` / ``exe`` (working folder / executable inside the run folder), ``descendant``
    (a child of another member that matched none of those, e.g. one that cleared its
    environment and has not been reparented yet).
    """

    pid: int
    ppid: int
    create_time: float
    cmdline: tuple[str, ...]
    how: str

    @property
    def ref(self) -> ProcRef:
        """The ProcRef (role = how found), for ``procs.kill_all`` / ``leftovers``."""
        return ProcRef(self.pid, self.create_time, self.how)

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "ppid": self.ppid, "create_time": self.create_time,
                "cmdline": list(self.cmdline), "how": self.how}


@dataclass(frozen=True)
class EndReport:
    """What ``end()`` found alive and killed, and what (if anything) outlived the budget.

    ``gone_ns`` is the ``monotonic_ns`` at which the last member was seen gone (the start of
    ``end()`` when there was none), None when something survived.
    """

    kind: str
    found: tuple[Member, ...]
    survivors: tuple[Member, ...]
    gone_ns: int | None

    @property
    def clean(self) -> bool:
        return not self.survivors

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "found": [m.to_json() for m in self.found],
                "survivors": [m.to_json() for m in self.survivors], "gone_ns": self.gone_ns}


class Containment:
    """The boundary of one task run. Open it before the agent starts, add ``env`` to the
    agent's environment, start the agent with ``preexec()``; at the end ``end()``, then ``close()``."""

    def __init__(self, run_root: Path, tag: str, cgroup: _Cgroup | None, why: str):
        self.run_root = Path(os.path.realpath(run_root))
        self.tag = tag
        self.kind = cgroup.kind if cgroup is not None else "env-tag"
        self.cgroup = cgroup.path if cgroup is not None else None  # the run's cgroup directory
        self.why = why
        self._cgroup = cgroup
        outer = [t for t in os.environ.get(ENV_VAR, "").split(":") if t]
        self.env = {ENV_VAR: ":".join([*outer, tag])}
        self._closed = False

    @classmethod
    def open(cls, run_root: Path, tag: str, *, kinds: Sequence[str] = KINDS) -> Containment:
        """The first of ``kinds`` this machine allows; ``why`` says which and why the others were not.

        ``run_root`` is the run's own folder (HOME, sessions, working folder are inside it);
        ``tag`` names the run (letters, digits, ``_.-``) and must be unique among live runs.
        A cgroup kind is accepted only after a throwaway child has joined the new cgroup and
        seen itself inside, so a hierarchy that looks writable but is not is never chosen.
        """
        if not TAG.fullmatch(tag):
            raise ValueError(f"tag {tag!r}: 1 to 64 letters, digits or _.-")
        root = Path(os.path.realpath(run_root))
        if not root.is_dir() or root == Path(root.anchor) or Path.cwd().is_relative_to(root):
            # the sweep takes every process working inside the run folder: a broad one would take strangers
            raise ValueError(f"run folder {run_root}: must be a folder of the run's own, not / nor around {Path.cwd()}")
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds:
            raise ValueError(f"kinds {list(kinds)!r}: choose from {', '.join(KINDS)}")
        refused: list[str] = []
        for kind in kinds:
            if kind == "env-tag":
                why = "env-tag, because " + "; ".join(refused) if refused else "env-tag, as asked"
                return cls(run_root, tag, None, why)
            try:
                cgroup = _make_cgroup(kind, tag)
            except _Unavailable as exc:
                refused.append(f"{kind}: {exc}")
                continue
            why = f"{kind} at {cgroup.path}" + (f" ({'; '.join(refused)})" if refused else "")
            return cls(run_root, tag, cgroup, why)
        raise ContainmentError("no containment available: " + "; ".join(refused))

    # -- starting processes inside -------------------------------------------------------
    def preexec(self, then: Callable[[], None] | None = None) -> Callable[[], None]:
        """A ``preexec_fn`` (subprocess, asyncio, pexpect) that moves the child into the cgroup,
        then calls ``then`` (e.g. ``procs.reset_signals``).

        It runs in the child after fork and before exec, so the agent is inside before its
        first instruction and nothing it forks can escape by racing the move. A failed move
        raises in the child, and the spawn fails: an agent never runs uncontained by accident.
        """
        cgroup = self._cgroup

        def join_then() -> None:
            if cgroup is not None:
                cgroup.join(os.getpid())
            if then is not None:
                then()

        return join_then

    # -- finding and ending ------------------------------------------------------------------
    def members(self) -> list[Member]:
        """Every live process in the containment (zombies are gone; see the module docstring)."""
        return list(self._survey().values())

    def end(self, budget_s: float = 10.0) -> EndReport:
        """Freeze, SIGKILL every member, thaw, and wait (on pidfds) until all are gone.

        In rounds: a round holds every member it can find (freezer, and SIGSTOP for each, so
        none forks between the survey and the kill), kills them, and waits for their exits;
        the next round's survey must find nobody, or it ends what it found. It stops when a
        survey is empty or the budget is spent; what is still alive then is a survivor.
        """
        deadline = time.monotonic() + budget_s
        cgroup = None if self._closed else self._cgroup
        found: dict[tuple[int, float], Member] = {}
        gone_ns: int | None = time.monotonic_ns()
        while True:
            held: dict[Member, int] = {}
            try:
                if cgroup is not None:
                    cgroup.freeze(time.monotonic() + max(0.0, deadline - time.monotonic()) / 2)
                try:
                    self._hold(held, deadline)
                    for fd in held.values():
                        _send(fd, signal.SIGKILL)
                    if held and cgroup is not None:
                        cgroup.kill()
                finally:
                    if cgroup is not None:
                        cgroup.thaw()
                if not held:
                    break
                found.update(((m.pid, m.create_time), m) for m in held)
                gone_ns = _wait_exits(list(held.values()), deadline)
            finally:
                for fd in held.values():
                    os.close(fd)
            if gone_ns is None or time.monotonic() >= deadline:
                break
        survivors = [m for m in found.values() if m.ref.alive()]
        if time.monotonic() >= deadline:  # the last survey may not have been empty
            survivors += [m for m in self.members() if (m.pid, m.create_time) not in found]
        return EndReport(kind=self.kind, found=tuple(found.values()), survivors=tuple(survivors),
                         gone_ns=None if survivors else gone_ns or time.monotonic_ns())

    def close(self) -> None:
        """Remove the run's cgroup (and any sub-cgroups a nested run left). Idempotent.

        ContainmentError if a process is still inside: ``end()`` first.
        """
        if self._closed:
            return
        if self._cgroup is not None:
            self._cgroup.remove()
        self._closed = True

    def __enter__(self) -> Containment:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """End everything and remove the cgroup; a survivor is an error (nothing may outlive a run)."""
        report = self.end()
        self.close()
        if report.survivors:
            raise ContainmentError(f"survived SIGKILL: {[m.to_json() for m in report.survivors]}")

    def __repr__(self) -> str:
        return f"<Containment {self.tag} {self.why}>"

    # -- internals -------------------------------------------------------------------------
    def _survey(self) -> dict[int, Member]:
        """One pass over the process table: who is in, and how."""
        in_cgroup = self._cgroup.pids() if self._cgroup is not None else set()
        me = psutil.Process()
        spared = {me.pid, *(p.pid for p in me.parents())}
        infos: dict[int, dict[str, Any]] = {}
        members: dict[int, Member] = {}
        for proc in psutil.process_iter(SURVEY_ATTRS, ad_value=None):
            info = proc.info
            if proc.pid in spared or info["status"] == psutil.STATUS_ZOMBIE or info["create_time"] is None:
                continue
            infos[proc.pid] = info
            how = self._how(proc.pid, info, in_cgroup)
            if how is not None:
                members[proc.pid] = _member(proc.pid, info, how)
        children: dict[int, list[int]] = {}
        for pid, info in infos.items():
            children.setdefault(info["ppid"], []).append(pid)
        queue = list(members)
        while queue:
            for child in children.get(queue.pop(), []):
                if child not in members:
                    members[child] = _member(child, infos[child], "descendant")
                    queue.append(child)
        return members

    def _how(self, pid: int, info: dict[str, Any], in_cgroup: set[int]) -> str | None:
        if pid in in_cgroup:
            return "cgroup"
        if self.tag in (info["environ"] or {}).get(ENV_VAR, "").split(":"):
            return "env-tag"
        for how in ("cwd", "exe"):
            if info[how] and Path(info[how]).is_relative_to(self.run_root):
                return how
        return None

    def _hold(self, held: dict[Member, int], deadline: float) -> None:
        """Add every member to ``held`` with a pidfd, stopped, until a survey finds nobody new.

        A pidfd names the process itself, not its PID, so the kill cannot hit a process that
        took over a PID freed in between; it is opened first and the start time checked after.
        SIGSTOP holds what is outside a frozen cgroup (and is harmless inside one).
        """
        while True:
            keys = {(m.pid, m.create_time) for m in held}
            fresh = [m for m in self._survey().values() if (m.pid, m.create_time) not in keys]
            for m in fresh:
                fd = _pidfd(m)
                if fd is not None:
                    held[m] = fd
                    _send(fd, signal.SIGSTOP)
            if not fresh or time.monotonic() >= deadline:
                return


def _member(pid: int, info: dict[str, Any], how: str) -> Member:
    return Member(pid=pid, ppid=info["ppid"] or 0, create_time=info["create_time"],
                  cmdline=tuple(info["cmdline"] or ()), how=how)


def _pidfd(member: Member) -> int | None:
    """A pidfd for the member, or None when it is gone (or its PID now names another process)."""
    try:
        fd = os.pidfd_open(member.pid)
    except ProcessLookupError:
        return None
    if not member.ref.alive():
        os.close(fd)
        return None
    return fd


def _send(pidfd: int, sig: int) -> None:
    try:
        signal.pidfd_send_signal(pidfd, sig)
    except ProcessLookupError:
        pass


def _wait_exits(pidfds: list[int], deadline: float) -> int | None:
    """The ``monotonic_ns`` once every pidfd reports its process exited; None at the deadline."""
    poller = select.poll()
    for fd in pidfds:
        poller.register(fd, select.POLLIN)
    pending = set(pidfds)
    while pending:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        for fd, _ in poller.poll(math.ceil(remaining * 1000)):
            pending.discard(fd)
            poller.unregister(fd)
    return time.monotonic_ns()


# ---------------------------------------------------------------------------------------
# cgroups


class _Cgroup(abc.ABC):
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
            raise _Unavailable(f"{self.path} has no {', '.join(missing)}")
        code = ("import os, sys\n"
                f"open({self._procs!r}, 'w').write(str(os.getpid()))\n"
                "sys.stdout.write(open('/proc/self/cgroup').read())\n")
        try:
            out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                                 stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise _Unavailable(f"the probe child failed: {exc}") from None
        if out.returncode != 0:
            last = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
            raise _Unavailable(f"a child cannot join {self.path}: {last}")
        if not any(self.names_it(line) for line in out.stdout.splitlines()):
            raise _Unavailable(f"a child that joined {self.path} is not in it "
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


class _CgroupV2(_Cgroup):
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


class _CgroupV1(_Cgroup):
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


def _make_cgroup(kind: str, tag: str) -> _Cgroup:
    """The run's cgroup, made under this process's own cgroup and checked with a probe child."""
    cls: type[_Cgroup] = _CgroupV2 if kind == "cgroup-v2" else _CgroupV1
    parent, rel = _own_cgroup(kind)
    name = f"stopbench-{tag}"
    path = parent / name
    try:
        path.mkdir()
    except OSError as exc:
        raise _Unavailable(f"cannot make {path}: {exc.strerror}") from None
    cgroup = cls(path, rel.rstrip("/") + "/" + name)
    try:
        cgroup.check()
    except _Unavailable:
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
        raise _Unavailable(f"this process is in no {controller or fstype} hierarchy")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        rest = fields[fields.index("-") + 1:]
        if rest[0] != fstype or (controller and controller not in rest[2].split(",")):
            continue
        root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        inside = os.path.relpath(own, root)
        if inside != ".." and not inside.startswith("../"):
            return Path(os.path.normpath(Path(mount_point) / inside)), own
    raise _Unavailable(f"no {controller or fstype} hierarchy is mounted where this process's cgroup {own} shows")


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)
