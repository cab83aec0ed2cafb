"""What the agent has read off its connections to the fake server, from the kernel's tables.

"Text the agent surely received before Stop" must not be guessed from timing: a chunk the
server flushed may still sit unread in the agent's socket buffer when Stop lands, and the
agent may rightly drop it. The kernel knows: ``/proc/net/tcp`` lists every loopback
connection with its receive queue, so once no client socket to the server's port holds
unread bytes, everything flushed before that moment was read by the agent process. The same
tables tell which of the agent's processes holds its model connection (``connection_holders``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import psutil

TCP_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")


def unread_bytes(server_port: int) -> int:
    """Bytes received but not yet read by the clients of ``server_port`` (all connections)."""
    texts = []
    for table in TCP_TABLES:
        try:
            with open(table, encoding="ascii") as f:
                texts.append(f.read())
        except FileNotFoundError:
            continue
    return unread_in(server_port, texts)


def unread_in(server_port: int, tables: Iterable[str]) -> int:
    """``unread_bytes`` from the tables' text (a run in a network namespace of its own reads
    the namespace's tables: the host's do not list its sockets)."""
    return sum(int(fields[4].split(":")[1], 16) for fields in _clients(server_port, tables))


def client_inodes(pid: int, server_port: int) -> set[int]:
    """The socket inodes of the connections to ``server_port`` in ``pid``'s network namespace
    (read through ``/proc/<pid>/net``: the namespace may not be this process's)."""
    texts = []
    for table in TCP_TABLES:
        try:
            with open(f"/proc/{pid}/net/{table.rsplit('/', 1)[1]}", encoding="ascii") as f:
                texts.append(f.read())
        except FileNotFoundError:
            continue
    return {int(fields[9]) for fields in _clients(server_port, texts)}


def _clients(server_port: int, tables: Iterable[str]) -> Iterator[list[str]]:
    """The rows of the tables whose remote port is ``server_port``, split into fields."""
    for text in tables:
        for line in text.splitlines()[1:]:
            fields = line.split()
            # sl local_address rem_address st tx_queue:rx_queue tr tm->when retrnsmt uid timeout inode …;
            # addresses are HEXIP:HEXPORT
            if int(fields[2].rsplit(":", 1)[1], 16) == server_port:
                yield fields


def connection_holders(pid: int, port: int) -> list[tuple[int, int, str]]:
    """The processes of ``pid``'s tree (itself and its descendants, wherever their session)
    holding a TCP connection to ``port`` on this host: (pid, process group, command line).

    It runs right after a Stop, while a latency is being timed, so it reads as little as it can:
    the connections from one table (that of ``pid``'s network namespace, which its whole tree
    shares), the tree from the kernel's lists of each task's children (not a scan of every
    process on the machine), and a command line only for a holder."""
    inodes = client_inodes(pid, port)
    if not inodes:
        return []
    holders = []
    for member in _tree(pid):
        try:
            if _holds(member, inodes):
                with open(f"/proc/{member}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                holders.append((member, os.getpgid(member), command[:200]))
        except (ProcessLookupError, OSError):
            continue
    return holders


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from ``/proc/<pid>/task/<tid>/children`` (psutil's scan
    of every process where the kernel keeps no such lists)."""
    if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
        try:
            root = psutil.Process(pid)
            return [pid, *(p.pid for p in root.children(recursive=True))]
        except psutil.Error:
            return [pid]
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{current}/task/{tid}/children", encoding="ascii") as f:
                    todo.extend(int(child) for child in f.read().split())
            except OSError:
                continue
    return found


def _holds(pid: int, inodes: set[int]) -> bool:
    """Whether ``pid`` has one of the sockets ``inodes`` open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:[") and int(target[8:-1]) in inodes:
            return True
    return False
