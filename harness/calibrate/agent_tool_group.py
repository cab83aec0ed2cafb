"""The calibration agent's tool process group: who is in it, the SIGKILL, and the moment
every member is gone.

The agent's ``gone`` stamp is the moment it saw its killed tool's group empty; this module
finds the members (``/proc``, standard library only, like the agent) cheaply enough not to
slow the dying processes it watches on a two-core machine.
"""

from __future__ import annotations

import os
import signal
import time

GONE_POLL_S = 0.0001  # how often the agent looks for its killed group's members (its own "gone" stamp)
GONE_FAILSAFE_S = 10.0


def group_members(pgid: int) -> list[int]:
    """PIDs of the processes in group ``pgid`` that are not yet dead (zombies count as gone)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and _live_in_group(int(name), pgid):
            found.append(int(name))
    return found


def _live_in_group(pid: int, pgid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (comm) ": state ppid pgrp …
    return fields[0] not in (b"Z", b"X") and int(fields[2]) == pgid


def still_live(pids: list[int], pgid: int) -> list[int]:
    return [p for p in pids if _live_in_group(p, pgid)]


class Group:
    """A tool's process group, its members looked up while it runs (every ``REFRESH_NS``), so
    that after the kill only those few ``/proc/<pid>/stat`` are polled: a full ``/proc`` scan
    costs a millisecond or two of CPU, which the dying processes need on a two-core machine."""

    REFRESH_NS = 50_000_000

    def __init__(self, pgid: int):
        self.pgid = pgid
        self.known = {pgid}
        self._next_ns = 0

    def refresh(self, *, force: bool = False) -> None:
        now = time.monotonic_ns()
        if force or now >= self._next_ns:
            self.known |= set(group_members(self.pgid))
            self._next_ns = now + self.REFRESH_NS

    def live(self) -> list[int]:
        return still_live(sorted(self.known), self.pgid)

    def confirm_gone(self) -> bool:
        """A full scan after the known members died: True when none is left that was missed."""
        missed = group_members(self.pgid)
        self.known |= set(missed)
        return not missed


def wait_gone(group: Group) -> int | None:
    """After the kill: the moment every member was seen dead (None at the failsafe)."""
    end = time.monotonic() + GONE_FAILSAFE_S
    while time.monotonic() < end:
        if not group.live():
            gone = time.monotonic_ns()
            if group.confirm_gone():
                return gone
        time.sleep(GONE_POLL_S)
    return None


def kill_group(pgid: int) -> int:
    """SIGKILL the whole group; the moment it was sent."""
    sent = time.monotonic_ns()
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return sent
