"""Read-only views over an observation's fake-server records, and the questions checkers ask
of them.

This is the one module that touches a record's fields: checkers get typed views
(``Request``, ``Response``, ``Window``…) and never index a record themselves, so when the
records become typed classes only this module changes. The views answer the questions every
checker asks ("the first request after this kill", "the response to request 3", "which tool
call opened window w1"). Everything is ordered by ``mono_ns``, the one clock all processes
share. A record missing a field a view needs raises (``KeyError``): the safe wrapper turns
that into ``unknown``, never into a verdict on half-read evidence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.model import Observation, SessionEvent

Record = Mapping[str, Any]
EXCERPT_CHARS = 160


def clip(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """A short, single-line rendering of any value, for evidence."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- canonical messages ----------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A tool call as a message or a response carries it."""

    id: str | None
    name: str | None
    arguments: Any


@dataclass(frozen=True)
class Message:
    """A canonical message: the same shape in every request record and every reader's
    ``model_request`` event."""

    role: str | None
    text: str
    tool_calls: tuple[Call, ...] = ()
    tool_call_id: str | None = None

    @property
    def call_ids(self) -> tuple[str | None, ...]:
        return tuple(c.id for c in self.tool_calls)


def _call(raw: Any) -> Call:
    data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    return Call(id=data.get("id"), name=data.get("name"), arguments=data.get("arguments"))


def message(raw: Mapping[str, Any]) -> Message:
    """One canonical message (``{role, text, tool_calls, tool_call_id}``) as a view."""
    return Message(role=raw.get("role"), text=str(raw.get("text") or ""),
                   tool_calls=tuple(_call(c) for c in raw.get("tool_calls") or ()),
                   tool_call_id=raw.get("tool_call_id") or None)


def event_messages(event: SessionEvent) -> tuple[Message, ...]:
    """The canonical messages a reader put in a ``model_request`` event."""
    return tuple(message(m) for m in event.get("messages") or () if isinstance(m, Mapping))


def event_calls(event: SessionEvent) -> tuple[Call, ...]:
    """The tool calls of an ``assistant_message`` event."""
    return tuple(_call(c) for c in event.get("tool_calls") or ())


def message_outline(msgs: Iterable[Message]) -> list[str]:
    """One line per message, for evidence: role, text, calls made and call answered."""
    outline = []
    for m in msgs:
        part = f"{m.role}: {clip(m.text, 60)}"
        if m.tool_calls:
            part += f" calls={list(m.call_ids)}"
        if m.tool_call_id:
            part += f" for={m.tool_call_id}"
        outline.append(part)
    return outline


def balance_problems(msgs: Iterable[Message]) -> list[str]:
    """Why a message history is not balanced (empty when it is).

    Balanced: every tool call of an assistant message is answered by exactly one tool
    message with its id, among the tool messages that directly follow it, and no tool
    message answers a call that was not made there.
    """
    problems: list[str] = []
    open_calls: dict[str | None, int] = {}
    for position, m in enumerate(msgs, start=1):
        if m.role == "tool":
            if m.tool_call_id in open_calls:
                del open_calls[m.tool_call_id]
            else:
                problems.append(f"message {position}: tool result for {m.tool_call_id!r}, which no preceding "
                                "assistant message left open")
            continue
        problems.extend(f"message {at}: tool call {cid!r} has no tool result" for cid, at in open_calls.items())
        open_calls = {}
        if m.role == "assistant":
            for cid in m.call_ids:
                open_calls[cid] = position
    problems.extend(f"message {at}: tool call {cid!r} has no tool result" for cid, at in open_calls.items())
    return problems


def tool_answer(msgs: Sequence[Message], call_id: str) -> tuple[Message | None, Message | None]:
    """The assistant message that made call ``call_id`` and the tool message answering it."""
    made = next((m for m in msgs if m.role == "assistant" and call_id in m.call_ids), None)
    answer = next((m for m in msgs if m.role == "tool" and m.tool_call_id == call_id), None)
    return made, answer


