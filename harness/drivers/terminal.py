"""The terminal driver: the agent's interactive mode in a pseudo-terminal (pexpect).

It reads the terminal as the user would: waits for the prompt, types, presses the profile's
stop keys during a turn, and recognises the turn's end. The pty's output is read by an
event-loop reader (no thread, no polling), so waiting for "the prompt" or "turn ended" is a
wait on the text itself. Line-oriented agents are matched on the raw stream; full-screen UIs
(``match_on = "screen"``) on a rendered screen kept beside it (``harness.drivers.screen``):
a turn's end is its turn-ended line below the turn's input there, or, for a UI that shows no
such line, its busy indicator disappearing. The rendered screen as each wait ended, and as the
run ended, goes into the run's evidence (``screens``, kept by ``harness.drivers.terminal_waits``
with the profile fit of each wait): what the harness saw. The pseudo-terminal itself —
starting it, reading it on the event loop, closing it — is ``harness.drivers.pseudo_terminal``.
"""

from __future__ import annotations

import asyncio
import re
import signal
import time
from functools import partial
from typing import Any

import pexpect

from harness.containment.procs import ProcRef, kill_tree, signal_pid
from harness.contract import TURN_END_REASONS
from harness.drivers.base import AgentContext, DriverBase, DriverError, Unsupported, values_for
from harness.drivers.output import OutputBuffer
from harness.drivers.pseudo_terminal import (
    ANSI,
    COLUMNS,
    KEYS,
    LINES,
    exit_within,
    open_terminal,
    read_on_loop,
    retire,
    stop_reading,
)
from harness.drivers.screen import Screen
from harness.drivers.terminal_waits import WaitEvidence
from harness.model import ProcessExit, Settlement, StopDelivery
from harness.model.history import History

QUIT_GRACE_S = 5.0  # failsafe: an agent that ignores the quit keys is killed after this
EXIT_AFTER_EOF_S = 5.0  # failsafe: how long an agent whose terminal closed is given to exit


