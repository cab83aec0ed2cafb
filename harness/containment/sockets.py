"""What the agent has read off its connections to the fake server, from the kernel's tables.

"Text the agent surely received before Stop" must not be guessed from timing: a chunk the
server flushed may still sit unread in the agent's socket buffer when Stop lands, and the
agent may rightly drop it. The kernel knows: ``/proc/net/tcp`` lists every loopback
connection with its receive queue, so once no client socket to the server's port holds
unread bytes, everything flushed before that moment was read by the agent process.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

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
