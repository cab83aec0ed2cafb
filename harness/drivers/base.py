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
import glob
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from harness.history import History
from harness.model import ProcessExit, Settlement, StopDelivery, UserInput
from harness.procs import ProcRef
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

    @property
    def session_id(self) -> str | None: ...
    @property
    def log_path(self) -> str | None: ...
    def transcript(self) -> str: ...
    def processes(self) -> list[ProcRef]: ...
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
    async def restart(self, *, expect: str = "ready", text: str = "") -> bool: ...  # True: loaded, at its prompt
    async def close(self) -> None: ...


class DriverBase:
    """Recording and bookkeeping shared by the drivers."""

    name: ClassVar[str] = "base"

    def __init__(self, ctx: AgentContext, history: History):
        self.ctx = ctx
        self.history = history
        self._session_id: str | None = None
        self._log_path: str | None = None

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

    def _discover(self) -> None:
        session = self.ctx.profile.session
        if session.chosen:
            self._session_id = str(self.ctx.values["session_uuid"])
            return
        stdout, stderr = self._outputs()
        for regex, text in ((session.stderr_regex, stderr), (session.stdout_regex, stdout)):
            match = re.search(regex, text) if regex else None
            if match:
                self._session_id = match.group("id")
                if "path" in match.re.groupindex and match.group("path"):
                    self._log_path = match.group("path")
                return
        if session.path_regex:
            path = find_log(self.ctx, None)
            match = re.search(session.path_regex, path) if path else None
            if match:
                self._session_id, self._log_path = match.group("id"), path

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


class OutputBuffer:
    """Text a process printed, with waiters for a regex to appear after a position. The
    waits have no deadline of their own: the step that waits owns it."""

    def __init__(self) -> None:
        self.text = ""
        self.eof = False
        self._changed = asyncio.Event()

    def feed(self, data: bytes | str) -> None:
        self.text += data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        self._changed.set()

    def close(self) -> None:
        self.eof = True
        self._changed.set()

    def search(self, pattern: str | re.Pattern, start: int = 0) -> re.Match | None:
        return re.compile(pattern).search(self.text, start)

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
            m = regex.search(self.text, start)
            if m:
                return m
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
        return self.text[-n:]


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