class TerminalDriver(DriverBase):
    name = "terminal"
    output_names = ("the terminal", "the terminal")  # one screen for both

    def __init__(self, ctx: AgentContext, history: History):
        super().__init__(ctx, history)
        if ctx.profile.interactive is None:
            raise Unsupported(f"profile {ctx.profile.name!r} has no [interactive] command")
        self.spec = ctx.profile.interactive
        # What the driver is waiting to see, and the profile's pattern for it, while it waits:
        # a pattern that never matches a live, answering agent is the profile's problem.
        self.awaiting: tuple[str, str] | None = None
        self._child: pexpect.spawn | None = None
        self._raw = OutputBuffer()
        self._raws: list[OutputBuffer] = []
        self._refs: list[ProcRef] = []
        self._started_ns = 0
        self._input_at = 0  # screen position right after the last typed turn input
        self._input_mark = ""  # the last line of the current turn's input, as it shows on screen
        self._settle_from = 0  # where the current turn's settlement line is looked for
        self._running = False
        self._argv: tuple[str, ...] = ()
        self._view = Screen(COLUMNS, LINES)  # the rendered screen (matched on for full-screen UIs)
        self._waits = WaitEvidence(self.spec, self.fit, lambda: self._view)  # what each wait saw, as evidence
        self._on_screen = self.spec.match_on == "screen"
        self._busy_seen = False  # the busy indicator showed since the last input
        self._queued = 0

    # -- observation ---------------------------------------------------------------------
    def transcript(self) -> str:
        return "".join(ANSI.sub("", s.text) for s in self._raws)

    def processes(self) -> list[ProcRef]:
        return list(self._refs)

    def screens(self) -> list[dict[str, Any]]:
        return self._waits.to_json()

    def turn_running(self) -> bool:
        if self._running and self._turn_end() is not None:
            self._running = False
        return self._running

    def _turn_end(self) -> tuple[str, int] | None:
        """How the current turn has visibly ended — a line for the settlement, and where the
        raw stream may look for the next prompt — or None.

        A line-oriented UI prints its turn-ended line in order. On a full-screen UI the line is
        looked for on the rendered screen below the turn's input (a UI that repaints only the
        cells that changed never writes the line whole into the raw stream); a UI that shows
        no such line — or whose turn has scrolled its input off the screen — ends a turn by
        its busy indicator, seen since the input, going away."""
        regex = re.compile(self.spec.turn_ended_regex) if self.spec.turn_ended_regex else None
        if not self._on_screen:
            hit = self._raw.search(regex, self._settle_from) if regex else None
            return (ANSI.sub("", hit[0].group(0)), hit[1]) if hit else None
        below = self._below_input() if regex else None
        if regex and below is not None:  # the line, not the indicator: some UIs clear it before they draw the line
            found = regex.search(below)
            return (found.group(0), self._raw.end) if found else None
        # No such line, or the turn's output has pushed its input off the screen: the indicator.
        if self.spec.busy_regex and self._busy_seen and not self._view.shows(self.spec.busy_regex):
            return "busy indicator gone", self._raw.end
        return None

    def _outputs(self) -> tuple[str, str]:
        screen = self.transcript()
        return screen, screen

    def text_since_input(self) -> str:
        below = self._below_input() if self._on_screen else None
        return below if below is not None else ANSI.sub("", self._raw.since(self._input_at))

    def _below_input(self) -> str | None:
        """The rendered screen below the last line showing the current turn's input — where a
        full-screen UI draws that turn's output — or None when the input is not on screen."""
        if not self._input_mark:
            return None
        lines = self._view.text().splitlines()
        for row in range(len(lines) - 1, -1, -1):
            if self._input_mark in lines[row]:
                return "\n".join(lines[row + 1:])
        return None

    # -- process ---------------------------------------------------------------------------
    async def _spawn(self, *, resume: bool) -> None:
        argv = self.spec.render(values_for(self.ctx, session_id=self.session_id if resume else None), resume=resume)
        if self._child is not None:
            retire(self._child)
        self._raw = OutputBuffer(watch=(str(self.ctx.values.get("api_key") or ""),))
        self._raws.append(self._raw)
        self._view = Screen(COLUMNS, LINES)
        self._started_ns = time.monotonic_ns()
        self._child = open_terminal(argv, env=self.ctx.env, cwd=str(self.ctx.cwd), preexec=self.ctx.preexec)
        self._argv = tuple(argv)
        self._refs.append(ProcRef.of(self._child.pid, "resume" if resume else "chat"))
        read_on_loop(self._child, partial(self._took, self._raw, self._view),
                     partial(_close_both, self._raw, self._view))

    def _took(self, raw: OutputBuffer, view: Screen, data: bytes) -> None:
        """What a terminal wrote, into its own buffers (each terminal's reader feeds its own, so
        a late end-of-file of an earlier terminal never touches the current one's)."""
        raw.feed(data)
        view.feed(data)
        if self._running and self.spec.busy_regex and view.shows(self.spec.busy_regex):
            self._busy_seen = True

    async def _ready(self) -> None:
        """Wait for the prompt after the last settlement (or start), and the session line."""
        if self._child is None:
            await self._spawn(resume=False)
        self.awaiting = ("the prompt", self.spec.prompt_regex)
        if self._on_screen:
            if not await self._waits.watched("the prompt", self._view.wait(self._at_prompt)):
                raise DriverError(f"the terminal closed before the prompt; last screen: {self._view.text()[-400:]!r}")
            self.awaiting = None
            return
        start = self._settle_from if not self._running else self._input_at
        await self._waits.watched("the prompt", self._raw.wait_for(self.spec.prompt_regex, start=start,
                                                                   what="the prompt"))
        self.awaiting = None

    def screen(self) -> str:
        """What the terminal shows now: the rendered screen, or the tail of a line-oriented UI's output."""
        return self._view.text() if self._on_screen else ANSI.sub("", self._raw.text[-4000:])

    def _at_prompt(self) -> bool:
        """The rendered screen shows the prompt and no busy indicator."""
        return self._view.shows(self.spec.prompt_regex) and not self._view.shows(self.spec.busy_regex)

    def _type(self, text: str) -> None:
        assert self._child is not None
        self._child.send(text.encode("utf-8"))

    # -- steps -------------------------------------------------------------------------------
    async def send(self, text: str, *, timeout_s: float | None = None, expect: str = "completed") -> None:
        if timeout_s is not None:
            raise Unsupported("the interactive mode has no per-turn timeout")
        await self._ready()
        self._input_at = self._raw.end
        self._settle_from = self._input_at
        self._busy_seen = False
        self._input_mark = _mark(text)
        self._record_input(text)
        await self._submit(text)
        self._running = True

    async def _submit(self, text: str) -> None:
        """Type ``text`` and Enter; on a full-screen UI, Enter is its own keystroke once the
        text shows on screen (typed in one write, some UIs take it as a paste)."""
        if not self._on_screen:
            self._type(text + KEYS["enter"])
            return
        shown = _mark(text)
        before = self._view.text().count(shown)
        self._type(text)
        if shown and not await self._waits.watched("the typed text",
                                                   self._view.wait(lambda: self._view.text().count(shown) > before)):
            raise DriverError(f"the terminal closed before the typed text showed; last screen: "
                              f"{self._view.text()[-400:]!r}")
        self._type(KEYS["enter"])

    async def queue(self, text: str) -> str:
        if not self.spec.queued_regex:
            raise Unsupported("the profile names no queued_regex: queueing cannot be observed")
        start = self._raw.end
        regex = re.compile(self.spec.queued_regex)
        before = len(regex.findall(self._view.text())) if self._on_screen else 0
        self._record_input(text, queued=True)
        await self._submit(text)
        self._queued += 1
        self.awaiting = ("the queued acknowledgement", self.spec.queued_regex)
        if self._on_screen:  # one more queued item on screen than before
            if not await self._waits.watched("the queued acknowledgement",
                                             self._view.wait(lambda: len(regex.findall(self._view.text())) > before)):
                raise DriverError("the terminal closed before the queued acknowledgement")
            self.awaiting = None
            return str(self._queued)
        match = await self._waits.watched("the queued acknowledgement", self._raw.wait_for(
            self.spec.queued_regex, start=start, what="the queued acknowledgement"))
        self.awaiting = None
        # A UI that shows no item ids: items are named by their position, for {item_id} in the cancel command.
        return match.group("item_id") if "item_id" in match.re.groupindex else str(self._queued)

    async def cancel_queued(self, item_id: str) -> None:
        if not self.spec.cancel_command:
            raise Unsupported("the profile names no cancel_command")
        self._record_input(f"/cancel {item_id}", queued=True)
        self._type(self.spec.cancel_command.format(item_id=item_id) + KEYS["enter"])

    async def stop(self, source: str, *, phase: str, request: int | None, window: str | None,
                   chunks_seen: int | None = None, signal_name: str | None = None,
                   by: str = "harness") -> StopDelivery:
        if self._child is None:
            raise DriverError("Stop before the agent was started")
        if signal_name:
            raise Unsupported("a terminal is stopped by keys, not signals")
        keys = "".join(KEYS[k] for k in self.spec.stop_keys)
        running = self.turn_running()
        stop_ns = time.monotonic_ns()
        self._type(keys)
        return self._record_stop(source, "key:" + "+".join(self.spec.stop_keys), phase, running, stop_ns,
                                 request, window, chunks_seen=chunks_seen, by=by)

    async def settle(self) -> Settlement:
        self.awaiting = ("the turn's end", self.spec.turn_ended_regex or f"{self.spec.busy_regex} going away")
        if not await self._waits.watched("the turn's end", self._view.wait(lambda: self._turn_end() is not None)):
            raise DriverError(f"the agent's output ended before the turn-ended line; last output: {self._raw.tail()!r}")
        self.awaiting = None
        ended = self._turn_end()
        assert ended is not None
        line, self._settle_from = ended
        self._running = False
        match = re.search(self.spec.turn_ended_regex, line) if self.spec.turn_ended_regex else None
        groups = match.groupdict() if match else {}
        # The reason is the text of a group named "reason", or the name of the group that
        # matched, for a UI whose wording differs by reason ((?P<aborted>Interrupted)).
        reason = groups.get("reason") or next((r for r in TURN_END_REASONS if groups.get(r) is not None), None)
        return self._record_settlement(Settlement(
            mono_ns=time.monotonic_ns(), reason=reason, source=groups.get("source"),
            how=f"screen: {line}", pid=self._child.pid if self._child else None))

    async def idle(self) -> None:
        """The current turn has visibly ended, or the terminal closed."""
        if self._running:
            await self._view.wait(lambda: self._turn_end() is not None)

    async def exited(self) -> ProcessExit | None:
        """The agent's exit, once it has exited. An agent whose terminal closed is exiting:
        its exit is awaited, so a wait that failed on the closed terminal is the agent's exit."""
        if self._child is None:
            return None
        if self._raw.eof and self._child.isalive():
            await exit_within(self._child.pid, EXIT_AFTER_EOF_S)
        if self._child.isalive():
            return None
        if self._refs and not any(e.pid == self._child.pid for e in self.history.of(ProcessExit)):
            await self._reap("completed")
        return self.history.last(ProcessExit)

    def _agent_pid(self) -> int | None:
        return self._child.pid if self._child is not None and self._child.isalive() else None

    async def kill(self) -> tuple[int, int]:
        if self._child is None or not self._child.isalive():
            raise DriverError("SIGKILL asked for, but the agent process had already exited")
        pid = self._child.pid
        kill_ns = time.monotonic_ns()
        signal_pid(pid, signal.SIGKILL)
        await self._reap("killed")
        self._running = False
        return kill_ns, pid

    async def restart(self, *, expect: str = "ready", text: str = "") -> bool:
        """Start the interactive mode again on the same session; True once it has loaded it
        and shows its prompt (the moment the store is captured "after load").

        With ``expect="refused"`` the agent must exit instead (a damaged log); its exit is
        recorded and False returned.
        """
        if self.session_id is None and self.spec.needs_session_id:
            raise DriverError("restart asked for, but the agent never named its session")
        if self._child is not None and self._child.isalive():
            raise DriverError("restart asked for while the agent is still running")
        self._running = False
        self._settle_from = 0
        await self._spawn(resume=True)
        if expect == "refused":
            assert self._child is not None
            prompted = await self._waits.watched("the prompt", self._view.wait(self._at_prompt) if self._on_screen
                                                 else self._prompt_or_eof())
            if prompted:  # it accepted the damaged log: end it, the checks judge the exit
                signal_pid(self._child.pid, signal.SIGKILL)
            await self._reap("refused")
            return False
        await self._ready()
        return True

    async def _prompt_or_eof(self) -> bool:
        """True once the raw stream shows the prompt, False once it ended without one."""
        return await self._raw.match_or_eof(self.spec.prompt_regex) is not None

    async def _reap(self, expect: str) -> ProcessExit:
        child = self._child
        assert child is not None
        await asyncio.to_thread(child.wait)
        ended_ns = time.monotonic_ns()
        exit_ = ProcessExit(
            pid=child.pid, role=self._refs[-1].role, started_ns=self._started_ns, ended_ns=ended_ns,
            returncode=child.exitstatus, signal=child.signalstatus, expect=expect,
            stderr_tail=ANSI.sub("", self._raw.tail(2000)), argv=self._argv,
        )
        self.history.record(exit_)
        return exit_

    async def close(self) -> None:
        """Quit as a user would (the quit keys at the prompt), then end every process by PID."""
        child = self._child
        if child is not None:
            self._waits.take("the run's end, before quitting")
        if child is not None and child.isalive() and not self.turn_running() and self.spec.quit_keys:
            self._type("".join(KEYS[k] for k in self.spec.quit_keys))
            try:  # a failsafe: an agent that does not quit is killed below
                await asyncio.wait_for(self._raw.wait_eof(), QUIT_GRACE_S)
            except TimeoutError:
                pass
        if child is not None:
            stop_reading(child)
        for ref in self._refs:
            await asyncio.to_thread(kill_tree, ref)
        if child is not None:
            if child.isalive():
                await asyncio.to_thread(child.wait)
            child.close(force=True)


def _mark(text: str) -> str:
    """What of a typed input is looked for on screen: the tail of its last line."""
    return text.strip().splitlines()[-1][-40:] if text.strip() else ""


def _close_both(raw: OutputBuffer, view: Screen) -> None:
    raw.close()
    view.close()
