"""The subprocess driver: one headless ``run`` process per turn.

A turn is a process: the first ``send`` starts the agent's headless command, a later one
resumes the same session (``resume_options``). Stop is the profile's signal to the agent's
process group, as a terminal's Ctrl-C reaches the foreground group, so an agent that relaunched
itself as a child is stopped where it streams (a Stop that still missed the process holding
the model connection says so); the settlement is the exit code. SIGKILL and restart are real:
the process is killed at a beacon and the next ``send`` starts a new process on the same session.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

from harness.containment.procs import ExitStamp, ProcRef, kill_tree, signal_group, signal_pid, spawn
from harness.containment.sockets import connection_holders
from harness.drivers.base import AgentContext, DriverBase, DriverError, ProfileMisfit, Unsupported, exit_of, values_for
from harness.drivers.output import OutputBuffer, pump
from harness.model import ProcessExit, Settlement, StopDelivery
from harness.model.history import History
from harness.profiles import fill


class HeadlessDriver(DriverBase):
    name = "subprocess"

    def __init__(self, ctx: AgentContext, history: History):
        super().__init__(ctx, history)
        if ctx.profile.headless is None:
            raise Unsupported(f"profile {ctx.profile.name!r} has no [headless] command")
        self.spec = ctx.profile.headless
        self._proc: asyncio.subprocess.Process | None = None
        self._exit_stamp: ExitStamp | None = None
        self._argv: tuple[str, ...] = ()
        self._refs: list[ProcRef] = []
        self._stdout = OutputBuffer()
        self._stderr = OutputBuffer()
        self._all_output: list[OutputBuffer] = []
        self._pumps: list[asyncio.Task[None]] = []
        self._started_ns = 0
        self._expect = "completed"
        self._timeout_s: float | None = None
        self._role = "run"
        self._settlement: Settlement | None = None
        self._runs = 0  # processes started: every one after the first resumes the session

    def transcript(self) -> str:
        return "".join(b.text for b in self._all_output)

    def processes(self) -> list[ProcRef]:
        return list(self._refs)

    def turn_running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    def _agent_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self.turn_running() else None

    def text_since_input(self) -> str:
        return self._stdout.text

    def _outputs(self) -> tuple[str, str]:
        return ("".join(b.text for b in self._all_output[0::2]), "".join(b.text for b in self._all_output[1::2]))

    async def send(self, text: str, *, timeout_s: float | None = None, expect: str = "completed") -> None:
        if self.turn_running():
            raise DriverError("a headless run is still going; a new turn would be a second process")
        resume = self._runs > 0
        if resume and self.session_id is None and self.spec.needs_session_id:
            self._unnamed_session()
        self._runs += 1
        self._role = "resume" if resume else "run"
        own_timeout = timeout_s is not None and bool(self.spec.timeout_options)
        values = values_for(self.ctx, prompt=text, timeout=_seconds(timeout_s), session_id=self.session_id)
        argv = self.spec.render(values, timeout=own_timeout, resume=resume)
        self._argv = tuple(argv)
        watch = (str(self.ctx.values.get("api_key") or ""),)  # a key printed is kept even in a long output
        self._stdout, self._stderr = OutputBuffer(watch), OutputBuffer(watch)
        self._all_output += [self._stdout, self._stderr]
        self._expect, self._timeout_s = expect, timeout_s
        self._settlement = None
        self._started_ns = time.monotonic_ns()
        self._record_input(text)
        self._proc = await spawn(argv, env=self.ctx.env, cwd=str(self.ctx.cwd), preexec=self.ctx.preexec,
                                 stdin=asyncio.subprocess.PIPE if self.spec.stdin is not None
                                 else asyncio.subprocess.DEVNULL)
        self._refs.append(ProcRef.of(self._proc.pid, self._role))
        if self._exit_stamp is not None:
            self._exit_stamp.close()
        self._exit_stamp = ExitStamp(self._proc.pid)  # the exit's time, sooner than the child watcher
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._pumps = [
            asyncio.create_task(pump(self._proc.stdout, self._stdout)),
            asyncio.create_task(pump(self._proc.stderr, self._stderr)),
        ]
        if self.spec.stdin is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.write(fill(self.spec.stdin, values).encode())
            self._proc.stdin.close()

    async def queue(self, text: str) -> str:
        raise Unsupported("a headless run takes no input while it runs")

    async def cancel_queued(self, item_id: str) -> None:
        raise Unsupported("a headless run takes no input while it runs")

    async def stop(self, source: str, *, phase: str, request: int | None, window: str | None,
                   chunks_seen: int | None = None, signal_name: str | None = None,
                   by: str = "harness") -> StopDelivery:
        if self._proc is None:
            raise DriverError("Stop before any turn was started")
        sig = signal.Signals[signal_name] if signal_name else signal.Signals(self.ctx.profile.stop_signal)
        # Who holds the model connection, looked up just before the Stop (whom it reaches does
        # not change with it): after it, the lookup would share the loop with the latency timed.
        holders = await self._holders() if phase == "stream" and self.turn_running() else None
        running = self.turn_running()
        stop_ns = time.monotonic_ns()
        # As a terminal's Ctrl-C (or CI's `timeout`) does: to the agent's whole process group.
        delivered = running and signal_group(self._proc.pid, sig)
        self._expect = "timeout" if source == "timeout" else "stopped"
        how = f"{'watchdog' if by == 'watchdog' else 'signal'}:{sig.name}"
        missed = self._missed_holder(sig, holders) if delivered and holders is not None else None
        return self._record_stop(source, how, phase, delivered, stop_ns, request, window,
                                 chunks_seen=chunks_seen, by=by, missed=missed)

    async def _holders(self) -> list[tuple[int, int, str]] | None:
        """The processes of the agent's tree holding the model connection (None: no port to look for)."""
        assert self._proc is not None
        port = urlsplit(str(self.ctx.values.get("base_url", ""))).port
        return None if port is None else await asyncio.to_thread(connection_holders, self._proc.pid, port)

    def _missed_holder(self, sig: signal.Signals, holders: list[tuple[int, int, str]]) -> str | None:
        """Which process holds the model connection, when the Stop just sent to the agent's
        process group did not reach it. The answer goes into the run's profile fit either way:
        the signalled process is the one that talks to the model, or it is not (with the
        holders: the process tree that shows it)."""
        assert self._proc is not None
        what, rule = "the signalled process holds the model connection", f"{sig.name} to the agent's process group"
        expected = "at a Stop while the model streams"
        if not holders:  # already let go of when the Stop came
            self.fit.matched(what, rule, expected, "no process held the model connection when the Stop came")
            return None
        if any(group == self._proc.pid for _, group, _ in holders):
            self.fit.matched(what, rule, expected, f"process group {self._proc.pid} holds it")
            return None
        pid, group, command = holders[0]
        missed = (f"the {sig.name} went to process group {self._proc.pid}, but the process holding the model "
                  f"connection, pid {pid} ({command}), is in group {group} and did not get it")
        self.fit.missed(what, rule, expected, missed, signalled_group=self._proc.pid, holders=[
            {"pid": p, "group": g, "command": c} for p, g, c in holders])
        return missed

    async def settle(self) -> Settlement:
        """Wait for the run process to exit: its exit code is the settlement a headless run shows."""
        if self._proc is None:
            raise DriverError("nothing to settle: no turn was started")
        if self._settlement is not None:
            return self._settlement
        returncode = await self._proc.wait()
        ended_ns = time.monotonic_ns()
        if self._exit_stamp is not None:
            ended_ns = self._exit_stamp.ns or ended_ns
            self._exit_stamp.close()
        await asyncio.gather(*self._pumps)
        exit_ = exit_of(self._role, self._proc.pid, self._started_ns, ended_ns, returncode, self._expect,
                        self._timeout_s, self._stderr.text, argv=self._argv, stdout=self._stdout.text)
        self.history.record(exit_)
        reason = _reason_for(self.ctx.profile.exit_codes, returncode)
        how = f"exit {returncode}" if returncode >= 0 else f"signal {-returncode}"
        self._settlement = self._record_settlement(
            Settlement(mono_ns=ended_ns, reason=reason, source=None, how=how, pid=self._proc.pid))
        return self._settlement

    async def idle(self) -> None:
        """The run process has exited (a headless agent acts only while its process runs)."""
        if self._proc is not None:
            await self._proc.wait()

    async def exited(self) -> ProcessExit | None:
        if self._proc is None or self._proc.returncode is None:
            return None
        await self.settle()
        return self.history.last(ProcessExit)

    async def kill(self) -> tuple[int, int]:
        if self._proc is None or not self.turn_running():
            raise DriverError("SIGKILL asked for, but the agent process had already exited")
        self._expect = "killed"
        kill_ns = time.monotonic_ns()
        signal_pid(self._proc.pid, signal.SIGKILL)
        await self.settle()
        return kill_ns, self._proc.pid

    async def restart(self, *, expect: str = "ready", text: str = "") -> bool:
        """A headless agent loads its session only when a turn starts, so a plain restart is
        the next ``send`` (which resumes): nothing is loaded yet (False). With
        ``expect="refused"`` (a damaged log) the resume run is started now with ``text`` and
        must exit without a turn."""
        if self.session_id is None and self.spec.needs_session_id:
            self._unnamed_session()
        if expect == "refused":
            await self.send(text, expect="refused")
            await self.settle()
        return False

    def _unnamed_session(self) -> None:
        """No session id to resume by: the profile's fault when the harness's own SIGKILL ended
        the only process that could have named it (an agent that tells its id at exit)."""
        if self._expect == "killed":
            self.fit.missed("the session id", "resume_options with {session_id}", "before the resume after a kill",
                            "the agent had not told its session id when the harness SIGKILLed it")
            raise ProfileMisfit(
                "cannot resume: the profile gives no way to name the session after a kill (the agent had not told "
                "its session id when the harness SIGKILLed it, and resume_options resume by {session_id}); fix the "
                "profile: resume the latest session instead (a --continue-style option, no {session_id}), or name "
                "the session some other way the agent offers")
        raise DriverError("the agent never named its session, so it cannot be resumed by id")

    async def close(self) -> None:
        if self._exit_stamp is not None:
            self._exit_stamp.close()
        hung = self._proc is not None and self._proc.returncode is None
        for ref in self._refs:
            await asyncio.to_thread(kill_tree, ref)
        if self._proc is not None and self._proc.returncode is None:
            await self._proc.wait()
        for task in self._pumps:
            await task
        if hung and self._proc is not None and self._proc.returncode is not None:
            # A run still alive when the steps ended (it never exited within a step's budget) is
            # ended here: its end is part of what was observed (its turn was open when it died).
            self.history.record(exit_of(self._role, self._proc.pid, self._started_ns, time.monotonic_ns(),
                                        self._proc.returncode, "killed", self._timeout_s, self._stderr.text,
                                        argv=self._argv, stdout=self._stdout.text))


def _seconds(timeout_s: float | None) -> str | None:
    if timeout_s is None:
        return None
    return f"{timeout_s:g}"


def _reason_for(exit_codes: Mapping[str, int], returncode: int) -> str | None:
    reasons = [reason for reason, code in exit_codes.items() if code == returncode]
    return reasons[0] if len(reasons) == 1 else None

