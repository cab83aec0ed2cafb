"""The subprocess driver: one headless ``run`` process per turn.

A turn is a process: the first ``send`` starts the agent's headless command, a later one
resumes the same session (``resume_options``). Stop is the profile's signal to the agent's
PID; the settlement is the exit code. SIGKILL and restart are real: the process is killed at
a beacon and the next ``send`` starts a new process on the same session.
"""

from __future__ import annotations

import asyncio
import signal
import time

from harness.drivers.base import (
    AgentContext, DriverBase, DriverError, OutputBuffer, Settlement, Unsupported, exit_of, pump, values_for,
)
from harness.model import StopDelivery, UserInput
from harness.procs import ProcRef, kill_tree, signal_pid, spawn


class HeadlessDriver(DriverBase):
    name = "subprocess"

    def __init__(self, ctx: AgentContext):
        super().__init__(ctx)
        if ctx.profile.headless is None:
            raise Unsupported(f"profile {ctx.profile.name!r} has no [headless] command")
        self._proc: asyncio.subprocess.Process | None = None
        self._refs: list[ProcRef] = []
        self._stdout = OutputBuffer()
        self._stderr = OutputBuffer()
        self._all_output: list[OutputBuffer] = []
        self._pumps: list[asyncio.Task] = []
        self._started_ns = 0
        self._expect = "completed"
        self._timeout_s: float | None = None
        self._role = "run"
        self._settlement: Settlement | None = None

    def transcript(self) -> str:
        return "".join(b.text for b in self._all_output)

    def processes(self) -> list[ProcRef]:
        return list(self._refs)

    def turn_running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    def text_since_input(self) -> str:
        return self._stdout.text

    async def send(self, text: str, *, timeout_s: float | None = None, expect: str = "completed") -> None:
        if self.turn_running():
            raise DriverError("a headless run is still going; a new turn would be a second process")
        resume = self._session_id is not None
        self._role = "resume" if resume else "run"
        argv = self.ctx.profile.headless.render(
            values_for(self.ctx, prompt=text, timeout=_seconds(timeout_s), session_id=self._session_id),
            timeout=timeout_s is not None, resume=resume,
        )
        self._stdout, self._stderr = OutputBuffer(), OutputBuffer()
        self._all_output += [self._stdout, self._stderr]
        self._expect, self._timeout_s = expect, timeout_s
        self._settlement = None
        self._started_ns = time.monotonic_ns()
        self.inputs.append(UserInput(text=text, mono_ns=self._started_ns))
        self._proc = await spawn(argv, env=self.ctx.env, cwd=str(self.ctx.cwd))
        self._refs.append(ProcRef.of(self._proc.pid, self._role))
        self._pumps = [
            asyncio.create_task(pump(self._proc.stdout, self._stdout)),
            asyncio.create_task(pump(self._proc.stderr, self._stderr)),
        ]
        regex = self.ctx.profile.session_stderr_regex
        if regex and not resume:
            try:
                match = await self._stderr.wait_for(regex, deadline_s=30, what="the session line on stderr")
            except DriverError:
                if self._proc.returncode is None:
                    raise
                return  # the process ended at once; settle() reports the exit
            self._found_session(match)

    async def queue(self, text: str) -> str:
        raise Unsupported("a headless run takes no input while it runs")

    async def cancel_queued(self, item_id: str) -> None:
        raise Unsupported("a headless run takes no input while it runs")

    async def stop(self, source: str, *, phase: str, request: int | None, window: str | None) -> StopDelivery:
        if self._proc is None:
            raise DriverError("Stop before any turn was started")
        signame = signal.Signals(self.ctx.profile.stop_signal).name
        running = self.turn_running()
        stop_ns = time.monotonic_ns()
        delivered = running and signal_pid(self._proc.pid, self.ctx.profile.stop_signal)
        self._expect = "stopped"
        return self._record_stop(source, f"signal:{signame}", phase, delivered, stop_ns, request, window)

    async def settle(self, deadline_s: float) -> Settlement:
        if self._proc is None:
            raise DriverError("nothing to settle: no turn was started")
        if self._settlement is not None:
            return self._settlement
        try:
            returncode = await asyncio.wait_for(self._proc.wait(), deadline_s)
        except TimeoutError:
            raise DriverError(
                f"the agent (pid {self._proc.pid}) did not exit within {deadline_s:g} s; "
                f"stderr: {self._stderr.tail()!r}"
            ) from None
        ended_ns = time.monotonic_ns()
        await asyncio.gather(*self._pumps)
        exit_ = exit_of(self._role, self._proc.pid, self._started_ns, ended_ns, returncode, self._expect,
                        self._timeout_s, self._stderr.text)
        self.exits.append(exit_)
        reason = _reason_for(self.ctx.profile.exit_codes, returncode)
        self._settlement = Settlement(reason=reason, source=None, mono_ns=ended_ns, exit=exit_)
        return self._settlement

    async def idle(self) -> None:
        """The run process has exited (a headless agent acts only while its process runs)."""
        if self._proc is not None:
            await self._proc.wait()

    async def kill(self) -> tuple[int, int]:
        if not self.turn_running():
            raise DriverError("SIGKILL asked for, but the agent process had already exited")
        self._expect = "killed"
        kill_ns = time.monotonic_ns()
        signal_pid(self._proc.pid, signal.SIGKILL)
        await self.settle(deadline_s=30)
        return kill_ns, self._proc.pid

    async def restart(self, *, expect: str = "ready", deadline_s: float = 30, text: str = "") -> bytes | None:
        """A headless agent loads its session only when a turn starts, so a plain restart is
        the next ``send`` (which resumes). With ``expect="refused"`` (a damaged log) the
        resume run is started now with ``text`` and must exit without a turn."""
        if self._session_id is None:
            raise DriverError("restart asked for, but the agent never named its session")
        if expect == "refused":
            await self.send(text, expect="refused")
            await self.settle(deadline_s)
        return None

    async def close(self) -> None:
        for ref in self._refs:
            await asyncio.to_thread(kill_tree, ref)
        if self._proc is not None and self._proc.returncode is None:
            await self._proc.wait()
        for task in self._pumps:
            await task


def _seconds(timeout_s: float | None) -> str | None:
    if timeout_s is None:
        return None
    return f"{timeout_s:g}"


def _reason_for(exit_codes: dict[str, int], returncode: int) -> str | None:
    reasons = [reason for reason, code in exit_codes.items() if code == returncode]
    return reasons[0] if len(reasons) == 1 else None

