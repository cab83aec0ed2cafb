"""Agent processes: start each in its own session with default signal dispositions, end
each by PID with its whole tree, and check that nothing was left behind.

Why reset dispositions: a process started with ``cmd &`` from a non-interactive shell
inherits SIGINT as *ignored*, and that survives ``exec``; an agent started from such a
harness would silently ignore Stop. Why a new session: Stop by signal must reach the agent
alone (not the harness), and ending "the agent and everything it started" needs a boundary
— the session — plus psutil's descendant walk for whatever left it (``setsid`` escapees).
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import psutil

RESET_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP, signal.SIGPIPE)


def reset_signals() -> None:
    """``preexec_fn``: default dispositions and an empty signal mask in the child."""
    for sig in RESET_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


@dataclass(frozen=True)
class ProcRef:
    """A process identified by PID *and* start time, so a reused PID is never mistaken for it."""

    pid: int
    create_time: float | None = None
    role: str = ""

    @classmethod
    def of(cls, pid: int, role: str = "") -> ProcRef:
        try:
            return cls(pid, psutil.Process(pid).create_time(), role)
        except psutil.Error:
            return cls(pid, None, role)

    @classmethod
    def from_record(cls, item: Mapping) -> ProcRef:
        return cls(int(item["pid"]), item.get("create_time"), str(item.get("role", "")))

    def process(self) -> psutil.Process | None:
        """The live process, or None when it is gone (or the PID now names another process)."""
        try:
            p = psutil.Process(self.pid)
            if self.create_time is not None and abs(p.create_time() - self.create_time) > 0.01:
                return None
            if p.status() == psutil.STATUS_ZOMBIE:
                return None
            return p
        except psutil.Error:
            return None

    def alive(self) -> bool:
        return self.process() is not None

    def to_json(self) -> dict:
        return {"pid": self.pid, "create_time": self.create_time, "role": self.role}


async def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    stdin: int | None = asyncio.subprocess.DEVNULL,
    preexec: Callable[[], None] | None = None,
) -> asyncio.subprocess.Process:
    """Start ``argv`` in a new session with default signal dispositions, output piped;
    ``preexec`` (the task run's containment) runs in the child before it execs."""
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            env=dict(env),
            cwd=cwd,
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=child_setup(preexec),
        )
    except OSError as exc:  # a missing binary, a bad working folder: the profile's problem, named
        raise SpawnError(f"cannot start {' '.join(argv)!r}: {exc.strerror or exc}") from None


class SpawnError(Exception):
    """An agent's command could not be started at all."""


def child_setup(preexec: Callable[[], None] | None) -> Callable[[], None]:
    """What every agent process runs before exec: default signals, then the containment."""
    if preexec is None:
        return reset_signals

    def setup() -> None:
        reset_signals()
        preexec()

    return setup


def tree(root: ProcRef) -> list[ProcRef]:
    """The root, its descendants and every process left in its session (if it led one)."""
    found: dict[int, ProcRef] = {}
    p = root.process()
    if p is not None:
        found[p.pid] = root
        try:
            for child in p.children(recursive=True):
                found.setdefault(child.pid, ProcRef.of(child.pid, "descendant"))
        except psutil.Error:
            pass
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.pid not in found and os.getsid(proc.pid) == root.pid:
                found[proc.pid] = ProcRef.of(proc.pid, "session")
        except (OSError, psutil.Error):
            continue
    return list(found.values())


def kill_all(refs: Iterable[ProcRef], *, deadline_s: float = 10.0) -> list[ProcRef]:
    """SIGKILL every live process named, wait until they are gone; return any survivors.

    Gone means dead or a zombie: the harness never reaps here (``waitpid`` belongs to whoever
    started the process — asyncio or pexpect — and stealing it would corrupt their exit codes).
    """
    live = [r for r in refs if r.alive()]
    for r in live:
        p = r.process()
        if p is not None:
            try:
                p.kill()
            except psutil.Error:
                pass
    if wait_gone(live, deadline_s=deadline_s) is not None:
        return []
    return leftovers(live)


def kill_tree(root: ProcRef, *, deadline_s: float = 10.0) -> list[ProcRef]:
    """End the root's whole tree by PID; survivors (should be none) are returned."""
    return kill_all(tree(root), deadline_s=deadline_s)


def leftovers(refs: Iterable[ProcRef]) -> list[ProcRef]:
    """Those of ``refs`` still alive (PID and start time both match)."""
    return [r for r in refs if r.alive()]


def pidfd_of(ref: ProcRef) -> int | None:
    """A pidfd naming ``ref``'s process for as long as it is open, or None when the process
    is gone already (dead, a zombie, or its PID taken by another). Raises ``OSError`` (or
    ``AttributeError``) where the kernel or Python has no pidfds.

    The PID is checked against the start time only after the pidfd is open: from then on the
    pidfd cannot come to name another process, so the check holds for the pidfd's life.
    """
    try:
        fd = os.pidfd_open(ref.pid)
    except ProcessLookupError:
        return None
    if not ref.alive():
        os.close(fd)
        return None
    return fd


