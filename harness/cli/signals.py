"""SIGINT, SIGTERM and SIGHUP cut the harness's work short cleanly, from its first instruction to its last.

The agents run in their own sessions, so killing the harness alone would orphan them: a
signal instead cuts the work short, every task run in progress cleans up on its way out
(agent and tool processes ended, cgroups and run folders removed), and the caller learns
which signal it was. The handler is installed before anything else (``harness.__main__``,
before the command's imports), and what the first signal does depends on where the harness is:

- setting up (synchronous code: loading, measuring the machine): ``Interrupted`` is raised
  where the main thread is, and the ``finally`` blocks on its way out undo what was begun;
- running work (``run_until_signalled``): the work's task is cancelled, and the task runs'
  own cleanup ends what they started;
- writing what was kept (``deferred``): the signal is noted, the writing goes on.

A second signal (a double Ctrl-C) is only noted: the cleanup the first one started runs to
its end (each step of it is bounded), so a run cut short always exits 2 and leaves nothing.
A signal the caller set to be ignored stays ignored.
"""

from __future__ import annotations

# Only what the handler needs is imported here: this module is imported, and the handler
# installed, before anything else the command runs (the rest is imported where it is used).
import os
import signal
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator
    from types import FrameType

T = TypeVar("T")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # SIGHUP: the terminal went away


class Interrupted(BaseException):
    """The work was cut short by a signal; the message names it. Like KeyboardInterrupt, it is
    no ``Exception``: a broad ``except Exception`` on its way out must not swallow it."""


class _State:
    """What the handler knows: the signals received (in order), and what the first one does
    now (None: raise ``Interrupted``; a callable: call it, e.g. cancel the running work)."""

    received: list[str] = []
    on_first: Callable[[], None] | None = None


def _cut_short(name: str) -> str:
    return f"{name}: the work in progress was cleaned up (agent and tool processes ended, temp folders removed)"


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    _State.received.append(name)
    if len(_State.received) > 1:
        # os.write: a print here could re-enter a print the signal interrupted.
        os.write(2, f"stopbench: {name} again: still cleaning up what the first one cut short\n".encode())
        return
    if _State.on_first is None:
        raise Interrupted(_cut_short(name))
    _State.on_first()


def install() -> dict[int, Any]:
    """Handle SIGINT and SIGTERM from now on (those not ignored); the handlers replaced."""
    replaced: dict[int, Any] = {}
    for sig in STOP_SIGNALS:
        current = signal.getsignal(sig)
        if current in (signal.SIG_IGN, _on_signal):
            continue
        replaced[sig] = current
        signal.signal(sig, _on_signal)
    return replaced


def received() -> str | None:
    """The first stop signal received, if any."""
    return _State.received[0] if _State.received else None


@contextmanager
def handled() -> Iterator[None]:
    """The block runs with the handler installed (kept if it was already); the handlers it
    replaced are put back afterwards, and the signals noted are forgotten."""
    replaced = install()
    try:
        yield
    finally:
        for sig, handler in replaced.items():
            signal.signal(sig, handler)
        if replaced:
            _State.received = []


@contextmanager
def deferred() -> Iterator[None]:
    """A signal during the block is noted, never raised: what is being written is finished."""
    before = _State.on_first
    _State.on_first = lambda: None
    try:
        yield
    finally:
        _State.on_first = before


def run_until_signalled(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` in a new event loop; the first stop signal cancels it, and once it has
    cleaned up, ``Interrupted`` names the signal. A signal received before (or while the loop
    shuts down after the work is done) raises ``Interrupted`` too."""
    import asyncio
    import socket

    if _State.received:
        work.close()
        raise Interrupted(_cut_short(_State.received[0]))

    async def guarded() -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()

        def cancel() -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(task.cancel)

        # The loop may sleep in select() while a worker thread takes the signal: the wakeup
        # socket wakes it, and the Python handler then runs in the main thread.
        wake_r, wake_w = socket.socketpair()
        for sock in (wake_r, wake_w):
            sock.setblocking(False)
        loop.add_reader(wake_r.fileno(), lambda: wake_r.recv(4096))
        previous_fd = signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
        _State.on_first = cancel
        try:
            if _State.received:  # between the check above and here
                work.close()
                raise asyncio.CancelledError
            return await work
        finally:
            _State.on_first = lambda: None  # from here on, the work is over: noted only
            signal.set_wakeup_fd(previous_fd)
            loop.remove_reader(wake_r.fileno())
            wake_r.close()
            wake_w.close()

    replaced, before = install(), _State.on_first
    _State.on_first = lambda: None  # until the work's task can be cancelled: noted, and seen in guarded()
    try:
        try:
            result = asyncio.run(guarded())
        except asyncio.CancelledError:
            raise Interrupted(_cut_short(_State.received[0] if _State.received else "cancelled")) from None
        if _State.received:
            raise Interrupted(_cut_short(_State.received[0]))
        return result
    finally:
        _State.on_first = before
        for sig, handler in replaced.items():
            signal.signal(sig, handler)
        if replaced:
            _State.received = []
