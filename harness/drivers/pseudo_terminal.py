"""The pseudo-terminal an interactive agent runs in: started with pexpect, read by the event
loop, closed once its process has exited.

The terminal driver (``harness.drivers.terminal``) types and waits; this is the plumbing
under it, and where its costs are taken out: pexpect's and ptyprocess's sleeps (which would
land inside every Stop latency measured through keys), and a thread or a poll to read the
terminal (a reader on the event loop reads it as it is written).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping

import pexpect

from harness.containment.procs import SpawnError, child_setup

KEYS = {"esc": "\x1b", "ctrl-c": "\x03", "ctrl-d": "\x04", "enter": "\r"}
COLUMNS, LINES = 200, 40
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\r")


def open_terminal(argv: list[str], *, env: Mapping[str, str], cwd: str,
                  preexec: Callable[[], None] | None) -> pexpect.spawn:
    """``argv`` started in a new pseudo-terminal of ``COLUMNS`` × ``LINES``, its descriptor
    non-blocking; ``SpawnError`` when it cannot start (the binary is not on PATH, say)."""
    try:
        child = pexpect.spawn(
            argv[0], argv[1:], env=env, cwd=cwd, encoding=None,
            dimensions=(LINES, COLUMNS), preexec_fn=child_setup(preexec), echo=False,
        )
    except pexpect.ExceptionPexpect as exc:  # e.g. the binary is not on PATH
        raise SpawnError(f"cannot start {' '.join(argv)!r}: {exc}") from None
    # pexpect sleeps 50 ms in every send() by default: a blocking sleep on the event loop
    # that would also land inside every Stop latency measured through keys.
    child.delaybeforesend = None
    # ptyprocess sleeps 100 ms in every close(), "to give the kernel time": the driver
    # closes a terminal only once its agent has exited and been waited for.
    child.ptyproc.delayafterclose = 0
    os.set_blocking(child.child_fd, False)
    return child


def read_on_loop(child: pexpect.spawn, on_data: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
    """Read what ``child`` writes as it writes it, on the running event loop: each read to
    ``on_data``; ``on_eof`` once, when the terminal's other side is gone."""
    loop = asyncio.get_running_loop()
    # A registration left for this descriptor number by a terminal closed while still
    # registered would make add_reader change that dead entry without polling the new
    # descriptor: the agent's output would never be read. Clear it first.
    loop.remove_reader(child.child_fd)
    loop.add_reader(child.child_fd, _readable, child, on_data, on_eof)


def _readable(child: pexpect.spawn, on_data: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
    try:
        data = os.read(child.child_fd, 65536)
    except BlockingIOError:
        return
    except OSError:  # EIO: the terminal's other side is gone
        data = b""
    if data:
        on_data(data)
        return
    asyncio.get_running_loop().remove_reader(child.child_fd)
    on_eof()


def stop_reading(child: pexpect.spawn) -> None:
    """No more reads of ``child``'s terminal (none were left, or its descriptor is closed: nothing)."""
    try:
        asyncio.get_running_loop().remove_reader(child.child_fd)
    except (ValueError, OSError):
        pass


def retire(child: pexpect.spawn) -> None:
    """Done with an exited agent's terminal: stop reading it, then close it — in that order,
    so no reader is left on a descriptor number the next terminal may get."""
    stop_reading(child)
    if not child.isalive():
        child.close(force=True)


async def exit_within(pid: int, within_s: float) -> None:
    """Returns once process ``pid`` has exited (its pidfd is readable), or after ``within_s``."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:  # gone already, or no pidfds here: isalive() decides
        return
    loop = asyncio.get_running_loop()
    gone: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not gone.done():
            gone.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await asyncio.wait_for(gone, within_s)
    except TimeoutError:
        pass
    finally:
        loop.remove_reader(fd)
        os.close(fd)
