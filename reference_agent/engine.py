"""The turn engine: a session runs one turn at a time; Stop is one cancellation path.

``Turn.stop(source)`` records the request (``stop_requested``) and cancels the turn's task;
nothing else. Whatever the task was awaiting — the model stream, a tool, a checkpoint —
raises there, and the code around that await records its effect (a partial assistant
message with ``interrupted: true``, a tool result with ``aborted: true`` after the tree is
gone) and lets the cancellation continue up to ``Turn._run``, which settles the turn exactly
once. Any exception that arrives after Stop was requested is Stop's effect (a stream read
error from our own close included, C12), so it settles ``aborted``/``interrupted``, never
``error``. Nothing new starts after Stop: every effect begins after an await point where the
cancellation would already have been delivered.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import failpoints
from .log import CheckpointFailed, LogWriter
from .state import SessionState, parse_arguments, resume_note
from .tools import TOOL_SPECS, ToolRun

MAX_STEPS = 64
EXTRA_REQUEST_LIMIT_S = 5.0  # keep-going-after-stop only

Subscriber = Callable[[dict[str, Any]], None]


class Assembler:
    """Collects one step's streamed chunks: text, and tool calls by index (parsed at the end)."""

    def __init__(self) -> None:
        self.text_parts: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None

    def feed(self, chunk: dict[str, Any]) -> str:
        """Take one chunk; return the text it added."""
        added = ""
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                added += delta["content"]
            for part in delta.get("tool_calls") or ():
                call = self.calls.setdefault(part.get("index", 0), {"id": None, "name": "", "arguments": []})
                if part.get("id"):
                    call["id"] = part["id"]
                function = part.get("function") or {}
                if function.get("name"):
                    call["name"] += function["name"]
                if function.get("arguments"):
                    call["arguments"].append(function["arguments"])
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        if added:
            self.text_parts.append(added)
        return added

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def tool_calls(self, *, complete_only: bool = False) -> list[dict[str, Any]]:
        """The calls in index order; with ``complete_only``, those whose arguments parse."""
        calls = []
        for index in sorted(self.calls):
            call = self.calls[index]
            arguments = "".join(call["arguments"])
            if complete_only and not _is_json(arguments):
                continue
            calls.append({"id": call["id"] or f"call_{index}", "name": call["name"], "arguments": arguments})
        return calls


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class Turn:
    def __init__(self, session: Session, number: int):
        self.session = session
        self.number = number
        self.stop_source: str | None = None
        self.phase = "starting"  # starting | request | stream | tool | settling
        self.settlement: dict[str, Any] | None = None
        self._settled = asyncio.get_running_loop().create_future()
        self._task: asyncio.Task | None = None

    def _start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._task.add_done_callback(self._on_done)

    # --- the public surface ---------------------------------------------------------------

    def stop(self, source: str = "user") -> None:
        """Stop the turn now. Synchronous, idempotent, never blocks."""
        if source not in ("user", "parent", "disposed", "timeout"):
            raise ValueError(f"unknown stop source {source!r}")
        if self.stop_source is not None or self.settlement is not None:
            return
        self.stop_source = source
        self.session._append("stop_requested", turn=self.number, source=source)
        if self._task is not None:
            self._task.cancel()

    async def settled(self) -> dict[str, Any]:
        return await asyncio.shield(self._settled)

    @property
    def done(self) -> bool:
        return self.settlement is not None

    # --- the run --------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            reason = await self._steps()
            self._settle(reason)
        except asyncio.CancelledError:
            if self.stop_source is None:  # cancelled from outside (the loop is going away)
                self.stop_source = "disposed"
            self._settle_after_stop()
        except CheckpointFailed as exc:
            self._settle("blocked", error=str(exc))
        except Exception as exc:  # noqa: BLE001 - every failure settles the turn
            if self.stop_source is not None:
                self._settle_after_stop()  # our own Stop caused it (C12)
            else:
                self._settle("error", error=f"{type(exc).__name__}: {exc}")

    def _on_done(self, task: asyncio.Task) -> None:
        """A task cancelled before its first step never ran ``_run``: settle it here."""
        if self.settlement is None:
            if self.stop_source is None:
                self.stop_source = "disposed"
            self._settle_after_stop()

    async def _steps(self) -> str:
        s = self.session
        for step in range(1, MAX_STEPS + 1):
            request = {"model": s.model, "messages": s.state.history.messages(), "tools": TOOL_SPECS, "stream": True}
            self.phase = "request"
            deferred = failpoints.on("no-request-checkpoint")
            if not deferred:
                s._append("model_request", turn=self.number, step=step, request=request)
                s.writer.checkpoint()
            self._no_new_effect_after_stop()
            self.phase = "stream"
            assembled = await self._stream(step, request)
            if deferred:
                s._append("model_request", turn=self.number, step=step, request=request)
            calls = assembled.tool_calls()
            s._append(
                "assistant_message", turn=self.number, step=step, text=assembled.text, tool_calls=calls,
                finish_reason=assembled.finish_reason, interrupted=False,
            )
            if assembled.finish_reason == "length":
                self._step_settled(step)
                return "max_tokens"
            if not calls:
                self._step_settled(step)
                return "completed"
            for call in calls:
                await self._call_tool(step, call)
            self._step_settled(step)
        raise RuntimeError(f"the turn reached {MAX_STEPS} model requests without finishing")

    def _no_new_effect_after_stop(self) -> None:
        """Stop from inside the task (a subscriber's callback) is only delivered at the
        next suspension, which may come after an effect began: check before each one."""
        if self.stop_source is not None:
            raise asyncio.CancelledError

    def _step_settled(self, step: int) -> None:
        self.session._append("step_settled", turn=self.number, step=step)
        self.session.writer.checkpoint()

    async def _stream(self, step: int, request: dict[str, Any]) -> Assembler:
        s = self.session
        assembled = Assembler()
        try:
            async for chunk in s.adapter.stream(request):
                added = assembled.feed(chunk)
                if added:
                    s._notify({"type": "text_delta", "turn": self.number, "text": added, "mono_ns": time.monotonic_ns()})
        except BaseException:
            self._commit_partial(step, assembled)
            if failpoints.on("keep-going-after-stop") and self.stop_source is not None:
                await self._extra_request()
            raise
        return assembled

    def _commit_partial(self, step: int, assembled: Assembler) -> None:
        """You keep what you read: a cut-off step's text is committed, marked interrupted."""
        text = "" if failpoints.on("drop-partial-text") else assembled.text
        calls = assembled.tool_calls(complete_only=True)
        if not text and not calls:
            return
        self.session._append(
            "assistant_message", turn=self.number, step=step, text=text, tool_calls=calls,
            finish_reason=assembled.finish_reason, interrupted=not failpoints.on("no-interrupted-flag"),
        )

    async def _extra_request(self) -> None:
        s = self.session
        request = {"model": s.model, "messages": s.state.history.messages(), "tools": TOOL_SPECS, "stream": True}
        try:
            async with asyncio.timeout(EXTRA_REQUEST_LIMIT_S):
                async for _ in s.adapter.stream(request):
                    pass
        except Exception:  # noqa: BLE001 - the mutant only needs the request to be sent
            pass

    async def _call_tool(self, step: int, call: dict[str, Any]) -> None:
        s = self.session
        arguments = parse_arguments(call["arguments"])
        late = failpoints.on("late-tool-checkpoint")
        if not late:
            s._append("tool_call", turn=self.number, step=step, call_id=call["id"], name=call["name"], arguments=arguments)
            s.writer.checkpoint()
        if self.stop_source is not None:  # see _no_new_effect_after_stop; the call is closed here
            s._append("tool_result", turn=self.number, call_id=call["id"], exit_code=None, aborted=True,
                      output="[not started: Stop was requested before the command ran]")
            raise asyncio.CancelledError
        self.phase = "tool"
        run = ToolRun(call["name"], arguments, s.cwd, call["id"], s.tool_output_path(call["id"]))
        s._notify({"type": "tool_card", "turn": self.number, "call_id": call["id"], "name": call["name"],
                   "arguments": arguments, "mono_ns": time.monotonic_ns()})

        def started(pid: int, pgid: int) -> None:
            s._append("tool_started", turn=self.number, call_id=call["id"], pid=pid, pgid=pgid, tag=run.tag)

        try:
            result = await run.run(started)
        except asyncio.CancelledError:
            result = await run.abort()
            if late:
                s._append("tool_call", turn=self.number, step=step, call_id=call["id"], name=call["name"], arguments=arguments)
            s._append("tool_result", turn=self.number, call_id=call["id"], output=result.output,
                      exit_code=result.exit_code, aborted=True)
            raise
        if late:
            s._append("tool_call", turn=self.number, step=step, call_id=call["id"], name=call["name"], arguments=arguments)
        s._append("tool_result", turn=self.number, call_id=call["id"], output=result.output,
                  exit_code=result.exit_code, aborted=False)
        self.phase = "request"

    # --- settlement -----------------------------------------------------------------------

    def _settle_after_stop(self) -> None:
        if self.phase == "stream" and failpoints.on("stream-error-as-error"):
            self._settle("error", error="the model stream was closed before it finished")
        elif self.stop_source == "timeout":
            self._settle("interrupted")
        else:
            self._settle("aborted", source=self.stop_source)

    def _settle(self, reason: str, *, source: str | None = None, error: str | None = None) -> None:
        """Exactly once: the turn_ended event, fsync'd, then the waiters are released."""
        if self.settlement is not None:
            return
        self.phase = "settling"
        fields: dict[str, Any] = {"turn": self.number, "reason": reason}
        if source is not None:
            fields["source"] = source
        if error is not None:
            fields["error"] = error
        s = self.session
        if failpoints.on("no-settle-on-stop") and self.stop_source is not None:
            ending = {"type": "turn_ended", "seq": None, "mono_ns": time.monotonic_ns(), **fields}
        else:
            ending = s._append("turn_ended", **fields)
            if failpoints.on("double-settle") and self.stop_source is not None:
                s._append("turn_ended", **fields)
            try:
                s.writer.checkpoint()
            except CheckpointFailed as exc:
                print(f"refagent: {exc}", file=sys.stderr)
        self.settlement = ending
        if failpoints.on("lose-inbox") and self.stop_source is not None:
            for item in s.state.pending_inbox():
                item.status = "lost"
        if not self._settled.done():
            self._settled.set_result(ending)


