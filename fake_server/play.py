"""In-process playback: the fake server's Chat Completions stream without HTTP.

An agent's in-process adapter iterates ``Playback.chat_chunks`` and receives exactly the
chunk dicts the server would send over SSE, with the same timing, response choice and
strictness. With ``report_to`` the same records reach a running FakeServer (``source:
"inproc"``), each posted *before* its chunk is yielded, so a harness waiting for "chunk k
flushed" never sees it later than the agent does.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
import time
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import h11

from .errors import ApiError
from .playout import chunk_fields, http_error_of, play, prepare
from .records import Chunk, Disconnect, Error, Late, Record, Request, StreamEnd
from .scenario import Scenario
from .scenario_loader import demo_scenario
from .script import Ids, ScenarioCursor
from .wire import wire_for

R = TypeVar("R", bound=Record)
CHAT_PATH = "/v1/chat/completions"


class ProviderError(Exception):
    """The provider refused the request (HTTP status and its error body)."""

    def __init__(self, status: int, body: dict, retry_after: float | None = None):
        self.status, self.body, self.retry_after = status, body, retry_after
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else str(body)
        super().__init__(f"{status}: {message}")


class StreamBroken(Exception):
    """The stream ended without finishing: a mid-stream error event or a dropped connection."""


class Playback:
    def __init__(self, scenario: Scenario | None, report_to: str | None = None, seed: str | None = None):
        self.scenario = scenario or demo_scenario()
        self.cursor = ScenarioCursor(self.scenario)
        self.ids = Ids(seed or secrets.token_hex(3))
        self.report_to = report_to.rstrip("/").removesuffix("/v1") if report_to else None
        self._requests = 0
        self._poster = _Poster(f"{self.report_to}/_stopbench/beacon") if self.report_to else None
        self._unsent: set[asyncio.Task] = set()  # reports posted without holding up the consumer

    async def __aenter__(self) -> Playback:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._unsent:
            await asyncio.gather(*self._unsent, return_exceptions=True)
        if self._poster is not None:
            self._poster.close()

    async def _report(self, record: R) -> R:
        """Post ``record`` to the server (which may number it); return it as stored. It is stamped
        here, when it happens, not when the post arrives."""
        record = _stamped(record)
        if self.report_to is None:
            return record
        return await self._post(record)

    def _report_without_waiting(self, record: Record) -> None:
        """Report ``record`` (stamped now) while the consumer goes on: a cancelled stream must
        end at once, not after a round trip to the server, or the fake model would add its own
        reporting to the abort latency of the agent it serves. ``aclose`` waits for the post."""
        record = _stamped(record)
        if self.report_to is None:
            return
        task = asyncio.get_running_loop().create_task(self._post(record))
        self._unsent.add(task)
        task.add_done_callback(self._unsent.discard)

    async def _post(self, record: R) -> R:
        """The record as the server stored it, parsed back at this edge like any record from HTTP."""
        assert self._poster is not None
        stored = Record.from_json(await self._poster.post(record.to_json()), f"the answer of POST {self._poster.url}")
        assert isinstance(stored, type(record)), f"the server stored a {stored.kind} record for a {record.kind}"
        return stored

    async def _report_request(self, request: dict[str, Any], canonical: Any, status: int,
                              error: str | None) -> int:
        record = Request(api="chat", path=CHAT_PATH, headers={}, body=request, canonical=canonical,
                         status=status, error=error)
        if self.report_to is None:
            self._requests += 1
            return self._requests
        stored = await self._report(record)
        assert stored.request is not None
        return stored.request

    async def chat_chunks(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Yield the chat.completion.chunk dicts for ``request`` (a Chat Completions body)."""
        wire = wire_for("chat")
        canonical = None
        try:
            parsed = wire.parse(request)
            canonical = parsed.canonical
            plan = prepare(parsed, self.cursor, self.ids, self.report_to)
        except ApiError as exc:
            request_no = await self._report_request(request, canonical, exc.status, exc.message)
            await self._report(Error(request=request_no, problem=exc.message))
            raise ProviderError(exc.status, exc.body) from None
        encoder = wire.Encoder(plan, parsed, self.ids)
        if plan.side is not None:
            await self._report(plan.side_record(parsed, CHAT_PATH))
            async for emit in play(plan, encoder):
                for _name, data in [*emit.events, *(e for d in emit.run for e in encoder.delta(d))]:
                    if isinstance(data, dict):
                        yield data
            return
        refusal = http_error_of(plan, "chat")
        request_no = await self._report_request(request, canonical, refusal.status if refusal else 200,
                                                refusal.message if refusal else None)
        await self._report(plan.response_record(request_no))
        if refusal is not None:
            assert plan.http_error is not None
            raise ProviderError(refusal.status, refusal.body, plan.http_error.retry_after)
        last_chunk = 0
        try:
            async for emit in play(plan, encoder):
                if emit.late_ns:
                    await self._report(Late(request=request_no, chunk=emit.first, late_ns=emit.late_ns))
                for chunk, delta in enumerate(emit.run, emit.first):
                    last_chunk = chunk
                    text, tool_call_id, reasoning = chunk_fields(plan, delta)
                    await self._report(Chunk(request=request_no, chunk=chunk, text=text, tool_call_id=tool_call_id,
                                             reasoning=reasoning))
                    for _name, data in encoder.delta(delta):
                        yield data
                if emit.final:
                    await self._report(StreamEnd(request=request_no, complete=emit.complete))
                for _name, data in emit.events:
                    if isinstance(data, dict) and "error" in data:
                        raise StreamBroken(data["error"]["message"])
                    if isinstance(data, dict):
                        yield data
                if emit.final and not emit.complete:
                    raise StreamBroken("the server closed the connection mid-stream")
        except (asyncio.CancelledError, GeneratorExit):
            self._report_without_waiting(Disconnect(request=request_no, after_chunk=last_chunk))
            raise


