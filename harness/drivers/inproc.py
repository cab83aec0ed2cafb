"""The in-process driver: the agent's Python API, loaded by the profile's factory string.

This is where L1 is measured: ``stop()`` is called and its ``mono_ns`` taken in this very
process, and the settlement's ``mono_ns`` comes from the event the agent appends. The agent
is loaded with importlib from ``inproc.factory`` (``"module:function"``), never imported by
name, so the harness does not depend on any agent.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any

from harness.containment.procs import ProcRef
from harness.drivers.base import AgentContext, DriverBase, DriverError, Unsupported
from harness.model import ProcessExit, Settlement, StopDelivery
from harness.model.history import History


def load_factory(spec: str) -> Callable[..., Any]:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise Unsupported(f"in-process factory {spec!r}: cannot import {module_name} ({exc})") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise Unsupported(f"in-process factory {spec!r}: {module_name} has no {attr}") from None


class InprocDriver(DriverBase):
    name = "inproc"

    def __init__(self, ctx: AgentContext, history: History):
        super().__init__(ctx, history)
        if not ctx.profile.inproc_factory:
            raise Unsupported(f"profile {ctx.profile.name!r} has no [inproc] factory")
        self._factory = load_factory(ctx.profile.inproc_factory)
        self._session: Any = None
        self._unsubscribe: Callable[[], None] | None = None
        self._turn: Any = None
        self._turn_no: int | None = None
        self.events: list[dict[str, Any]] = []  # every event the session published, in order
        self._deltas: list[str] = []
        self._ended: set[int] = set()

    def transcript(self) -> str:
        return "".join(e.get("text", "") for e in self.events if e.get("type") == "text_delta")

    def processes(self) -> list[ProcRef]:
        return []

    def turn_running(self) -> bool:
        return self._turn is not None and (self._turn_no not in self._ended)

    def text_since_input(self) -> str:
        return "".join(self._deltas)

    def _on_event(self, event: dict[str, Any]) -> None:
        event = dict(event)
        event.setdefault("mono_ns", time.monotonic_ns())
        self.events.append(event)
        kind = event.get("type")
        if kind == "turn_started":
            self._turn_no = event.get("turn")
        elif kind == "text_delta" and event.get("turn") in (None, self._turn_no):
            self._deltas.append(event.get("text", ""))
        elif kind == "turn_ended" and isinstance(event.get("turn"), int):
            self._ended.add(event["turn"])

    async def _open(self, resume: str | None = None) -> None:
        ctx = self.ctx
        self._session = await self._factory(
            sessions_dir=str(ctx.sessions_dir), cwd=str(ctx.cwd), adapter=ctx.adapter,
            model=ctx.values["model"], base_url=ctx.values["base_url"], api_key=ctx.values["api_key"],
            scenario=ctx.values.get("scenario") if ctx.adapter == "inproc" else None, resume=resume,
        )
        self._session_id = str(self._session.id)
        self._log_path = str(self._session.log_path)
        self._unsubscribe = self._session.subscribe(self._on_event)

    async def send(self, text: str, *, timeout_s: float | None = None, expect: str = "completed") -> None:
        if timeout_s is not None:
            raise Unsupported("the in-process API has no per-turn timeout")
        if self._session is None:
            await self._open()
        if self.turn_running():
            raise DriverError("a turn is still running; queue the text instead")
        self._deltas = []
        self._turn_no = None
        self._record_input(text)
        self._turn = self._session.start_turn(text)

    async def queue(self, text: str) -> str:
        self._record_input(text, queued=True)
        return str(self._session.queue(text))

    async def cancel_queued(self, item_id: str) -> None:
        self._record_input(f"/cancel {item_id}", queued=True)
        self._session.cancel_queued(item_id)

    async def stop(self, source: str, *, phase: str, request: int | None, window: str | None,
                   chunks_seen: int | None = None, signal_name: str | None = None,
                   by: str = "harness") -> StopDelivery:
        if self._turn is None:
            raise DriverError("Stop before any turn was started")
        if signal_name:
            raise Unsupported("an in-process agent is stopped through its API, not by signal")
        running = self.turn_running()
        chunks = len(self._deltas)  # text deltas delivered to this process before Stop: known exactly
        stop_ns = time.monotonic_ns()
        self._turn.stop(source=source)
        return self._record_stop(source, "api", phase, running, stop_ns, request, window, chunks_seen=chunks, by=by)

    async def settle(self) -> Settlement:
        if self._turn is None:
            raise DriverError("nothing to settle: no turn was started")
        ended = await self._turn.settled()
        return self._record_settlement(Settlement(
            mono_ns=ended.get("mono_ns", 0), reason=ended.get("reason"), source=ended.get("source"), how="api"))

    async def exited(self) -> ProcessExit | None:
        return None  # the agent lives in this process

    async def idle(self) -> None:
        """The current turn has settled."""
        if self._turn is not None:
            await self._turn.settled()

    async def kill(self) -> tuple[int, int]:
        raise Unsupported("the in-process driver cannot SIGKILL the agent (it is this process)")

    async def restart(self, *, expect: str = "ready", text: str = "") -> bool:
        raise Unsupported("the in-process driver cannot restart the agent after a kill")

    async def close(self) -> None:
        if self._session is None:
            return
        if self._unsubscribe:
            self._unsubscribe()
        await self._session.close()
