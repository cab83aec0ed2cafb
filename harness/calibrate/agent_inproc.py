"""stopbench's calibration agent, in-process: the factory the in-process driver loads.

``open_session(**kwargs)`` gives a session whose turns stream OpenAI Chat Completions from the
server and run the bash tool on asyncio, like the headless agent (``agent.py``, whose wire
``agent_wire.py`` and process-group tools ``agent_tool_group.py`` this shares — standard library
only, nothing of the harness). ``turn.stop()`` returns at once;
the action runs on the loop's next pass, exactly D (``STOPBENCH_CAL_DELAY_MS``, a spin) after
the ``stop()`` call: the stream is shut and the settlement stamped at that moment, or the tool's
process group is SIGKILLed and the settlement stamped once every member is gone. Its own
stamps of each settled turn are kept in ``STAMPS`` (by session id) for a calibration to read.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .agent import MAX_STEPS, OUTPUT_MAX, delay_ns_from_env, spin_until, tool_env
from .agent_tool_group import GONE_FAILSAFE_S, Group, kill_group
from .agent_wire import BASH_TOOL, ModelError, ResponseParser, Step, command_of, http_request

Subscriber = Callable[[dict[str, Any]], None]
RECENT_SESSIONS = 64
# The agent's own stamps of each settled turn, by session id (the last RECENT_SESSIONS
# sessions): what a calibration reads to take a figure apart, as the headless agent's stderr.
STAMPS: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()


async def open_session(*, sessions_dir: str | None = None, cwd: str | None = None, adapter: str = "http",
                       model: str = "stopbench-1", base_url: str | None = None, api_key: str | None = None,
                       scenario: str | None = None, resume: str | None = None) -> Session:
    """The in-process factory (``[inproc] factory`` of the calibration profile)."""
    if adapter != "http":
        raise ValueError(f"the calibration agent streams over http only, not adapter {adapter!r}")
    if resume is not None:
        raise ValueError("the calibration agent keeps no sessions to resume")
    if not base_url:
        raise ValueError("base_url is required")
    return Session(sessions_dir=Path(sessions_dir or "."), cwd=cwd or os.getcwd(), model=model, base_url=base_url,
                   api_key=api_key or "", delay_ns=delay_ns_from_env())


class Session:
    def __init__(self, *, sessions_dir: Path, cwd: str, model: str, base_url: str, api_key: str, delay_ns: int):
        self.id = f"cal-{os.urandom(4).hex()}"
        # Never written: the events stay in memory (the profile has no log reader). A write here
        # would take the host process's time just when stopbench's server must notice the shut
        # stream — and a write in a thread would contend for the GIL with it.
        self.log_path = sessions_dir / f"{self.id}.jsonl"
        self.cwd, self.model, self.base_url, self.api_key, self.delay_ns = cwd, model, base_url, api_key, delay_ns
        self._subscribers: list[Subscriber] = []
        self._events: list[dict[str, Any]] = []
        self._queued: dict[str, str] = {}
        self.turn: Turn | None = None
        self._turns = 0
        self._closed = False

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def publish(self, event: dict[str, Any]) -> dict[str, Any]:
        event.setdefault("mono_ns", time.monotonic_ns())
        self._events.append(event)
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception as exc:  # noqa: BLE001 - a subscriber never breaks the turn
                print(f"cal-agent: subscriber failed: {exc}", file=sys.stderr)
        return event

    def start_turn(self, text: str) -> Turn:
        if self._closed:
            raise RuntimeError("the session is closed")
        if self.turn is not None and not self.turn.done:
            raise RuntimeError("a turn is still running")
        self._turns += 1
        inbox = list(self._queued.values())
        self._queued.clear()
        self.turn = Turn(self, self._turns, "\n\n".join([*inbox, text]))
        return self.turn

    def queue(self, text: str) -> str:
        item_id = f"q-{os.urandom(3).hex()}"
        self._queued[item_id] = text
        self.publish({"type": "inbox_queued", "item_id": item_id})
        return item_id

    def cancel_queued(self, item_id: str) -> None:
        if self._queued.pop(item_id, None) is None:
            raise KeyError(f"no queued item {item_id!r}")
        self.publish({"type": "inbox_canceled", "item_id": item_id})

    async def close(self) -> None:
        if self._closed:
            return
        if self.turn is not None and not self.turn.done:
            self.turn.stop("disposed")
            await self.turn.settled()
        self._closed = True


class Turn:
    def __init__(self, session: Session, number: int, text: str):
        self.session, self.number = session, number
        self.loop = asyncio.get_running_loop()
        self.phase = "starting"
        self.sock: socket.socket | None = None
        self.tool: asyncio.subprocess.Process | None = None
        self.group: Group | None = None
        self.stop_ns: int | None = None
        self.stop_source: str | None = None
        self.stamps: dict[str, Any] = {"delay": session.delay_ns}
        self._settled: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        session.publish({"type": "turn_started", "turn": number, "input": text})
        self._task = self.loop.create_task(self._run(text))

    @property
    def done(self) -> bool:
        return self._settled.done()

    def stop(self, source: str = "user") -> None:
        """Returns at once; the action runs on the loop's next pass, exactly D after this call."""
        now = time.monotonic_ns()
        if self.stop_ns is not None or self._settled.done():
            return
        self.stop_ns, self.stop_source = now, source
        self.loop.call_soon(self._act)

    async def settled(self) -> dict[str, Any]:
        return await asyncio.shield(self._settled)

    def _act(self) -> None:
        if self._settled.done():
            return
        assert self.stop_ns is not None
        self.stamps.update(trigger=self.stop_ns, source=self.stop_source)
        self.stamps["act"] = spin_until(self.stop_ns + self.session.delay_ns)
        if self.phase == "tool" and self.group is not None:
            self.stamps.update(phase="tool", effect=kill_group(self.group.pgid))
            self._task.cancel()  # the task waits for the group to be gone, then settles
            return
        self.stamps["phase"] = self.phase
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.stamps["effect"] = time.monotonic_ns()
        self._settle(self._stopped_reason(), self.stop_source, self.stamps["effect"])
        self._task.cancel()

    def _stopped_reason(self) -> str:
        return "interrupted" if self.stop_source == "timeout" else "aborted"

    def _settle(self, reason: str, source: str | None, mono_ns: int) -> None:
        if self._settled.done():
            return
        ending = {"reason": reason, "source": source if reason == "aborted" else None, "mono_ns": mono_ns,
                  "stamps": dict(self.stamps)}
        self._settled.set_result(ending)
        STAMPS.setdefault(self.session.id, []).append({**self.stamps, "settled": mono_ns, "reason": reason})
        while len(STAMPS) > RECENT_SESSIONS:
            STAMPS.popitem(last=False)
        self.session.publish({"type": "turn_ended", "turn": self.number, "reason": reason, "source": ending["source"],
                              "mono_ns": mono_ns})

    async def _run(self, text: str) -> None:
        messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
        try:
            for _ in range(MAX_STEPS):
                step = await self._stream(messages)
                messages.append(step.message())
                if not step.calls:
                    self._settle("completed", None, time.monotonic_ns())
                    return
                for _, call in sorted(step.calls.items()):
                    output, code = await self._run_tool(command_of(call))
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"{output}\n[exit {code}]"})
            raise ModelError(f"no answer without a tool call after {MAX_STEPS} model requests")
        except asyncio.CancelledError:
            if self.stop_ns is None:  # cancelled from outside: the loop is going away
                self.stop_ns, self.stop_source = time.monotonic_ns(), "disposed"
            if self.tool is not None:
                await self._tool_gone()
            self._settle(self._stopped_reason(), self.stop_source, time.monotonic_ns())
        except (ModelError, OSError, ValueError) as exc:
            if self.stop_ns is not None:  # our own Stop broke it: still a stop
                self._settle(self._stopped_reason(), self.stop_source, time.monotonic_ns())
            else:
                self.session.publish({"type": "error", "turn": self.number, "message": str(exc)})
                self._settle("error", None, time.monotonic_ns())

    async def _stream(self, messages: list[dict[str, Any]]) -> Step:
        body = {"model": self.session.model, "messages": messages, "tools": [BASH_TOOL], "stream": True}
        address, data = http_request(self.session.base_url, "/chat/completions", body, self.session.api_key)
        self.phase = "request"
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        self.sock = sock
        step, parser = Step(), ResponseParser()
        try:
            await self.loop.sock_connect(sock, address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await self.loop.sock_sendall(sock, data)
            self.phase = "stream"
            while not parser.done:
                received = await self.loop.sock_recv(sock, 65536)
                if not received:
                    if parser.status == 200 and step.finish_reason:
                        break
                    raise ModelError("the server closed the stream before it finished")
                for payload in parser.feed(received):
                    added = step.feed(payload)
                    if added:
                        self.session.publish({"type": "text_delta", "turn": self.number, "text": added})
            if parser.status != 200:
                raise ModelError(f"HTTP {parser.status}: {parser.raw_body[:500].decode('utf-8', 'replace')}")
            return step
        finally:
            self.sock = None
            sock.close()

    async def _run_tool(self, command: str) -> tuple[str, int]:
        self.tool = await asyncio.create_subprocess_exec(
            "bash", "-c", command, cwd=self.session.cwd, env=tool_env(), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, process_group=0)
        self.phase = "tool"
        self.group = Group(self.tool.pid)
        self.session.publish({"type": "tool_started", "turn": self.number, "pid": self.tool.pid})
        assert self.tool.stdout is not None
        reading = asyncio.ensure_future(self.tool.stdout.read())
        try:
            while not reading.done():
                self.group.refresh()
                await asyncio.wait({reading}, timeout=Group.REFRESH_NS / 1e9)
        finally:
            reading.cancel()
        output = reading.result()
        code = await self.tool.wait()
        self.tool, self.group = None, None
        self.phase = "request"
        return output[-OUTPUT_MAX:].decode("utf-8", "replace"), code

    async def _tool_gone(self) -> None:
        """After the kill: every member of the tool's group dead, the root reaped."""
        assert self.tool is not None and self.group is not None
        if "effect" not in self.stamps:  # cancelled from outside, not by Stop
            kill_group(self.group.pgid)
        # Polled on the loop, every millisecond (epoll's resolution): a polling thread would
        # contend for the GIL with the host's own watcher of the same processes (stopbench's
        # L3 stopwatch), so this agent reports no "gone" stamp of its own in-process.
        end = time.monotonic() + GONE_FAILSAFE_S
        while time.monotonic() < end and not (not self.group.live() and self.group.confirm_gone()):
            await asyncio.sleep(0.001)
        await self.tool.wait()
        self.tool, self.group = None, None
