"""The boundary of one task run: opened before the agent starts, ended and removed after it.

``Containment.open`` takes the first kind this machine allows; ``end()`` ends every member in
rounds that hold them first (freezer and SIGSTOP) so none forks between the survey and the
kill, signalling through pidfds so a PID freed and taken over in between is never hit.
"""

from __future__ import annotations

import math
import os
import re
import select
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil

from harness.containment.cgroup import Cgroup, ContainmentError, Unavailable, make_cgroup
from harness.containment.procs import ProcRef
from harness.containment.sweep import ENV_VAR, Member, survey

KINDS = ("cgroup-v2", "cgroup-v1", "env-tag")
TAG = re.compile(r"[A-Za-z0-9_.-]{1,64}")


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

    def __init__(self, run_root: Path, tag: str, cgroup: Cgroup | None, why: str):
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
                cgroup = make_cgroup(kind, tag)
            except Unavailable as exc:
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

    # -- pausing (harness.timing.alone) ------------------------------------------------------------
    def pause(self, deadline: float) -> bool:
        """Freeze every process of the run: they neither run nor notice. False where this
        kind cannot (env-tag: no freezer), or once the run's cgroup is gone."""
        if self._cgroup is None or self._closed:
            return False
        self._cgroup.freeze(deadline)
        return True

    def resume(self) -> None:
        if self._cgroup is not None and not self._closed:
            self._cgroup.thaw()

    # -- finding and ending ------------------------------------------------------------------
    def members(self) -> list[Member]:
        """Every live process in the containment (zombies are gone; see the package docstring)."""
        return list(self._survey().values())

    def strangers(self, refs: Sequence[ProcRef]) -> list[ProcRef]:
        """Those of ``refs`` alive and *not* the run's (no member has that PID and start time).

        What shows a process to be the run's is the containment (its cgroup, its tag, its
        folder, descent from a member), never what a record says: a record naming a stranger
        is forged, and the harness must not end the process it names. The harness itself and
        its ancestors are never members, so they are always strangers."""
        if not refs:
            return []
        members = self._survey()
        out = []
        for ref in refs:
            if not ref.alive():
                continue
            member = members.get(ref.pid)
            if member is None or ref.create_time is None or abs(member.create_time - ref.create_time) > 0.01:
                out.append(ref)
        return out

    def escapees(self, started: Sequence[ProcRef] = ()) -> list[Member]:
        """The run's processes that have left its cgroup (a root agent can write its PID into
        any cgroup, the hierarchy's root included): members found by their tag, folder or
        descent but outside the cgroup, and processes the harness started inside it
        (``started``) now outside. Those the harness started itself outside the cgroup (the
        tools of an in-process agent: descendants of this process, not of ``started``) are
        not escapees. Each is named with ``how`` = ``escaped``; ``end()`` ends them with the
        other members, and ``started`` ones are ended by whoever started them. Empty for the
        env-tag kind (no boundary to leave)."""
        if self._cgroup is None or self._closed:
            return []
        inside = self._cgroup.pids()
        me = os.getpid()
        launched = {r.pid for r in started}
        out: list[Member] = []
        candidates = [m.ref for m in self._survey().values() if m.pid not in inside] + list(started)
        for ref in candidates:
            process = ref.process()
            if process is None or ref.pid in inside or any(m.pid == ref.pid for m in out):
                continue
            try:
                lineage = [ref.pid, *(p.pid for p in process.parents())]
                member = Member(pid=ref.pid, ppid=process.ppid(), create_time=process.create_time(),
                                cmdline=tuple(process.cmdline()), how="escaped")
            except psutil.Error:
                continue
            ours = me in lineage and not launched.intersection(lineage)
            if not ours:
                out.append(member)
        return out

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
        return survey(self.run_root, self.tag, in_cgroup)

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
