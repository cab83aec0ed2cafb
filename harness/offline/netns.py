"""A task run's network: a namespace of its own where nothing but the fake server answers.

Why: agents are meant to run offline against the fake server, and some reach out anyway
(an ``npm install`` into a fresh HOME, an update check, telemetry). On the open network such
an attempt can take seconds, succeed or fail depending on the machine, and change a run's
outcome. In a network namespace of the run's own the agent's whole process tree (every
process a driver spawns enters it before exec, and what it forks stays) has loopback and one
TUN device that carries the default route, IPv4 and IPv6. The fake server's listening
socket is made inside the namespace (sockets stay in the namespace they were made in), at
the URL the agent is given. Every packet sent anywhere else arrives at the TUN device,
where the harness records the attempt (``packets.parse``) and answers it so the agent fails
at once (``packets.reply``).

Where a namespace cannot be had (not root, no ``/dev/net/tun``, no ``ip``) the run goes on
as before, on the host's network, and its evidence says why (``HostNetwork``). The
in-process driver's agent is the harness itself and cannot be moved: it runs on the host.

A namespace is named after the run's tag (hence its owner, ``containment.stale``), so what
a killed harness left is removed by the next one.
"""

from __future__ import annotations

import asyncio
import ctypes
import fcntl
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.containment import sockets
from harness.containment.sockets import TCP_TABLES, unread_in
from harness.containment.stale import IP_BUDGET_S, NETNS_DIR, NETNS_PREFIX, remove_namespace
from harness.offline.packets import Outbound, parse, reply

CLONE_NEWNET = 0x40000000
TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
TUN_NAME = "sbtun0"
# Addresses of the run's own side of the TUN device (documentation ranges: never routed).
TUN_ADDRESSES = ("192.0.2.2/32", "2001:db8::2/128")
READ_BYTES = 65536
MAX_ATTEMPTS = 200  # attempts kept per run; the rest are counted (an agent retrying in a loop)
MAX_FLOWS = 10_000  # flows told apart per run; past it every packet counts as one more attempt
PACKETS_PER_WAKE = 256  # a burst is answered in slices so the event loop's other work goes on


class NetworkUnavailable(Exception):
    """No namespace can be made here; the reason says what is missing."""


@dataclass(frozen=True)
class OutboundAttempt:
    """An attempt of the agent to reach something other than the fake server: when (the
    monotonic clock, ns), and what (``packets.Outbound``)."""

    mono_ns: int
    what: Outbound

    def to_json(self, start_ns: int) -> dict[str, Any]:
        attempt: dict[str, Any] = {"at_ms": round((self.mono_ns - start_ns) / 1e6, 1), "proto": self.what.proto,
                                   "dst": self.what.dst, "port": self.what.port}
        if self.what.dns_name is not None:
            attempt["dns_name"] = self.what.dns_name
        return attempt


# Looked up once, here: a child between fork and exec must not dlopen (another thread of the
# harness may have held the loader's lock when it forked).
_SETNS = ctypes.CDLL(None, use_errno=True).setns


