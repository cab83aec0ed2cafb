"""What an agent process printed, kept bounded and waited on.

Every driver reads an agent's output the same way: a pipe (or a terminal) feeds an
``OutputBuffer``, and the driver's steps wait for a pattern to appear in it. Kept apart from
the drivers because how much of an output is kept, and how a wait resumes its search, are one
concern of their own — and the part whose cost grows with what an agent prints
(``benchmarks/output_absorb.py`` measures it).
"""

from __future__ import annotations

import asyncio
import bisect
import codecs
import re

from harness.drivers.base import DriverError

HEAD_CHARS = 64 * 1024  # the start of an output, always kept: where agents print their session id
TAIL_CHARS = 4 * 1024 * 1024  # the end of an output kept (between one and two times this)
LOOKBACK_CHARS = 64 * 1024  # the longest text a waited-for pattern is taken to match
EXCERPT_CHARS = 60  # context kept either side of a watched string found in what is left out


class OutputBuffer:
    """Text a process printed, with waiters for a regex to appear after a position. The
    waits have no deadline of their own: the step that waits owns it.

    Bounded and linear in what is printed: the output is kept as its pieces (never re-joined
    per piece), its first ``HEAD_CHARS`` and its last ``TAIL_CHARS`` to twice that; what falls
    between is left out, and ``text`` says how much in a line between the two. A watched
    string (the run's API key) found in what is left out is kept with its context in that line,
    so a scan of the output still finds it. Positions (``end``, ``start=``) count every
    character printed, kept or not. A search resumes where the last one for the same pattern
    and start found nothing, less ``LOOKBACK_CHARS`` (a match longer than that across two reads
    could be missed), so a waiter costs the new text, not all of it, per piece."""

    def __init__(self, watch: tuple[str, ...] = (), *, head_chars: int = HEAD_CHARS,
                 tail_chars: int = TAIL_CHARS) -> None:
        self.eof = False
        self.end = 0  # characters printed so far
        self._head = ""
        self._pieces: list[str] = []  # the kept end, from position ``_start`` on
        self._offsets: list[int] = []  # the position of each piece
        self._start = 0
        self._kept = 0
        self._head_chars, self._tail_chars = head_chars, tail_chars
        self._watch = tuple(w for w in watch if w)
        self._found: list[str] = []  # excerpts around watched strings in what was left out
        self._text: str | None = None
        self._scanned: dict[tuple[str, int, int], int] = {}  # (pattern, flags, start) → searched up to
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._changed = asyncio.Event()

    def feed(self, data: bytes | str) -> None:
        text = self._decoder.decode(data) if isinstance(data, bytes) else data
        if not text:
            return
        if len(self._head) < self._head_chars:
            self._head += text[:self._head_chars - len(self._head)]
        self._pieces.append(text)
        self._offsets.append(self.end)
        self.end += len(text)
        self._kept += len(text)
        if self._kept > 2 * self._tail_chars:
            self._trim()
        self._text = None
        self._changed.set()

    def _trim(self) -> None:
        """Leave out all but the last ``tail_chars`` of the kept end (whole pieces, then part
        of one), looking for watched strings in what goes."""
        cut = self.end - self._tail_chars
        first = bisect.bisect_right(self._offsets, cut) - 1
        gone = "".join(self._pieces[:first]) + self._pieces[first][:cut - self._offsets[first]]
        self._look_for_watched(gone, self._pieces[first][cut - self._offsets[first]:][:max(map(len, self._watch),
                                                                                            default=0)])
        self._pieces[first] = self._pieces[first][cut - self._offsets[first]:]
        self._offsets[first] = cut
        del self._pieces[:first], self._offsets[:first]
        self._start, self._kept = cut, self._tail_chars

    def _look_for_watched(self, gone: str, after: str) -> None:
        """Keep the context of each watched string in ``gone`` (or across its end into ``after``)."""
        joined = gone + after
        for word in self._watch:
            at = joined.find(word)
            while 0 <= at < len(gone) and len(self._found) < 20:
                self._found.append(joined[max(0, at - EXCERPT_CHARS):at + len(word) + EXCERPT_CHARS])
                at = joined.find(word, at + len(word))

    def close(self) -> None:
        self.feed(self._decoder.decode(b"", final=True))
        self.eof = True
        self._changed.set()

    @property
    def text(self) -> str:
        """What is kept of the output: all of it while it fits; past that its start, a line
        saying how much was left out (with any watched string found there), and its end."""
        if self._text is None:
            tail = "".join(self._pieces)
            if self._start == 0:
                self._text = tail
            else:
                found = "".join(f"; found there: {excerpt!r}" for excerpt in self._found)
                left_out = self._start - len(self._head)
                self._text = f"{self._head}\n[… {left_out} characters not kept{found} …]\n{tail}"
        return self._text

    def since(self, position: int) -> str:
        """The kept output from ``position`` on (from the kept end's start, if that is later)."""
        offset, window = self._from(position)
        return window[max(position, self._start) - offset:]

    def _from(self, position: int) -> tuple[int, str]:
        """(where it starts, the kept end from the piece holding ``position`` on)."""
        first = max(bisect.bisect_right(self._offsets, position) - 1, 0)
        return (self._offsets[first] if self._offsets else self.end), "".join(self._pieces[first:])

    def search(self, pattern: str | re.Pattern[str], start: int = 0) -> tuple[re.Match[str], int] | None:
        """The first match at or after position ``start`` and the position where it ends, or
        None. A search for the same pattern and start resumes where this one stopped."""
        regex = re.compile(pattern)
        key = (regex.pattern if isinstance(regex.pattern, str) else "", regex.flags, start)
        begin = max(start, self._start, self._scanned.get(key, 0) - LOOKBACK_CHARS)
        offset, window = self._from(begin - 1 if begin > 0 else 0)  # one character before: ^ and \b see it
        match = regex.search(window, begin - offset)
        if match is None:
            self._scanned[key] = self.end
            return None
        return match, offset + match.end()

    async def wait_for(self, pattern: str | re.Pattern[str], *, start: int = 0, what: str) -> re.Match[str]:
        """The first match at or after ``start``; DriverError if the output ends without one."""
        match = await self.match_or_eof(pattern, start=start)
        if match is None:
            raise DriverError(f"the agent's output ended before {what}; last output: {self.tail()!r}")
        return match

    async def match_or_eof(self, pattern: str | re.Pattern[str], *, start: int = 0) -> re.Match[str] | None:
        """The first match at or after ``start``, or None once the output has ended without one."""
        regex = re.compile(pattern)
        while True:
            found = self.search(regex, start)
            if found:
                return found[0]
            if self.eof:
                return None
            self._changed.clear()
            await self._changed.wait()

    async def wait_eof(self) -> None:
        """Returns once the output has ended."""
        while not self.eof:
            self._changed.clear()
            await self._changed.wait()

    def tail(self, n: int = 400) -> str:
        return self.since(self.end - n)


async def pump(stream: asyncio.StreamReader, buffer: OutputBuffer) -> None:
    """Copy a process pipe into a buffer until EOF."""
    try:
        while chunk := await stream.read(65536):
            buffer.feed(chunk)
    finally:
        buffer.close()