# --- records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """A model request the fake server received."""

    number: int
    mono_ns: int
    status: int | None
    error: str | None
    messages: tuple[Message, ...]
    parsed: bool  # the server could read its history (a refused parse has no canonical messages)

    @property
    def refused(self) -> bool:
        return self.error is not None or (self.status is not None and self.status >= 400)

    @property
    def unbalanced(self) -> bool:
        """The server refused it because its history is not balanced (its error names the calls)."""
        return self.refused and bool(self.error) and UNBALANCED_WORDS.search(self.error or "") is not None


# How the fake server's strict wires word a refusal of an unbalanced history (Chat, Responses,
# Anthropic): each names the tool call, tool use or function call output it found unanswered.
UNBALANCED_WORDS = re.compile(r"tool_call|tool call|tool_use|tool_result|tool output|function call", re.I)


@dataclass(frozen=True)
class Response:
    """What the fake server scripted in answer to a request."""

    number: int
    mono_ns: int
    text: str
    tool_calls: tuple[Call, ...]


@dataclass(frozen=True)
class Chunk:
    number: int  # the request it answers
    chunk: int
    text: str
    mono_ns: int


@dataclass(frozen=True)
class Window:
    """A bash window program reporting it is running (its beacon)."""

    window: str
    mono_ns: int
    pids: tuple[Any, ...]


@dataclass(frozen=True)
class WindowDone:
    window: str
    mono_ns: int
    finished: bool  # ran to its end (False: it was ended early)


def _of_kind(records: Iterable[Record], kind: str) -> Iterator[Record]:
    return (r for r in records if r.get("kind") == kind)


def _request(r: Record) -> Request:
    canonical = r.get("canonical")
    msgs = tuple(message(m) for m in (canonical or {}).get("messages") or () if isinstance(m, Mapping))
    error = r.get("error")
    return Request(number=r["request"], mono_ns=r["mono_ns"], status=r.get("status"),
                   error=str(error) if error else None, messages=msgs, parsed=canonical is not None)


def requests(obs: Observation) -> list[Request]:
    return [_request(r) for r in _of_kind(obs.records, "request")]


def request(obs: Observation, number: int) -> Request | None:
    return next((r for r in requests(obs) if r.number == number), None)


def requests_between(obs: Observation, after_ns: int, before_ns: int | None = None) -> list[Request]:
    """Model requests the server received strictly after ``after_ns`` (and before ``before_ns``)."""
    return [r for r in requests(obs) if r.mono_ns > after_ns and (before_ns is None or r.mono_ns < before_ns)]


def first_request_after(obs: Observation, after_ns: int) -> Request | None:
    later = requests_between(obs, after_ns)
    return later[0] if later else None


def last_request_before(obs: Observation, before_ns: int) -> Request | None:
    earlier = [r for r in requests(obs) if r.mono_ns < before_ns]
    return earlier[-1] if earlier else None


def response_to(obs: Observation, number: int | None) -> Response | None:
    if number is None:
        return None
    r = next((r for r in _of_kind(obs.records, "response") if r.get("request") == number), None)
    if r is None:
        return None
    return Response(number=number, mono_ns=r["mono_ns"], text=str(r.get("text") or ""),
                    tool_calls=tuple(_call(c) for c in r.get("tool_calls") or ()))


def chunks_of(obs: Observation, number: int) -> list[Chunk]:
    chunks = [Chunk(number=number, chunk=r["chunk"], text=str(r.get("text") or ""), mono_ns=r["mono_ns"])
              for r in _of_kind(obs.records, "chunk") if r.get("request") == number]
    return sorted(chunks, key=lambda c: c.chunk)


def streamed_text(obs: Observation, number: int, upto_chunk: int | None = None) -> str:
    """The text the server flushed for request ``number``, up to chunk ``upto_chunk``."""
    return "".join(c.text for c in chunks_of(obs, number) if upto_chunk is None or c.chunk <= upto_chunk)


