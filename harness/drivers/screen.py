"""A rendered terminal screen beside the raw byte stream, for full-screen terminal UIs.

Full-screen UIs (Ink, ratatui and the like) repaint the cells that changed, in whatever
order suits them — one writes its next prompt before the "Interrupted" line above it — so a
pattern over the raw stream sees fragments in the wrong order. A VT emulator (pyte) keeps the
screen as a person sees it; prompts and busy indicators are matched on that. Waits have no
deadline of their own: the step that waits owns it.
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable
from typing import Any

import pyte

SCREENS_KEPT = 8  # the last screens a terminal run keeps in its evidence (each at most a screen's rows)


class Screen:
    def __init__(self, columns: int, lines: int):
        self._screen = pyte.Screen(columns, lines)
        self._stream = pyte.ByteStream(self._screen)
        self._changed = asyncio.Event()
        self.eof = False

    def feed(self, data: bytes) -> None:
        self._stream.feed(data)
        self._changed.set()

    def close(self) -> None:
        self.eof = True
        self._changed.set()

    def text(self) -> str:
        """What the screen shows now, one line per row, trailing blanks cut."""
        return "\n".join(line.rstrip() for line in self._screen.display)

    def shows(self, pattern: str | None) -> bool:
        return bool(pattern) and re.search(pattern, self.text()) is not None  # type: ignore[arg-type]

    async def wait(self, predicate: Callable[[], bool]) -> bool:
        """True once ``predicate`` holds (checked at every change), False if the terminal closed first."""
        while True:
            if predicate():
                return True
            if self.eof:
                return False
            self._changed.clear()
            await self._changed.wait()


class ScreenLog:
    """The rendered screens a terminal run keeps for its evidence: the screen as each of the
    driver's waits ended (what it waited for seen, or given up on) and as the run ended, so a
    failed terminal profile shows what the harness saw. Bounded: the last ``keep`` screens,
    numbered, so a reader sees how many came before. Kept raw, as all a run captures is: the
    key is masked where results are written (``harness.model.redaction.redact``)."""

    def __init__(self, keep: int = SCREENS_KEPT):
        self._kept: deque[dict[str, Any]] = deque(maxlen=keep)
        self._taken = 0

    def take(self, at: str, screen: Screen) -> None:
        """Keep what ``screen`` shows now, one text line per row, blank rows at the bottom cut."""
        lines = screen.text().splitlines()
        while lines and not lines[-1]:
            lines.pop()
        self._taken += 1
        self._kept.append({"n": self._taken, "at": at, "lines": lines})

    def to_json(self) -> list[dict[str, Any]]:
        return [dict(s, lines=list(s["lines"])) for s in self._kept]
