"""Running the harness's work so that SIGINT and SIGTERM cancel it cleanly.

The agents run in their own sessions, so killing the harness alone would orphan them: a
signal instead cancels the work, every task run in progress cleans up on its way out (agent
and tool processes ended, run folders removed), and the caller learns which signal it was.
A signal the caller set to be ignored stays ignored.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Interrupted(Exception):
    """The work was cut short by a signal; the message names it."""


def run_until_signalled(work: Coroutine[Any, Any, T]) -> T:
    received: list[str] = []

    async def guarded() -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()

        def on_signal(sig: signal.Signals) -> None:
            received.append(sig.name)
            task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                loop.add_signal_handler(sig, on_signal, sig)
        return await work

    try:
        return asyncio.run(guarded())
    except asyncio.CancelledError:
        raise Interrupted(f"{received[0] if received else 'cancelled'}: the work in progress was cleaned up "
                          "(agent and tool processes ended, temp folders removed)") from None