def _pidfds(refs: Sequence[ProcRef]) -> list[int] | None:
    """Pinned pidfds of those of ``refs`` still alive; None where pidfds are missing."""
    fds: list[int] = []
    try:
        for ref in refs:
            fd = pidfd_of(ref)
            if fd is not None:
                fds.append(fd)
    except (AttributeError, OSError):
        for fd in fds:
            os.close(fd)
        return None
    return fds


def wait_gone(refs: Sequence[ProcRef], *, deadline_s: float, cancel: threading.Event | None = None,
              interval_s: float = 0.0005) -> int | None:
    """Block until every process is gone; the ``monotonic_ns`` when the last was seen gone,
    or None at the deadline (or once ``cancel`` is set). A pidfd turns readable the moment its
    process exits, so this sleeps in ``poll`` and wakes on the exit; without pidfds (or with a
    ``cancel`` to notice) it polls every ``interval_s``."""
    end = time.monotonic() + deadline_s
    fds = _pidfds(refs) if cancel is None else None
    if fds is None:
        pending = list(refs)
        while True:
            pending = [r for r in pending if r.alive()]
            if not pending:
                return time.monotonic_ns()
            if time.monotonic() > end or (cancel is not None and cancel.is_set()):
                return None
            time.sleep(interval_s)
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    try:
        while fds:
            left_ms = max(0, int((end - time.monotonic()) * 1000))
            for fd, _ in poller.poll(left_ms):
                poller.unregister(fd)
                fds.remove(fd)
                os.close(fd)
            if fds and time.monotonic() > end:
                return None
        return time.monotonic_ns()
    finally:
        for fd in fds:
            os.close(fd)


class GoneWatch:
    """When the last of some processes was gone, stamped on the event-loop pass that sees it.

    Each process's pidfd is watched by the loop's own selector: no thread, no polling, and
    no wait for the GIL behind a polling thread (a stopwatch for L3 must be well below the
    milliseconds it measures). Without pidfds, a thread polls (``wait_gone``). ``finish``
    ends the watch and says when the tree was gone, if it was: one found gone only at that
    moment is stamped then, never earlier.
    """

    def __init__(self, refs: Sequence[ProcRef], *, deadline_s: float):
        self.gone_ns: int | None = None
        self._loop = asyncio.get_running_loop()
        self._fds = _pidfds(refs)
        self._cancel = threading.Event()
        self._thread: asyncio.Future[int | None] | None = None
        self._deadline: asyncio.TimerHandle | None = None
        if self._fds is None:
            self._thread = asyncio.ensure_future(asyncio.to_thread(
                wait_gone, refs, deadline_s=deadline_s, cancel=self._cancel))
        elif not self._fds:
            self.gone_ns = time.monotonic_ns()
        else:
            for fd in self._fds:
                self._loop.add_reader(fd, self._seen, fd)
            self._deadline = self._loop.call_later(deadline_s, self._close)

    def _seen(self, fd: int) -> None:
        now = time.monotonic_ns()
        assert self._fds is not None
        self._loop.remove_reader(fd)
        os.close(fd)
        self._fds.remove(fd)
        if not self._fds:
            self.gone_ns = now
            self._close()

    def _close(self) -> None:
        for fd in self._fds or ():
            self._loop.remove_reader(fd)
            os.close(fd)
        self._fds = []
        if self._deadline is not None:
            self._deadline.cancel()

    async def finish(self) -> int | None:
        if self._thread is not None:
            self._cancel.set()
            self.gone_ns = await self._thread
        for fd in list(self._fds or ()):  # exited, its readiness not yet handled by the loop
            if select.select([fd], [], [], 0)[0]:
                self._seen(fd)
        self._close()
        return self.gone_ns


def signal_pid(pid: int, sig: int) -> bool:
    """Send a signal by PID; False when the process was already gone."""
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def signal_group(pid: int, sig: int) -> bool:
    """Send a signal the way a terminal's Ctrl-C does: once to each process of the group ``pid``
    leads (``spawn`` made the agent a group leader), so an agent that relaunched itself as a
    child gets it too. ``pid`` itself gets it separately only if it has left that group: a
    second delivery would be a double Ctrl-C, which many agents read as "quit now". False when
    ``pid`` was gone."""
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return False
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass  # the leader left and no process is left in its group
    return True if group == pid else signal_pid(pid, sig)


class ExitStamp:
    """When a child process exited, read off its pidfd the moment the kernel marks it.

    asyncio's child watcher learns of an exit from a thread's ``waitpid`` and then wakes the
    loop, about a millisecond after the fact; a pidfd is readable in the loop's own selector
    as soon as the child is a zombie. ``ns`` is None until seen (or where pidfds are missing:
    then the caller's own clock reading after the wait is the stamp).
    """

    def __init__(self, pid: int):
        self.ns: int | None = None
        self._loop = asyncio.get_running_loop()
        try:
            self._fd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._fd = None
            return
        self._loop.add_reader(self._fd, self._seen)

    def _seen(self) -> None:
        self.ns = time.monotonic_ns()
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = None