def windows_opened(obs: Observation, before_ns: int | None = None) -> list[Window]:
    return [Window(window=r["window"], mono_ns=r["mono_ns"],
                   pids=tuple(p.get("pid") if isinstance(p, Mapping) else p for p in r.get("pids") or ()))
            for r in _of_kind(obs.records, "window") if before_ns is None or r["mono_ns"] < before_ns]


def windows_done(obs: Observation, before_ns: int | None = None) -> list[WindowDone]:
    return [WindowDone(window=r["window"], mono_ns=r["mono_ns"], finished=bool(r.get("finished")))
            for r in _of_kind(obs.records, "window_done") if before_ns is None or r["mono_ns"] < before_ns]


def window_opened(obs: Observation, window: str) -> Window | None:
    return next((w for w in windows_opened(obs) if w.window == window), None)


def windows_open_at(obs: Observation, ns: int) -> list[str]:
    """Windows that had reported running before ``ns`` and not yet reported done."""
    done = {d.window for d in windows_done(obs, ns)}
    return [w.window for w in windows_opened(obs, ns) if w.window not in done]


def window_call(obs: Observation, window: str) -> tuple[int | None, str | None]:
    """The request whose response opened ``window``, and the tool call id that ran it.

    The window program reports after the response that scripted it was streamed, so its
    request is the last one received before the window record. Within that response the call
    is the one whose arguments name the window; a single call is taken as is.
    """
    opened = window_opened(obs, window)
    if opened is None:
        return None, None
    req = last_request_before(obs, opened.mono_ns)
    if req is None:
        return None, None
    response = response_to(obs, req.number)
    calls = list(response.tool_calls) if response else []
    naming = re.compile(rf"(?<![\w-]){re.escape(window)}(?![\w-])")
    named = [c for c in calls if naming.search(str(c.arguments or ""))]
    if len(named) == 1:
        return req.number, named[0].id
    if len(calls) == 1:
        return req.number, calls[0].id
    return req.number, None


def window_response_calls(obs: Observation, window: str) -> tuple[Call, ...]:
    """Every call of the response that opened ``window`` (the agent received that whole response)."""
    number, _ = window_call(obs, window)
    response = response_to(obs, number)
    return response.tool_calls if response else ()


# --- evidence --------------------------------------------------------------------------


def request_item(req: Request, note: str | None = None) -> dict[str, Any]:
    """A model request the fake server received, as evidence: number and message outline."""
    item: dict[str, Any] = {"request": req.number, "status": req.status, "messages": message_outline(req.messages)}
    if req.error:
        item["error"] = clip(req.error, 2 * EXCERPT_CHARS)
    if note:
        item["note"] = note
    return item


def record_item(record: Record) -> dict[str, Any]:
    """Any record, as evidence: its kind and the fields that identify it."""
    keep = ("kind", "request", "chunk", "window", "status", "error", "problem", "after_chunk", "finished")
    return {k: clip(record[k]) if isinstance(record[k], str) else record[k] for k in keep if k in record}


def refused_records(records: Iterable[Record]) -> list[Request]:
    """The requests among ``records`` the server refused."""
    return [req for req in (_request(r) for r in _of_kind(records, "request") if "mono_ns" in r) if req.refused]


def record_texts(obs: Observation) -> Iterator[tuple[str, str]]:
    """Every record as text, with where it is, for the canary scan. A request's headers are
    left out: carrying the key in its authentication header is what the key is for."""
    for r in obs.records:
        kind = r.get("kind")
        if kind == "request":
            body = {k: v for k, v in r.items() if k != "headers"}
            yield f"request {r.get('request')} sent to the model", json.dumps(body, default=str)
        else:
            yield f"{kind} record {r.get('index', '')}".rstrip(), json.dumps(dict(r), default=str)


# --- text ------------------------------------------------------------------------------


def squeeze(text: str) -> str:
    return "".join(text.split())


def same_text(a: str, b: str) -> bool:
    """Equal, ignoring whitespace differences (terminal output wraps and pads)."""
    return squeeze(a) == squeeze(b)


def starts_with(text: str, prefix: str) -> bool:
    """``text`` begins with ``prefix``, ignoring whitespace differences."""
    return squeeze(text).startswith(squeeze(prefix))
