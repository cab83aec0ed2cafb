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
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import aiohttp

from .errors import ApiError
from .playout import chunk_fields, http_error_of, play, prepare
from .records import Chunk, Disconnect, Error, Record, Request, StreamEnd
from .scenario import Scenario, demo_scenario
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
        self._http: aiohttp.ClientSession | None = None
        self._unsent: set[asyncio.Task] = set()  # reports posted without holding up the consumer

    async def __aenter__(self) -> Playback:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._unsent:
            await asyncio.gather(*self._unsent, return_exceptions=True)
        if self._http is not None:
            await self._http.close()
            self._http = None

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
        if self._http is None:
            self._http = aiohttp.ClientSession()
        url = f"{self.report_to}/_stopbench/beacon"
        async with self._http.post(url, json=record.to_json()) as resp:
            resp.raise_for_status()
            stored = Record.from_json(await resp.json(), f"the answer of POST {url}")
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


def _stamped(record: R) -> R:
    return dataclasses.replace(record, source="inproc", mono_ns=time.monotonic_ns())
