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

import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from harness.containment.procs import ProcRef, signal_pid
from harness.drivers.sessions import discover_session, find_log
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
        found = discover_session(self.ctx, self._outputs, self.output_names)
        if found is not None:
            self._session_id, self.session_found_by = found.session_id, found.found_by
            self._log_path = found.log_path or self._log_path

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
