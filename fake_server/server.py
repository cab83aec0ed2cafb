"""FakeServer: the scripted model endpoint over HTTP (aiohttp, 127.0.0.1 only).

``handler_cancellation=True`` makes a client hang-up cancel the handler at once, so the
moment a client goes away is timestamped when it happens, not at the next write.
"""
from __future__ import annotations

import asyncio
import json
import secrets
import socket
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from . import hangup
from .bounded import bounded
from .canonical import estimate_tokens, restore_ids
from .errors import ApiError, api_error
from .playout import chunk_fields, http_error_of, play, prepare
from .record_store import Records
from .records import Disconnect, Error, Late, Record, RecordError, Request, Response, StreamEnd
from .request_secrets import credentials, redact, redacted_beacon, redacted_path
from .scenario import Disconnect as DisconnectFrame
from .scenario import Scenario, StreamError
from .scenario_loader import demo_scenario
from .script import Ids, Plan, ScenarioCursor
from .sse import sse_all
from .sse_out import BURST, SseOut
from .strict import BodyProblem, load_body
from .wire import StreamEncoder, Wire, wire_for, wires

MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_POLL_S = 300.0
# Records from other processes make the harness act (a window's processes are ended, a
# disconnect or a chunk sets off a Stop): the beacon takes them only under the run's token,
# which the run's window commands and its in-process agent are given (``FakeServer.beacon_url``).
BEACON_PATH = "/_stopbench/beacon"
SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
               "Connection": "keep-alive"}


