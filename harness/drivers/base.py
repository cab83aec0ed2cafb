"""The one driver protocol, and what every driver shares.

A driver is how the harness talks to the agent: through its Python API (``inproc``), as a
headless process (``subprocess``) or through a terminal (``terminal``). Tasks are written in
one step vocabulary and the runner calls the same methods on every driver; a driver that
cannot do a step (the in-process driver cannot SIGKILL anything) says so with
``Unsupported`` and the task reports it instead of pretending.

Each driver writes what it sees first-hand into the task run's ``History``: the inputs it
sent, each Stop with its ``mono_ns`` taken *before* delivering it (the request), each
settlement it saw (the effect: a turn-ended line, the API's settled event, a process exit),
and process exits. Drivers own no deadlines: every wait here waits for its condition, and
the step that called it bounds it with its budget (``asyncio.timeout``).
"""

from __future__ import annotations

import asyncio
import bisect
import codecs
import glob
import os
import re
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from harness.containment.procs import ProcRef, signal_pid
from harness.model import ProcessExit, Settlement, StopDelivery, UserInput
from harness.model.fit import FitLog
from harness.model.history import History
from harness.profiles import Profile, fill


class DriverError(Exception):
    """The agent did not do what the step waited for (with what was seen instead)."""


class Unsupported(DriverError):
    """This driver cannot perform the step at all."""


class ProfileMisfit(Exception):
    """The profile, not the agent, got something wrong: the harness cannot drive the agent
    the way the profile says (a session it gives no way to name after a kill, a screen
    pattern that never matches a live agent). Reported as such, never as the agent's failure;
    the message says what to fix, ``screen`` what the terminal showed."""

    def __init__(self, message: str, screen: str | None = None):
        super().__init__(message)
        self.screen = screen


@dataclass
class AgentContext:
    """Everything about one task run that a driver needs to start the agent."""

    profile: Profile
    adapter: str
    values: dict[str, Any]  # placeholder values (profiles.PLACEHOLDERS)
    env: dict[str, str]
    sessions_dir: Path
    cwd: Path
    scenario: Any = None  # the loaded scenario object, for in-process factories
    preexec: Callable[[], None] | None = None  # run in every agent process before exec (containment)


class Driver(Protocol):
    """A withdrawal of a queued item is recorded as the input ``/cancel <item_id>`` (queued)."""

    name: ClassVar[str]
    session_found_by: str | None  # which of the profile's rules named the session, and where
    fit: FitLog  # whether what the profile relies on held, noted where it is matched (harness.model.fit)

    @property
    def session_id(self) -> str | None: ...
    @property
    def log_path(self) -> str | None: ...
    @property
    def store_glob(self) -> str | None: ...  # where the profile keeps session stores, filled in
    def transcript(self) -> str: ...
    def processes(self) -> list[ProcRef]: ...
    def screens(self) -> list[dict[str, Any]]: ...  # the rendered screens kept (a terminal's), for the evidence
    def protocol(self) -> dict[str, Any] | None: ...  # the protocol transcript kept (ACP's), for the evidence
    def fit_record(self) -> dict[str, Any]: ...  # the run's profile_fit record, as the evidence holds it
    def turn_running(self) -> bool: ...
    def text_since_input(self) -> str: ...

    async def send(self, text: str, *, timeout_s: float | None = None, expect: str = "completed") -> None: ...
    async def queue(self, text: str) -> str: ...
    async def cancel_queued(self, item_id: str) -> None: ...
    async def stop(self, source: str, *, phase: str, request: int | None, window: str | None,
                   chunks_seen: int | None = None, signal_name: str | None = None,
                   by: str = "harness") -> StopDelivery: ...
    async def settle(self) -> Settlement: ...
    async def idle(self) -> None: ...  # returns once the agent can no longer act on its own
    async def exited(self) -> ProcessExit | None: ...  # the agent's exit, once it has exited on its own
    async def kill(self) -> tuple[int, int]: ...  # (mono_ns, pid)
    def freeze(self) -> int | None: ...  # SIGSTOP the agent now, for a kill that follows: when, or None
    async def restart(self, *, expect: str = "ready", text: str = "") -> bool: ...  # True: loaded, at its prompt
    async def close(self) -> None: ...