def setns(fd: int) -> None:
    """Move the calling thread into the network namespace ``fd`` refers to (libc's setns)."""
    if _SETNS(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")


class HostNetwork:
    """The host's network, as before namespaces: nothing enforced, and the reason why."""

    kind = "host"

    def __init__(self, why: str):
        self.why = why

    def server_socket(self) -> socket.socket | None:
        """The fake server's listening socket, or None: it opens its own on the host."""
        return None

    def preexec(self, then: Callable[[], None] | None) -> Callable[[], None] | None:
        return then

    def unread_bytes(self, server_port: int) -> int:
        return sockets.unread_bytes(server_port)

    def watch(self) -> None:
        """Nothing to watch on the host's network."""

    def unwatch(self) -> None:
        """Nothing watched."""

    def close(self) -> None:
        """Nothing to remove."""

    def report(self, start_ns: int) -> dict[str, Any]:
        return {"kind": self.kind, "why": self.why}


class Netns(HostNetwork):
    """A run's network namespace: loopback, the TUN device, the fake server's listening
    socket, and the outbound attempts read off the device."""

    kind = "netns"

    def __init__(self, name: str, tun_fd: int, server: socket.socket, tables: list[int]):
        super().__init__(f"network namespace {name}: loopback and a TUN device that answers every outbound packet")
        self.name = name
        self.attempts: list[OutboundAttempt] = []
        self._tun_fd = tun_fd
        self._server = server
        self._tables = tables
        self._flows: set[tuple[str, str, int, str, int, str | None]] = set()
        self.more = 0  # new flows past ``MAX_ATTEMPTS``, counted only
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @classmethod
    def open(cls, tag: str) -> Netns:
        """Make the namespace ``stopbench-<tag>`` and what it holds; what was made is removed
        again if a step fails (``NetworkUnavailable`` says which)."""
        if (missing := unavailable()) is not None:
            raise NetworkUnavailable(missing)
        name = NETNS_PREFIX + tag
        _ip("netns", "add", name)
        made: dict[str, Any] = {}
        try:
            ns_fd = os.open(NETNS_DIR / name, os.O_RDONLY | os.O_CLOEXEC)
            try:
                _inside(ns_fd, lambda: made.update(_populate(name)))
            finally:
                os.close(ns_fd)
            return cls(name, made["tun"], made["server"], made["tables"])
        except BaseException:
            for fd in [made.get("tun"), *made.get("tables", [])]:
                if fd is not None:
                    os.close(fd)
            if "server" in made:
                made["server"].close()
            remove_namespace(name)
            raise

    def server_socket(self) -> socket.socket | None:
        return self._server

    def preexec(self, then: Callable[[], None] | None) -> Callable[[], None]:
        """A ``preexec_fn`` part: the child enters the namespace, then ``then`` runs. The
        namespace is opened by its path there, as a pty's child has closed every inherited
        descriptor by then. A child that cannot enter fails to start: an agent never runs
        online by accident."""
        path = str(NETNS_DIR / self.name)

        def enter_then() -> None:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                setns(fd)
            finally:
                os.close(fd)
            if then is not None:
                then()

        return enter_then

    def unread_bytes(self, server_port: int) -> int:
        """The kernel's TCP tables of the namespace (opened inside it: a table read from the
        host lists the host's sockets, not the agent's)."""
        texts = []
        for fd in self._tables:
            os.lseek(fd, 0, os.SEEK_SET)
            texts.append(_read_all(fd))
        return unread_in(server_port, texts)

    def watch(self) -> None:
        """Answer and record the TUN device's packets from the running event loop on."""
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._tun_fd, self._drain)

    def _drain(self) -> None:
        for _ in range(PACKETS_PER_WAKE):
            try:
                packet = os.read(self._tun_fd, READ_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # the device is gone (closing): nothing more to answer
                return
            self.take(packet, time.monotonic_ns())

    def take(self, packet: bytes, mono_ns: int) -> None:
        """Record ``packet``'s attempt if it begins a new flow, and answer it."""
        outbound = parse(packet)
        if outbound is not None and outbound.flow not in self._flows:
            if len(self._flows) < MAX_FLOWS:
                self._flows.add(outbound.flow)
            if len(self.attempts) < MAX_ATTEMPTS:
                self.attempts.append(OutboundAttempt(mono_ns, outbound))
            else:
                self.more += 1
        answer = reply(packet)
        if answer is not None:
            try:
                os.write(self._tun_fd, answer)
            except OSError:  # the device's queue is full or it is gone: the agent's own timeout applies
                pass

    def unwatch(self) -> None:
        """Stop reading the device (in the event loop's thread, before ``close``)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._tun_fd)
        self._loop = None

    def close(self) -> None:
        """Remove the namespace and its device (the run's processes are ended by then, and
        ``unwatch`` called); safe to call twice, and from any thread."""
        if self._closed:
            return
        self._closed = True
        self._server.close()
        for fd in (self._tun_fd, *self._tables):
            os.close(fd)
        remove_namespace(self.name)

    def report(self, start_ns: int) -> dict[str, Any]:
        """``attempts``: each with ``at_ms`` after ``start_ns`` (the run's start); ``more``:
        how many new flows came after the first ``MAX_ATTEMPTS`` (when any did)."""
        report = {"kind": self.kind, "name": self.name, "attempts": [a.to_json(start_ns) for a in self.attempts]}
        return {**report, "more": self.more} if self.more else report


def unavailable() -> str | None:
    """What this machine lacks for a run's namespace, or None when it has all of it."""
    if os.geteuid() != 0:
        return "not root: a network namespace needs CAP_SYS_ADMIN and CAP_NET_ADMIN"
    if not os.path.exists("/dev/net/tun"):
        return "no /dev/net/tun"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    return None


def open_network(tag: str, *, in_process: bool) -> HostNetwork:
    """The run's network: its own namespace where one can be had, else the host's (why says so)."""
    if in_process:
        return HostNetwork("offline not enforced: in-process (the agent runs inside the harness)")
    try:
        return Netns.open(tag)
    except (NetworkUnavailable, OSError, subprocess.SubprocessError) as exc:
        return HostNetwork(f"offline not enforced: {exc}")


def _populate(name: str) -> dict[str, Any]:
    """Inside the namespace (this thread is in it): the TUN device, the addresses and routes,
    the fake server's listening socket and the namespace's TCP tables."""
    made: dict[str, Any] = {}
    tun = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
    made["tun"] = tun
    fcntl.ioctl(tun, TUNSETIFF, struct.pack("16sH", TUN_NAME.encode(), IFF_TUN | IFF_NO_PI))
    v4, v6 = TUN_ADDRESSES
    _ip("-n", name, "-batch", "-", stdin="\n".join([
        "link set lo up", f"link set {TUN_NAME} up", f"addr add {v4} dev {TUN_NAME}",
        f"addr add {v6} dev {TUN_NAME} nodad", f"route add default dev {TUN_NAME}",
        f"route add ::/0 dev {TUN_NAME}", ""]))
    made["tables"] = [os.open(path, os.O_RDONLY | os.O_CLOEXEC) for path in
                      (f"/proc/thread-self/net/{Path(t).name}" for t in TCP_TABLES) if os.path.exists(path)]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    made["server"] = server
    server.bind(("127.0.0.1", 0))
    server.listen(128)
    server.setblocking(False)
    return made


def _inside(ns_fd: int, work: Callable[[], None]) -> None:
    """Run ``work`` in a thread of its own that enters the namespace first (this thread stays
    where it is); its exception is raised here."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            setns(ns_fd)
            work()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            raised.append(exc)

    thread = threading.Thread(target=run, name="netns-setup")
    thread.start()
    thread.join()
    if raised:
        raise raised[0]


def _ip(*args: str, stdin: str | None = None) -> None:
    done = subprocess.run(["ip", *args], input=stdin, capture_output=True, text=True, timeout=IP_BUDGET_S)
    if done.returncode != 0:
        raise NetworkUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")


def _read_all(fd: int) -> str:
    chunks = []
    while chunk := os.read(fd, READ_BYTES):
        chunks.append(chunk)
    return b"".join(chunks).decode("ascii")

