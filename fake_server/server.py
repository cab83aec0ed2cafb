"""FakeServer: the scripted model endpoint over HTTP (aiohttp, 127.0.0.1 only).

``handler_cancellation=True`` makes a client hang-up cancel the handler at once, so the
moment a client goes away is timestamped when it happens, not at the next write.
"""
from __future__ import annotations

import asyncio
import json
import secrets

from aiohttp import web

from . import wire_chat
from .errors import ApiError, api_error
from .playout import chunk_record, family_of, http_error_of, play, prepare, sse
from .records import Records
from .scenario import Disconnect, Scenario, demo_scenario
from .script import Ids, ScenarioCursor, estimate_tokens

MAX_BODY_BYTES = 8 * 1024 * 1024
SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"}
SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
               "Connection": "keep-alive"}


def redact(headers) -> dict:
    """Header names lower-cased (HTTP does not care) and secrets replaced."""
    return {k.lower(): ("[redacted]" if k.lower() in SECRET_HEADERS else v) for k, v in headers.items()}


def wire_for(api: str):
    """The wire module of ``api`` (parse, Encoder, event names)."""
    if api == "chat":
        return wire_chat
    if api == "responses":
        from . import wire_responses
        return wire_responses
    from . import wire_anthropic
    return wire_anthropic