class _Poster:
    """POSTs JSON to one URL over one kept-alive HTTP/1.1 connection (h11), one post at a
    time, in the order asked (the server numbers records as they arrive). Not aiohttp: an
    agent's in-process adapter imports this module, and aiohttp's import alone (~180 ms)
    would be most of that agent's start-up."""

    def __init__(self, url: str):
        self.url = url
        parts = urllib.parse.urlsplit(url)
        self._addr = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._headers = [("Host", parts.netloc), ("Content-Type", "application/json")]
        self._path = parts.path
        self._lock = asyncio.Lock()
        self._conn: tuple[h11.Connection, asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, body: Any) -> Any:
        data = json.dumps(body).encode()
        async with self._lock:
            reused = self._conn is not None
            status, answer = await self._exchange(data)
            if status == 0 and reused:  # the server had closed the idle connection: once more, afresh
                status, answer = await self._exchange(data)
            if status != 200:
                raise RuntimeError(f"POST {self.url} answered {status or 'nothing'}: {answer[:300]!r}")
            return json.loads(answer)

    async def _exchange(self, data: bytes) -> tuple[int, bytes]:
        """One request on the kept connection (opened if need be): the status (0 when the
        connection closed first) and the body."""
        if self._conn is not None and self._conn[0].our_state is not h11.IDLE:
            self.close()  # an exchange cut short (its poster cancelled) left it mid-way
        if self._conn is None:
            reader, writer = await asyncio.open_connection(*self._addr)
            self._conn = (h11.Connection(h11.CLIENT), reader, writer)
        conn, reader, writer = self._conn
        writer.write(conn.send(h11.Request(method="POST", target=self._path,
                                           headers=[*self._headers, ("Content-Length", str(len(data)))]))
                     + conn.send(h11.Data(data=data)) + conn.send(h11.EndOfMessage()))
        status, answer = 0, b""
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await reader.read(65536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    answer += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    status = 0
                    break
        except h11.RemoteProtocolError:
            status = 0
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
        else:
            self.close()
        return status, answer

    def close(self) -> None:
        if self._conn is not None:
            self._conn[2].close()
            self._conn = None


def _stamped(record: R) -> R:
    return dataclasses.replace(record, source="inproc", mono_ns=time.monotonic_ns())
