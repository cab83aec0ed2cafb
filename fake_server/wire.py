"""What a wire API module provides, and the registry the server and the player find them in.

A wire module (``wire_chat``, ``wire_responses``, ``wire_anthropic``, ``wire_gemini``) is the
only place that knows one provider's JSON: everything else works on the canonical request
(``fake_server.canonical``) and on the wire-neutral plan (``fake_server.script``). A new API
is one more module that satisfies ``Wire`` and one more ``register`` call; the server mounts
its paths, response choice, scripted timing and records come for free.

A module satisfies ``Wire`` structurally (mypy checks a module against a Protocol):

- ``NAME``: the wire's name as profiles and records spell it (``api`` in a request record);
- ``PATHS``: the full POST routes it answers (aiohttp patterns, so a path may carry a
  ``{model}`` part, which ``parse`` receives in ``route``: Gemini's model and method are in
  its path, ``/v1beta/models/{model}:{method}``);
- ``parse(body, route)``: the request body (a JSON object) and the route's path parameters
  (none by default) → ``Parsed`` with its canonical form, **validated as strictly as the real
  API**: whatever the provider refuses (a missing field, a wrong type, an unbalanced tool
  history) raises the provider's own ``ApiError``, so an agent that only works against a
  lenient fake is caught here;
- ``Encoder(plan, parsed, ids)``: one response's encoder (``StreamEncoder``) — the stream as
  SSE events frame by frame (each delta also as its SSE bytes, from a template: a long stream
  is mostly one event over and over), and the non-streamed body;
- ``error(status, message, retry_after=…)``: an error body in the provider's shape;
- ``unknown_model(model)``: the provider's refusal of a model it does not serve.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from . import wire_anthropic, wire_chat, wire_gemini, wire_responses
from .errors import ApiError
from .script import Delta, Ids, Parsed, Plan

Event = tuple[str | None, Any]   # (SSE event name or None, JSON-able data or a literal like "[DONE]")


class StreamEncoder(Protocol):
    """Encodes one plan; ``start``/``delta``/``finish``/``error`` return the events to send at
    that point of the stream, ``body`` the whole response when it was not streamed."""

    def start(self) -> list[Event]: ...

    def delta(self, d: Delta) -> list[Event]: ...

    def delta_sse(self, d: Delta) -> bytes:
        """``delta(d)`` as the SSE bytes ``sse`` makes of its events, the same bytes, from a
        template where only the text differs from the last such chunk (``fake_server.sse``)."""
        ...

    def burst_sse(self, burst: list[Delta]) -> bytes:
        """``delta_sse`` of each of ``burst``, joined, leaving the encoder as they would: the
        chunks a stream sends back to back, at once when they continue one event's text."""
        ...

    def finish(self) -> list[Event]: ...

    def error(self, kind: str, message: str) -> list[Event]: ...

    def body(self) -> dict[str, Any]: ...


class Wire(Protocol):
    NAME: str
    PATHS: tuple[str, ...]

    def parse(self, body: dict[str, Any], route: Mapping[str, str] = ...) -> Parsed: ...

    def Encoder(self, plan: Plan, parsed: Parsed, ids: Ids) -> StreamEncoder: ...

    def error(self, status: int, message: str | None = None, *, retry_after: float | None = None) -> ApiError: ...

    def unknown_model(self, model: str) -> ApiError: ...


class UnknownWire(LookupError):
    """A wire name no module is registered under."""

    def __init__(self, name: str):
        self.name = name
        super().__init__(f"unknown wire API {name!r} (registered: {', '.join(sorted(_WIRES))})")


_WIRES: dict[str, Wire] = {}


def register(wire: Wire) -> Wire:
    """Make ``wire`` available under its ``NAME``; a second module under one name is a mistake."""
    if wire.NAME in _WIRES and _WIRES[wire.NAME] is not wire:
        raise ValueError(f"a wire API named {wire.NAME!r} is already registered")
    _WIRES[wire.NAME] = wire
    return wire


def wire_for(name: str) -> Wire:
    """The wire module registered as ``name``; UnknownWire (naming the known ones) otherwise."""
    try:
        return _WIRES[name]
    except KeyError:
        raise UnknownWire(name) from None


def wires() -> list[Wire]:
    return list(_WIRES.values())


for _module in (wire_chat, wire_responses, wire_anthropic, wire_gemini):
    register(_module)
