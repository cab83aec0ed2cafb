"""What the terminal driver waited to see, kept as the run's evidence: the rendered screen as
each wait ended (seen, the terminal closed first, or given up on), and whether the profile's
pattern for it held (the run's profile fit).

A terminal profile is a set of patterns for what a person would see; when one never matches,
the screen the harness was looking at is what shows why. Kept apart from the driver's steps
(``harness.drivers.terminal``): every wait goes through here, whatever it waits for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from harness.drivers.base import DriverError
from harness.drivers.screen import Screen, ScreenLog
from harness.model.fit import FitLog
from harness.profiles.model import Interactive

T = TypeVar("T")


class WaitEvidence:
    """The screens kept as the driver's waits ended (``screens``), and the fit noted in ``fit``.
    ``view`` is the terminal's rendered screen now (a new terminal has a new one)."""

    def __init__(self, spec: Interactive, fit: FitLog, view: Callable[[], Screen]):
        self.spec, self.fit, self._view = spec, fit, view
        self.on_screen = spec.match_on == "screen"
        self.screens = ScreenLog()  # the screen as each wait ended: the evidence of what was seen

    def take(self, at: str) -> None:
        """Keep the screen as it is now, ``at`` saying when."""
        self.screens.take(at, self._view())

    def to_json(self) -> list[dict[str, Any]]:
        return self.screens.to_json()

    async def watched(self, what: str, waiting: Awaitable[T]) -> T:
        """``waiting``'s outcome, keeping the rendered screen as the wait for ``what`` ended:
        seen, the terminal closed first (an outcome of False), or given up on (the output
        ended, or the step stopped waiting: its budget ran out, the agent exited). A wait for
        one of the profile's patterns goes into the run's profile fit: matched, or not seen
        (undecided here: whether the pattern or the agent failed is the step's to tell)."""
        try:
            outcome = await waiting
        except DriverError:
            self.take(f"the output ended before {what}")
            self._note_fit(what, None, "the agent's output ended first")
            raise
        except asyncio.CancelledError:
            self.take(f"stopped waiting for {what}")
            self._note_fit(what, None, "the step stopped waiting before it showed")
            raise
        closed = outcome is False
        self.take(f"the terminal closed before {what}" if closed else f"saw {what}")
        self._note_fit(what, not closed, "the terminal closed first" if closed else
                       "on the rendered screen" if self.on_screen else "in the terminal's output")
        return outcome

    def _expectation(self, what: str) -> tuple[str, str] | None:
        """The profile's pattern for ``what`` the driver waits to see, and when it is expected."""
        spec = self.spec
        return {
            "the prompt": (spec.prompt_regex, "when the agent is ready for input"),
            "the turn's end": (spec.turn_ended_regex or f"{spec.busy_regex} going away", "when a turn ends"),
            "the queued acknowledgement": (spec.queued_regex, "when input is typed while a turn runs"),
        }.get(what)

    def _note_fit(self, what: str, matched: bool | None, seen: str) -> None:
        expectation = self._expectation(what)
        if expectation is None:  # e.g. the typed text: the harness's own input, no pattern of the profile
            return
        pattern, expected = expectation
        (self.fit.matched if matched else self.fit.undecided)(what, pattern, expected, seen)