class FakeServer:
    def __init__(self, scenario: Scenario | None = None, port: int = 0, seed: str | None = None,
                 max_body_bytes: int = MAX_BODY_BYTES, keep_wire: bool = False):
        """``keep_wire`` keeps every byte sent for each model request in ``self.wire`` (request
        number → {"api", "status", "sse", "payloads"}), for checking the wire format itself."""
        self.scenario = scenario or demo_scenario()
        self.cursor = ScenarioCursor(self.scenario)
        self.ids = Ids(seed or secrets.token_hex(3))
        self.records = Records()
        self.port = port
        self.max_body_bytes = max_body_bytes
        self.keep_wire = keep_wire
        self.wire: dict[int, dict] = {}
        self._runner: web.AppRunner | None = None
        self._closing = False

    # --- lifecycle ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def load(self, scenario: Scenario):
        """Serve ``scenario`` from its first response on; records and numbering go on."""
        self.scenario = scenario
        self.cursor = ScenarioCursor(scenario)

    async def start(self) -> "FakeServer":
        app = web.Application(client_max_size=self.max_body_bytes)
        app.router.add_get("/", self._root)
        for prefix in ("/v1", ""):
            app.router.add_get(f"{prefix}/models", self._models)
            app.router.add_get(f"{prefix}/models/{{model}}", self._model)
            app.router.add_post(f"{prefix}/messages/count_tokens", self._count_tokens)
            app.router.add_post(f"{prefix}/chat/completions", self._model_route("chat"))
            app.router.add_post(f"{prefix}/responses", self._model_route("responses"))
            app.router.add_post(f"{prefix}/messages", self._model_route("anthropic"))
        app.router.add_get("/_stopbench/records", self._records)
        app.router.add_post("/_stopbench/beacon", self._beacon)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self):
        self._closing = True
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self):
        return await self.start()

    async def __aexit__(self, *exc):
        await self.close()

    # --- plain routes ---------------------------------------------------------------------
    async def _root(self, request: web.Request):
        return web.Response(text="stopbench fake model server\n")

    def _model_entry(self, model: str) -> dict:
        return {"id": model, "object": "model", "created": 0, "owned_by": "stopbench",
                "type": "model", "display_name": model, "created_at": "1970-01-01T00:00:00Z"}

    async def _models(self, request: web.Request):
        return web.json_response({"object": "list",
                                  "data": [self._model_entry(self.scenario.model or "stopbench-fake")]})

    async def _model(self, request: web.Request):
        model = request.match_info["model"]
        if self.scenario.model and model != self.scenario.model:
            error = api_error("openai", 404, f"The model `{model}` does not exist or you do not have access to it.",
                              param="model", code="model_not_found")
            return web.json_response(error.body, status=404)
        return web.json_response(self._model_entry(model))

    async def _count_tokens(self, request: web.Request):
        """Anthropic token counting (Claude Code asks): not a model request, so not numbered."""
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise ValueError
            parsed = wire_for("anthropic").parse({"max_tokens": 1, **body})
        except (ValueError, UnicodeDecodeError):
            error = api_error("anthropic", 400, "The request body is not valid JSON.")
            return web.json_response(error.body, status=400)
        except ApiError as exc:
            return web.json_response(exc.body, status=exc.status)
        return web.json_response({"input_tokens": estimate_tokens(parsed.canonical)})

    async def _unknown(self, request: web.Request):
        family = "anthropic" if "anthropic-version" in request.headers else "openai"
        problem = f"Invalid URL ({request.method} {request.path})"
        self.records.append({"kind": "error", "path": request.path, "method": request.method,
                             "status": 404, "problem": problem})
        error = api_error(family, 404, problem)
        return web.json_response(error.body, status=404)

    async def _records(self, request: web.Request):
        try:
            after = int(request.query.get("after", "0"))
            wait = min(float(request.query.get("wait", "0")), 300.0)
        except ValueError:
            return web.json_response({"error": "after must be an integer and wait a number"}, status=400)
        return web.json_response(await self.records.wait_after(after, wait))

    async def _beacon(self, request: web.Request):
        try:
            record = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
            problem = "beacon body must be a JSON object with a string 'kind'"
            self.records.append({"kind": "error", "path": request.path, "problem": problem})
            return web.json_response({"error": problem}, status=400)
        record.setdefault("source", "beacon")
        return web.json_response(self.records.append(record))

    # --- model requests -------------------------------------------------------------------
    def _model_route(self, api: str):
        async def handler(request: web.Request):
            return await self._model_request(request, api)
        return handler

    async def _model_request(self, request: web.Request, api: str):
        family = family_of(api)
        base = {"kind": "request", "request": self.records.next_request_number(), "api": api,
                "path": request.path_qs, "headers": redact(request.headers)}
        request_no = base["request"]
        try:
            body = await self._read_json(request, family, base)
            parsed = wire_for(api).parse(body)
            base["canonical"] = parsed.canonical
            plan = prepare(parsed, self.cursor, self.ids, self.url)
        except ApiError as exc:
            self.records.append({**base, "status": exc.status, "error": exc.message})
            self.records.append({"kind": "error", "request": request_no, "problem": exc.message})
            return self._json(request_no, api, exc.body, exc.status, exc.headers)
        refusal = http_error_of(plan, api)
        self.records.append({**base, "status": refusal.status if refusal else 200,
                             **({"error": refusal.message} if refusal else {})})
        self.records.append(plan.response_record(request_no))
        if refusal is not None:
            return self._json(request_no, api, refusal.body, refusal.status, refusal.headers)
        encoder = wire_for(api).Encoder(plan, parsed, self.ids)
        if parsed.stream:
            return await self._stream(request, request_no, api, plan, encoder)
        return await self._whole(request, request_no, api, plan, encoder)

    def _json(self, request_no: int, api: str, body: dict, status: int = 200, headers=None):
        response = web.json_response(body, status=status, headers=headers)
        if self.keep_wire:
            self.wire[request_no] = {"api": api, "status": status, "sse": False, "payloads": [response.body]}
        return response

    async def _read_json(self, request: web.Request, family: str, base: dict) -> dict:
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise api_error(family, 413, f"Request body exceeds the maximum of {self.max_body_bytes} bytes.")
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            base["body_text"] = raw[:2000].decode("utf-8", "replace")
            raise api_error(family, 400, "We could not parse the JSON body of your request. The API "
                                         "expects a JSON payload, but what was sent was not valid JSON.")
        base["body"] = body
        if not isinstance(body, dict):
            raise api_error(family, 400, "The request body must be a JSON object.")
        return body

    async def _stream(self, request: web.Request, request_no: int, api: str, plan, encoder):
        response = web.StreamResponse(status=200, headers=SSE_HEADERS)
        last_chunk = 0
        sent = [] if self.keep_wire else None
        if sent is not None:
            self.wire[request_no] = {"api": api, "status": 200, "sse": True, "payloads": sent}
        try:
            await response.prepare(request)
            async for emit in play(plan, encoder):
                payload = b"".join(sse(name, data) for name, data in emit.events)
                if payload and sent is not None:
                    sent.append(payload)
                if payload:
                    await response.write(payload)
                if emit.delta is not None:
                    last_chunk = emit.chunk
                    self.records.append(chunk_record(request_no, emit, plan))
                if emit.final:
                    self.records.append({"kind": "stream_end", "request": request_no, "complete": emit.complete})
                    if isinstance(plan.ending, Disconnect):
                        request.transport.abort()
                        return response
            await response.write_eof()
        except asyncio.CancelledError:      # the client hung up (handler_cancellation) or we are closing
            if not self._closing:
                self.records.append({"kind": "disconnect", "request": request_no, "after_chunk": last_chunk})
            raise
        except ConnectionResetError:        # the hang-up surfaced in a write instead
            self.records.append({"kind": "disconnect", "request": request_no, "after_chunk": last_chunk})
        return response

    async def _whole(self, request: web.Request, request_no: int, api: str, plan, encoder):
        """Non-streamed answer: the same plan and timing, one JSON body at the end."""
        complete = True
        try:
            async for emit in play(plan, encoder):
                complete = emit.complete
        except asyncio.CancelledError:
            if not self._closing:
                self.records.append({"kind": "disconnect", "request": request_no, "after_chunk": 0})
            raise
        self.records.append({"kind": "stream_end", "request": request_no, "complete": complete})
        if complete:
            return self._json(request_no, api, encoder.body())
        if isinstance(plan.ending, Disconnect):
            request.transport.abort()
            return web.Response()
        error = api_error(family_of(api), 500, plan.ending.message)
        return self._json(request_no, api, error.body, 500)
