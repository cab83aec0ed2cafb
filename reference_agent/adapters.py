"""Model adapters: each turns a Chat Completions request into a stream of chunk dicts.

All three yield the same ``chat.completion.chunk`` dicts, so the turn engine has one
assembler and one cancellation path: Stop cancels the task reading the stream. Each
adapter then closes what it holds *at once* (http: the socket is shut down, sending the
FIN, then the connection is closed; the openai SDK closes its connection itself while the
cancellation passes through it). Provider refusals raise ``ProviderError``; a stream that ends without
finishing raises ``StreamBroken``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import h11

CONNECT_TIMEOUT_S = 30.0
READ_BYTES = 65536


class ProviderError(Exception):
    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(f"the model provider answered HTTP {status}: {message}")


class StreamBroken(Exception):
    """The stream ended before the provider said it finished."""


class HttpAdapter:
    """OpenAI Chat Completions over SSE: HTTP/1.1 framed by h11 on an asyncio connection.

    h11 rather than aiohttp, measured: importing aiohttp costs the agent ~180 ms at every
    start (it builds two TLS contexts at import) — more than the rest of its start-up — for
    a provider it reaches over plain HTTP. One connection per stream, owned here, so the
    socket that Stop must close is this adapter's own.
    """

    name = "http"

    def __init__(self, base_url: str, api_key: str | None):
        if not base_url:
            raise ValueError("the http adapter needs --base-url or OPENAI_BASE_URL")
        url = urllib.parse.urlsplit(base_url.rstrip("/") + "/chat/completions")
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"the http adapter needs an http(s) URL, not {base_url!r}")
        self._tls = url.scheme == "https"
        self._host, self._port = url.hostname, url.port or (443 if self._tls else 80)
        self._target = url.path + (f"?{url.query}" if url.query else "")
        self._headers = [("Host", url.netloc), ("Authorization", f"Bearer {api_key or 'none'}"),
                         ("Accept", "text/event-stream"), ("Content-Type", "application/json"),
                         ("User-Agent", "refagent")]

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        tls = ssl.create_default_context() if self._tls else None
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self._host, self._port, ssl=tls), CONNECT_TIMEOUT_S)
        conn = h11.Connection(h11.CLIENT)
        body = json.dumps(request).encode()
        try:
            writer.write(conn.send(h11.Request(method="POST", target=self._target,
                                               headers=[*self._headers, ("Content-Length", str(len(body)))]))
                         + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
            events = _events(conn, reader)
            response = await anext(events)
            assert isinstance(response, h11.Response)
            if response.status_code != 200:
                text = b"".join([e.data async for e in events if isinstance(e, h11.Data)])
                raise ProviderError(response.status_code, text.decode("utf-8", "replace")[:2000])
            async for chunk in _sse_chunks(events):
                yield chunk
        except BaseException:
            _hang_up(writer)
            raise
        finally:
            writer.close()

    async def aclose(self) -> None:
        """Nothing is held between streams."""


async def _events(conn: h11.Connection, reader: asyncio.StreamReader) -> AsyncIterator[Any]:
    """The response's h11 events, up to its end; a connection that closes (or breaks the
    framing) before the end raises ``StreamBroken``."""
    while True:
        try:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(READ_BYTES))
                continue
        except h11.RemoteProtocolError as exc:
            raise StreamBroken(f"the connection closed before the stream finished ({exc})") from None
        if isinstance(event, h11.ConnectionClosed):
            raise StreamBroken("the connection closed before the stream finished")
        if isinstance(event, h11.EndOfMessage):
            return
        if not isinstance(event, h11.InformationalResponse):
            yield event


def _hang_up(writer: asyncio.StreamWriter) -> None:
    """Send the FIN now. Closing the transport closes the socket only on the loop's next
    turn, and the stop path does not yield before it has settled the turn and fsync'd the
    log: the server would learn of the hang-up only after that fsync."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already gone


async def _sse_chunks(events: AsyncIterator[Any]) -> AsyncIterator[dict[str, Any]]:
    data_lines: list[str] = []
    finished = False
    pending = b""
    async for event in events:
        if not isinstance(event, h11.Data):
            continue
        *lines, pending = (pending + event.data).split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8").rstrip("\r")
            if line.startswith("data:"):
                data_lines.append(line[5:].lstrip(" "))
                continue
            if line or not data_lines:
                continue  # comments, event names, keep-alives
            data, data_lines = "\n".join(data_lines), []
            if data == "[DONE]":
                return
            chunk = json.loads(data)
            if "error" in chunk:
                raise StreamBroken(f"error event in the stream: {json.dumps(chunk['error'])[:500]}")
            finished = finished or any(c.get("finish_reason") for c in chunk.get("choices") or ())
            yield chunk
    if not finished:
        raise StreamBroken("the connection closed before the stream finished")


class OpenAISdkAdapter:
    """The same wire, through the official ``openai`` AsyncOpenAI client (for comparison)."""

    name = "openai-sdk"

    def __init__(self, base_url: str, api_key: str | None):
        from openai import AsyncOpenAI  # optional dependency: imported only when chosen

        if not base_url:
            raise ValueError("the openai-sdk adapter needs --base-url or OPENAI_BASE_URL")
        self._client = AsyncOpenAI(base_url=base_url, api_key=api_key or "none", max_retries=0)

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        import openai

        try:
            stream = await self._client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            raise ProviderError(exc.status_code, str(exc)[:2000]) from None
        try:
            async for chunk in stream:
                yield chunk.model_dump(exclude_unset=True)
        finally:
            await stream.response.aclose()

    async def aclose(self) -> None:
        await self._client.close()


class InprocAdapter:
    """Plays a fake-server scenario in this process (no network), reporting to a server if given."""

    name = "inproc"

    def __init__(self, scenario: str | Path, report_to: str | None):
        from fake_server import load_scenario
        from fake_server.play import Playback

        self._playback = Playback(load_scenario(scenario), report_to=_server_root(report_to))

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        from fake_server.play import ProviderError as PlayProviderError
        from fake_server.play import StreamBroken as PlayStreamBroken

        try:
            async for chunk in self._playback.chat_chunks(request):
                yield chunk
        except PlayProviderError as exc:
            raise ProviderError(exc.status, str(exc)) from None
        except PlayStreamBroken as exc:
            raise StreamBroken(str(exc)) from None

    async def aclose(self) -> None:
        await self._playback.aclose()


def _server_root(url: str | None) -> str | None:
    """``--base-url`` names the OpenAI base (…/v1); records go to the server's root."""
    if not url:
        return None
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def make_adapter(name: str, *, base_url: str | None, api_key: str | None, scenario: str | None):
    if name == "http":
        return HttpAdapter(base_url or "", api_key)
    if name == "openai-sdk":
        return OpenAISdkAdapter(base_url or "", api_key)
    if name == "inproc":
        if not scenario:
            raise ValueError("the inproc adapter needs --scenario FILE")
        return InprocAdapter(scenario, base_url)
    raise ValueError(f"unknown adapter {name!r}; choose http, inproc or openai-sdk")