class DriverBase:
    """Recording and bookkeeping shared by the drivers."""

    name: ClassVar[str] = "base"
    output_names: ClassVar[tuple[str, str]] = ("stdout", "stderr")  # what ``_outputs`` returns, in words

    def __init__(self, ctx: AgentContext, history: History):
        self.ctx = ctx
        self.history = history
        self._session_id: str | None = None
        self._log_path: str | None = None
        self.session_found_by: str | None = None  # which rule of the profile named the session, and where
        self.fit = FitLog()

    @property
    def session_id(self) -> str | None:
        """The agent's session id, found where the profile says it shows: chosen by the
        harness (``{session_uuid}``), on stderr or stdout (any time, even at exit), or in the
        path of the session file. Looked up when needed, so a line printed late still counts."""
        if self._session_id is None:
            self._discover()
        return self._session_id

    @property
    def log_path(self) -> str | None:
        if self._log_path is None:
            self._discover()
            self._log_path = self._log_path or find_log(self.ctx, self._session_id)
        return self._log_path

    @property
    def store_glob(self) -> str | None:
        """Where the profile says this run's session stores are (its ``log_glob``, filled in):
        where a store that does not exist was looked for. None when the profile does not say."""
        glob_ = self.ctx.profile.session.log_glob
        return fill(glob_, self.ctx.values) if glob_ else None

    def screens(self) -> list[dict[str, Any]]:
        """The rendered screens the run kept; only a terminal has a screen."""
        return []

    def protocol(self) -> dict[str, Any] | None:
        """The messages of a protocol the driver speaks with the agent (ACP), as evidence; None
        for a driver that speaks none."""
        return None

    def fit_record(self) -> dict[str, Any]:
        """The run's ``profile_fit`` record: what the driver noted, and whether the profile's
        session rules named the session (looked up now, so a line printed at exit counts)."""
        session = self.ctx.profile.session
        rules = [f"session.{key}" for key in ("stderr_regex", "stdout_regex", "path_regex") if getattr(session, key)]
        if rules and not session.chosen:
            what, expected = "the session id", "once the agent has started a session"
            if self.session_id is None:
                self.fit.undecided(what, " / ".join(rules), expected, "no rule matched what the agent showed")
            elif self.session_found_by:  # not when the agent's own API told it (in process): no rule was relied on
                self.fit.matched(what, " / ".join(rules), expected, self.session_found_by)
        return self.fit.to_json()

    def freeze(self) -> int | None:
        """Stop the agent's process where it is (SIGSTOP), at once and synchronously, for a
        SIGKILL that follows: the kill then finds exactly what the agent had done at this
        moment, however long the harness takes to get there. The moment, or None when no
        agent process runs (or the driver has none to stop)."""
        pid = self._agent_pid()
        now = time.monotonic_ns()
        return now if pid is not None and signal_pid(pid, signal.SIGSTOP) else None

    def _agent_pid(self) -> int | None:
        """The running agent process a kill would hit; None when there is none."""
        return None

    def _discover(self) -> None:
        session = self.ctx.profile.session
        if session.chosen:
            self._session_id = str(self.ctx.values["session_uuid"])
            self.session_found_by = "chosen by the harness and handed over ({session_uuid})"
            return
        stdout, stderr = self._outputs()
        for key, regex, text, where in (("stderr_regex", session.stderr_regex, stderr, self.output_names[1]),
                                        ("stdout_regex", session.stdout_regex, stdout, self.output_names[0])):
            match = re.search(regex, text) if regex else None
            if match:
                self._session_id = match.group("id")
                self.session_found_by = f"session.{key} on {where}"
                if "path" in match.re.groupindex and match.group("path"):
                    self._log_path = match.group("path")
                return
        if session.path_regex:
            path = find_log(self.ctx, None)
            match = re.search(session.path_regex, path) if path else None
            if match and path:
                self._session_id, self._log_path = match.group("id"), path
                self.session_found_by = f"session.path_regex on the store's file name {Path(path).name}"

    def _outputs(self) -> tuple[str, str]:
        """(stdout, stderr) as printed so far; a terminal has one screen for both."""
        return "", ""

    def _record_input(self, text: str, *, queued: bool = False) -> None:
        self.history.record(UserInput(text=text, mono_ns=time.monotonic_ns(), queued=queued))

    def _record_stop(self, source: str, how: str, phase: str, running: bool, stop_ns: int,
                     request: int | None, window: str | None, chunks_seen: int | None = None,
                     by: str = "harness", missed: str | None = None) -> StopDelivery:
        text = self.text_since_input() if running else None
        delivery = StopDelivery(
            mono_ns=stop_ns, source=source, how=how, phase=phase, exercised=running,
            request=request, window=window, text_seen=text or None, chunks_seen=chunks_seen if running else None,
            by=by, missed=missed,
        )
        self.history.record(delivery)
        return delivery

    def _record_settlement(self, settlement: Settlement) -> Settlement:
        self.history.record(settlement)
        return settlement

    def text_since_input(self) -> str:
        return ""


def find_log(ctx: AgentContext, session_id: str | None) -> str | None:
    """The session log: named by the session id when known, else the newest match of the glob."""
    if not ctx.profile.session.log_glob:
        return None
    matches = sorted(glob.glob(fill(ctx.profile.session.log_glob, ctx.values), recursive=True),
                     key=os.path.getmtime)
    if session_id:
        named = [m for m in matches if session_id in Path(m).name or session_id in Path(m).parent.name]
        if named:
            return named[-1]
    return matches[-1] if matches else None


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


def exit_of(role: str, pid: int, started_ns: int, ended_ns: int, returncode: int, expect: str,
            timeout_s: float | None, stderr: str, argv: tuple[str, ...] = (), stdout: str = "") -> ProcessExit:
    """A ``ProcessExit`` from a Popen-style return code (negative = killed by that signal)."""
    return ProcessExit(
        pid=pid,
        role=role,
        started_ns=started_ns,
        ended_ns=ended_ns,
        returncode=returncode if returncode >= 0 else None,
        signal=-returncode if returncode < 0 else None,
        expect=expect,
        timeout_s=timeout_s,
        stderr_tail=stderr[-2000:],
        argv=argv,
        stdout_tail=stdout[-2000:],
    )


def values_for(ctx: AgentContext, **extra: Any) -> Mapping[str, Any]:
    return {**ctx.values, **{k: v for k, v in extra.items() if v is not None}}