class FakeServer:
    def __init__(self, scenario: Scenario | None = None, port: int = 0, seed: str | None = None,
                 max_body_bytes: int = MAX_BODY_BYTES, keep_wire: bool = False, sock: socket.socket | None = None):
        """``keep_wire`` keeps every byte sent for each model request in ``self.wire`` (request
        number → {"api", "status", "sse", "payloads"}), and for each side request in
        ``self.side_wire`` (in order), for checking the wire format itself. ``sock``: a
        listening socket on 127.0.0.1 to serve on instead of opening one (one made inside a
        task run's network namespace, where its agent reaches it)."""
        self.scenario = scenario or demo_scenario()
        self.cursor = ScenarioCursor(self.scenario)
        self.ids = Ids(seed or secrets.token_hex(3))
        self.records = Records()
        self.port = port
        self.max_body_bytes = max_body_bytes
        self.keep_wire = keep_wire
        self.sock = sock
        self.wire: dict[int, dict[str, Any]] = {}
        self.side_wire: list[dict[str, Any]] = []
        self.beacon_token = secrets.token_hex(16)
        self._runner: web.AppRunner | None = None
        self._closing = False
        self._flowing = asyncio.Event()  # scripted time goes on (cleared while held)
        self._flowing.set()

    # --- lifecycle ------------------------------------------------------------------------
    def hold(self) -> None:
        """Stop the scripted clock: each stream, at its next scripted pause, waits for
        ``release`` before it goes on (a task run paused while another times something)."""
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def beacon_url(self) -> str:
        """Where the run's window helpers and in-process agent post records: the server under the
        run's token. Only a process that was given it (or read it off one's command line) can post
        records at all; the harness still ends only processes it can show to be the run's."""
        return f"{self.url}/run/{self.beacon_token}"

    def load(self, scenario: Scenario) -> None:
        """Serve ``scenario`` from its first response on; records and numbering go on."""
        self.scenario = scenario
        self.cursor = ScenarioCursor(scenario)

    async def start(self) -> FakeServer:
        app = web.Application(client_max_size=self.max_body_bytes)
        app.router.add_get("/", self._root)
        for prefix in ("/v1", ""):
            app.router.add_get(f"{prefix}/models", self._models)
            app.router.add_get(f"{prefix}/models/{{model}}", self._model)
            app.router.add_post(f"{prefix}/messages/count_tokens", self._count_tokens)
        for wire in wires():
            for path in wire.PATHS:
                app.router.add_post(path, self._model_route(wire))
        app.router.add_get("/_stopbench/records", self._records)
        app.router.add_post(BEACON_PATH, self._beacon)
        app.router.add_post("/run/{token}" + BEACON_PATH, self._beacon)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site: web.BaseSite = (web.SockSite(self._runner, self.sock) if self.sock is not None
                              else web.TCPSite(self._runner, "127.0.0.1", self.port))
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        self._closing = True
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- plain routes ---------------------------------------------------------------------
    async def _root(self, request: web.Request) -> web.Response:
        """What this server answers, for a person or a script finding their way."""
        endpoints = [{"method": route.method, "path": route.resource.canonical}
                     for route in request.app.router.routes()
                     if route.method != "HEAD" and route.handler != self._unknown and route.resource is not None]
        return web.json_response({"server": "stopbench fake model server", "endpoints": endpoints})

    def _model_entry(self, model: str) -> dict[str, Any]:
        return {"id": model, "object": "model", "created": 0, "owned_by": "stopbench",
                "type": "model", "display_name": model, "created_at": "1970-01-01T00:00:00Z"}

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list",
                                  "data": [self._model_entry(self.scenario.model or "stopbench-fake")]})

    async def _model(self, request: web.Request) -> web.Response:
        model = request.match_info["model"]
        if self.scenario.model and model != self.scenario.model:
            error = wire_for("chat").unknown_model(model)
            return web.json_response(error.body, status=404)
        return web.json_response(self._model_entry(model))

    async def _count_tokens(self, request: web.Request) -> web.Response:
        """Anthropic token counting (Claude Code asks): not a model request, so not numbered."""
        wire = wire_for("anthropic")
        try:
            body = load_body(await request.read())
            if not isinstance(body, dict):
                raise BodyProblem("the body must be a JSON object")
            parsed = wire.parse({"max_tokens": 1, **body}, request.match_info)
        except BodyProblem as exc:
            error = wire.error(400, f"The request body is not valid JSON: {exc}")
            return web.json_response(error.body, status=400)
        except ApiError as exc:
            return web.json_response(exc.body, status=exc.status)
        return web.json_response({"input_tokens": estimate_tokens(parsed.canonical)})

    async def _unknown(self, request: web.Request) -> web.Response:
        """A path this server does not answer, recorded. A provider's client (a provider's
        header, or a path under ``/v1``) gets its provider's 404, which its SDK parses; any
        other caller a plain one that says where the endpoints are listed."""
        problem = f"Invalid URL ({request.method} {request.path})"
        self.records.append(Error(path=request.path, method=request.method, status=404, problem=problem))
        if "anthropic-version" in request.headers:
            family = "anthropic"
        elif "x-goog-api-key" in request.headers or request.path.startswith("/v1beta/"):
            family = "google"
        elif request.path == "/v1" or request.path.startswith("/v1/"):
            family = "openai"
        else:
            return web.json_response({"error": {"type": "not_found", "message": f"{problem}: GET / lists the "
                                                "endpoints of this server"}}, status=404)
        return web.json_response(api_error(family, 404, problem).body, status=404)

    async def _records(self, request: web.Request) -> web.Response:
        """The long poll: the records after ``after``, waiting up to ``wait`` seconds for one."""
        try:
            after = int(request.query.get("after", "0"))
            wait = min(float(request.query.get("wait", "0")), MAX_POLL_S)
        except ValueError:
            return web.json_response({"error": "after must be an integer and wait a number"}, status=400)
        if wait > 0:
            try:
                async with asyncio.timeout(wait):
                    await self.records.wait_after(after)
            except TimeoutError:
                pass                # nothing new within the poll: an empty answer
        return web.json_response(self.records.to_json(after))

    async def _beacon(self, request: web.Request) -> web.Response:
        """A record from another process (a window, in-process playback), parsed at the edge:
        a malformed one is refused with 400 and recorded as an error, never stored. A record
        without the run's token (``beacon_url``) is refused with 403 and recorded as an error
        naming its kind (and the window it claimed): evidence of a forgery."""
        path = redacted_beacon(request.path)
        where = f"beacon {request.method} {path}"
        try:
            data = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            data = None
        try:
            if not isinstance(data, dict):
                raise RecordError(where, "the body must be a JSON object (one record)")
            record = Record.from_json({"source": "beacon", **data}, where)
        except RecordError as exc:
            self.records.append(Error(path=path, problem=str(exc)))
            return web.json_response({"error": str(exc)}, status=400)
        token = request.match_info.get("token", "")
        if not secrets.compare_digest(token.encode(), self.beacon_token.encode()):
            problem = f"{where}: a {record.kind} record without the run's beacon token (refused: forged)"
            self.records.append(Error(path=path, method=request.method, status=403, problem=problem,
                                      window=getattr(record, "window", None)))
            return web.json_response({"error": problem}, status=403)
        return web.json_response(self.records.append(record).to_json())

    # --- model requests -------------------------------------------------------------------
    def _model_route(self, wire: Wire):
        async def handler(request: web.Request) -> web.StreamResponse:
            return await self._model_request(request, wire)
        return handler

    async def _model_request(self, request: web.Request, wire: Wire) -> web.StreamResponse:
        path = redacted_path(request)
        seen: dict[str, Any] = {"api": wire.NAME, "path": path, "headers": redact(request.headers)}
        raw = b""
        try:
            raw = await self._read_raw(request, wire)
            body = self._read_json(raw, wire, seen)
            parsed = wire.parse(body, request.match_info)
            restore_ids(parsed.canonical, (c for r in self.records.of_kind("response") if isinstance(r, Response)
                                           for c in r.tool_calls))
            seen["canonical"] = parsed.canonical
            plan = prepare(parsed, self.cursor, self.ids, self.beacon_url)
        except ApiError as exc:
            return self._refuse(self._kept(seen, raw, request), wire, exc)
        except Exception as exc:    # a fault of this server's own: answered and recorded as one
            return self._refuse(self._kept(seen, raw, request), wire,
                                wire.error(500, f"The fake server could not handle this request: "
                                                f"{type(exc).__name__}: {exc}"))
        encoder = wire.Encoder(plan, parsed, self.ids)
        if plan.side is not None:
            self.records.append(plan.side_record(parsed, path))
            if parsed.stream:
                return await self._stream(request, None, plan, encoder, self._exchange(None, wire, 200, True))
            return await self._whole(request, None, wire, plan, encoder)
        refusal = http_error_of(plan, wire.NAME)
        stored = self.records.append(Request(**self._kept(seen, raw, request),
                                             status=refusal.status if refusal else 200,
                                             error=refusal.message if refusal else None))
        request_no = stored.request
        assert request_no is not None
        self.records.append(plan.response_record(request_no))
        if refusal is not None:
            return self._json(request_no, wire, refusal.body, refusal.status, refusal.headers)
        if parsed.stream:
            return await self._stream(request, request_no, plan, encoder, self._exchange(request_no, wire, 200, True))
        return await self._whole(request, request_no, wire, plan, encoder)

    def _refuse(self, seen: dict[str, Any], wire: Wire, exc: ApiError) -> web.Response:
        """Answer ``exc`` and record the request it refuses, with an error record naming why."""
        refused = self.records.append(Request(**seen, status=exc.status, error=exc.message))
        assert refused.request is not None
        self.records.append(Error(request=refused.request, problem=exc.message))
        return self._json(refused.request, wire, exc.body, exc.status, exc.headers)

    def _exchange(self, request_no: int | None, wire: Wire, status: int, streamed: bool) -> list[bytes] | None:
        """Where the bytes of one answer are kept (``keep_wire``): its payload list, or None."""
        if not self.keep_wire:
            return None
        payloads: list[bytes] = []
        exchange = {"api": wire.NAME, "status": status, "sse": streamed, "payloads": payloads}
        if request_no is None:
            self.side_wire.append(exchange)
        else:
            self.wire[request_no] = exchange
        return payloads

    def _json(self, request_no: int | None, wire: Wire, body: dict, status: int = 200,
              headers: Mapping[str, str] | None = None) -> web.Response:
        response = web.json_response(body, status=status, headers=headers)
        exchange = self._exchange(request_no, wire, status, False)
        if exchange is not None:
            assert isinstance(response.body, bytes)
            exchange.append(response.body)
        return response

    @staticmethod
    def _kept(seen: dict[str, Any], raw: bytes, request: web.Request) -> dict[str, Any]:
        """The fields of a request record as stored: a large body bounded (``fake_server.bounded``),
        with excerpts around the request's own credentials where they appear in what is left out."""
        return bounded(seen, raw, credentials(request))

    async def _read_raw(self, request: web.Request, wire: Wire) -> bytes:
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise wire.error(413, f"Request body exceeds the maximum of {self.max_body_bytes} bytes.") from None

    @staticmethod
    def _read_json(raw: bytes, wire: Wire, seen: dict[str, Any]) -> dict[str, Any]:
        try:
            body = load_body(raw)
        except BodyProblem as exc:
            seen["body_text"] = raw[:2000].decode("utf-8", "replace")
            raise wire.error(400, "We could not parse the JSON body of your request. The API "
                                  f"expects a JSON payload, but what was sent was not valid JSON: {exc}") from None
        seen["body"] = body
        if not isinstance(body, dict):
            raise wire.error(400, "The request body must be a JSON object.")
        return body

    async def _stream(self, request: web.Request, request_no: int | None, plan: Plan, encoder: StreamEncoder,
                      sent: list[bytes] | None) -> web.StreamResponse:
        """Play ``plan`` as SSE. A numbered request records its chunks (each once it is handed to
        the transport, a burst of them at a time: ``fake_server.sse_out``), its end or the
        client's disconnect; a side request (``request_no`` None) records nothing more."""
        response = web.StreamResponse(status=200, headers=SSE_HEADERS)
        last_chunk = 0
        watch = hangup.watch(request)
        try:
            await response.prepare(request)
            out = SseOut(request, response, watch)
            async for emit in play(plan, encoder, self._flowing.wait):
                if emit.events:
                    payload = sse_all(emit.events)
                    if sent is not None:
                        sent.append(payload)
                    if out.write(payload):
                        await out.wait()
                if emit.late_ns and request_no is not None:
                    self.records.append(Late(request=request_no, chunk=emit.first, late_ns=emit.late_ns))
                run = emit.run
                for start in range(0, len(run), BURST):     # the hot loop of a long stream
                    burst = run[start:start + BURST]
                    payload = encoder.burst_sse(burst)
                    if sent is not None:
                        sent.append(payload)
                    wait = out.write(payload)
                    if request_no is not None:
                        first = emit.first + start
                        self.records.append_chunks(request_no, first, [chunk_fields(plan, d) for d in burst])
                        last_chunk = first + len(burst) - 1
                    if wait or len(burst) == BURST:
                        await out.wait()
                if request_no is None or not emit.final:
                    continue
                self.records.append(StreamEnd(request=request_no, complete=emit.complete))
                if isinstance(plan.ending, DisconnectFrame):
                    out.transport.abort()
                    return response
            await response.write_eof()
        except asyncio.CancelledError:      # the client hung up (handler_cancellation) or we are closing
            if not self._closing and request_no is not None:
                self.records.append(Disconnect(request=request_no, after_chunk=last_chunk, mono_ns=watch.gone()))
            raise
        except ConnectionResetError:        # the hang-up surfaced in a write instead
            if request_no is not None:
                self.records.append(Disconnect(request=request_no, after_chunk=last_chunk, mono_ns=watch.gone()))
        return response

    async def _whole(self, request: web.Request, request_no: int | None, wire: Wire, plan: Plan,
                     encoder: StreamEncoder) -> web.StreamResponse:
        """Non-streamed answer: the same plan and timing, one JSON body at the end."""
        complete = True
        watch = hangup.watch(request)
        try:
            async for emit in play(plan, encoder, self._flowing.wait):
                if emit.late_ns and request_no is not None:
                    self.records.append(Late(request=request_no, chunk=emit.first, late_ns=emit.late_ns))
                for delta in emit.run:      # the body is what the stream would have left
                    encoder.delta(delta)
                complete = emit.complete
        except asyncio.CancelledError:
            if not self._closing and request_no is not None:
                self.records.append(Disconnect(request=request_no, after_chunk=0, mono_ns=watch.gone()))
            raise
        if request_no is not None:
            self.records.append(StreamEnd(request=request_no, complete=complete))
        if complete:
            return self._json(request_no, wire, encoder.body())
        if isinstance(plan.ending, DisconnectFrame):
            assert request.transport is not None
            request.transport.abort()
            return web.Response()
        assert isinstance(plan.ending, StreamError), "only a disconnect or an error ends a played plan early"
        error = wire.error(500, plan.ending.message)
        return self._json(request_no, wire, error.body, 500)
