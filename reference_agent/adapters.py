"""Model adapters: each turns a Chat Completions request into a stream of chunk dicts.

All three yield the same ``chat.completion.chunk`` dicts, so the turn engine has one
assembler and one cancellation path: Stop cancels the task reading the stream. Each
adapter's ``finally`` then closes what it holds *at once* (aiohttp: ``response.close()``,
which drops the socket; never the ``ClientSession``, whose close leaves a blocked reader
hanging). Provider refusals raise ``ProviderError``; a stream that ends without finishing
raises ``StreamBroken``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp


class ProviderError(Exception):
    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(f"the model provider answered HTTP {status}: {message}")


class StreamBroken(Exception):
    """The stream ended before the provider said it finished."""


class HttpAdapter:
    """OpenAI Chat Completions over SSE, with aiohttp."""

    name = "http"

    def __init__(self, base_url: str, api_key: str | None):
        if not base_url:
            raise ValueError("the http adapter needs --base-url or OPENAI_BASE_URL")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key or 'none'}", "Accept": "text/event-stream"}
        self._http: aiohttp.ClientSession | None = None

    async def stream(self, request: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        if self._http is None:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=30))
        response = await self._http.post(self.url, json=request, headers=self._headers)
        try:
            if response.status != 200:
                raise ProviderError(response.status, (await response.text())[:2000])
            async for chunk in _sse_chunks(response):
                yield chunk
        finally:
            response.close()  # synchronous: the socket is gone before the stop path continues

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None


async def _sse_chunks(response: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    data_lines: list[str] = []
    finished = False
    async for raw in response.content:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data_lines.append(line[5:].lstrip(" "))
            continue
        if line or not data_lines:
            continue  # comments, event names, keep-alives
        data, data_lines = "\n".join(data_lines), []
        if data == "[DONE]":
            return
        event = json.loads(data)
        if "error" in event:
            raise StreamBroken(f"error event in the stream: {json.dumps(event['error'])[:500]}")
        finished = finished or any(c.get("finish_reason") for c in event.get("choices") or ())
        yield event
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