class Session:
    """One conversation: its log writer, its state, its adapter, at most one running turn."""

    def __init__(self, *, session_id: str, writer: LogWriter, state: SessionState, adapter: Any, cwd: Path,
                 model: str, resumed_gap_s: float | None = None, reaped: list[int] | None = None):
        self.id = session_id
        self.writer = writer
        self.state = state
        self.adapter = adapter
        self.cwd = cwd
        self.model = model
        self.turn: Turn | None = None
        self._resumed_gap_s = resumed_gap_s
        self._reaped = reaped or []
        self._subscribers: list[Subscriber] = []
        self._closed = False

    @property
    def log_path(self) -> Path:
        return self.writer.path

    def tool_output_path(self, call_id: str) -> Path:
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in call_id)
        return self.log_path.with_name(f"{self.id}.{safe}.out")

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def start_turn(self, text: str) -> Turn:
        """Start a turn with ``text`` (plus every queued inbox item); returns at once."""
        if self._closed:
            raise RuntimeError("the session is closed")
        if self.turn is not None and not self.turn.done:
            raise RuntimeError(f"turn {self.turn.number} is still running; queue the text or stop the turn")
        number = self.state.last_turn + 1
        pending = [i.item_id for i in self.state.pending_inbox()]
        turn = Turn(self, number)
        self.turn = turn
        self._append("turn_started", turn=number, input=text, inbox=pending)
        for item_id in pending:
            self._append("inbox_delivered", item_id=item_id, turn=number)
        if self._resumed_gap_s is not None:
            note = resume_note(self._resumed_gap_s)
            if self._reaped:
                note += (f" Processes left running by the interrupted command were killed on resume "
                         f"(PIDs {', '.join(map(str, self._reaped))}).")
            self._append("session_resumed", turn=number, gap_s=round(self._resumed_gap_s, 3), note=note,
                         reaped=self._reaped)
            self._resumed_gap_s = None
        turn._start()
        return turn

    def queue(self, text: str) -> str:
        item_id = "q-" + secrets.token_hex(3)
        self._append("inbox_queued", item_id=item_id, text=text)
        return item_id

    def cancel_queued(self, item_id: str) -> None:
        item = self.state.inbox.get(item_id)
        if item is None or item.status != "queued":
            state = "unknown" if item is None else item.status
            raise KeyError(f"no queued inbox item {item_id!r} (it is {state})")
        self._append("inbox_canceled", item_id=item_id)

    async def close(self) -> None:
        """Dispose: a running turn ends ``aborted`` (source ``disposed``); then release everything."""
        if self._closed:
            return
        if self.turn is not None and not self.turn.done:
            self.turn.stop("disposed")
            await self.turn.settled()
        self._closed = True
        await self.adapter.aclose()
        self.writer.close()

    # --- internals ------------------------------------------------------------------------

    def _append(self, type_: str, **fields: Any) -> dict[str, Any]:
        event = self.writer.append(type_, **fields)
        self.state.apply(event)
        self._notify(event)
        return event

    def _notify(self, event: dict[str, Any]) -> None:
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception as exc:  # noqa: BLE001 - a subscriber never breaks the turn
                print(f"refagent: subscriber {callback!r} failed: {exc}", file=sys.stderr)
