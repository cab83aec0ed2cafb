"""The questions checkers ask of an observation's fake-server records, and of canonical messages.

Records are the fake server's own typed values (``fake_server.records``: ``Request``,
``Response``, ``Chunk``, ``Window``…), carried as they are from the server to the checkers:
every field a record has is there by construction. These functions answer the questions every
checker asks ("the first request after this kill", "the response to request 3", "which tool
call opened window w1"), ordered by ``mono_ns``, the one clock all processes share. A
request's history and a ``model_request`` event's are read as the same ``Message`` values, so
that a check compares what the agent sent with what its store kept in one vocabulary.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from fake_server import records as records_
from fake_server.records import Chunk, Request, Response, Window, WindowDone
from harness.model import Observation, SessionEvent

R = TypeVar("R", bound=records_.Record)
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
# The fake server's records are typed (``fake_server.records``); these ask them the questions
# checkers share, and read a request's canonical history as ``Message`` values.

# How the fake server's strict wires word a refusal of an unbalanced history (Chat, Responses,
# Anthropic): each names the tool call, tool use or function call output it found unanswered.
UNBALANCED_WORDS = re.compile(r"tool_call|tool call|tool_use|tool_result|tool output|function call", re.I)


def sent_messages(req: Request) -> tuple[Message, ...]:
    """The canonical history a request carried (none when the server could not read it)."""
    return tuple(message(m) for m in req.canonical["messages"]) if req.canonical else ()


def parsed(req: Request) -> bool:
    """The server could read the request's history (a refused parse has no canonical messages)."""
    return req.canonical is not None


def refused(req: Request) -> bool:
    return req.error is not None or req.status >= 400


def unbalanced(req: Request) -> bool:
    """The server refused it because its history is not balanced (its error names the calls)."""
    return refused(req) and bool(req.error) and UNBALANCED_WORDS.search(req.error or "") is not None


def request_number(req: Request) -> int:
    """A request's number: the server's store numbers every request it keeps."""
    if req.request is None:
        raise ValueError(f"a request record at {req.mono_ns} has no number")
    return req.request


def calls(response: Response) -> tuple[Call, ...]:
    """The tool calls a response scripted."""
    return tuple(_call(c) for c in response.tool_calls)


def _of(records: Iterable[records_.Record], kind: type[R]) -> list[R]:
    return [r for r in records if isinstance(r, kind)]


def requests(obs: Observation) -> list[Request]:
    return _of(obs.records, Request)


def request(obs: Observation, number: int) -> Request | None:
    return next((r for r in requests(obs) if r.request == number), None)


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
    return next((r for r in _of(obs.records, Response) if r.request == number), None)


def chunks_of(obs: Observation, number: int) -> list[Chunk]:
    return sorted((r for r in _of(obs.records, Chunk) if r.request == number), key=lambda c: c.chunk)


def streamed_text(obs: Observation, number: int, upto_chunk: int | None = None) -> str:
    """The text the server flushed for request ``number``, up to chunk ``upto_chunk``."""
    return "".join(c.text for c in chunks_of(obs, number) if upto_chunk is None or c.chunk <= upto_chunk)


def windows_opened(obs: Observation, before_ns: int | None = None) -> list[Window]:
    return [r for r in _of(obs.records, Window) if before_ns is None or r.mono_ns < before_ns]


def windows_done(obs: Observation, before_ns: int | None = None) -> list[WindowDone]:
    return [r for r in _of(obs.records, WindowDone) if before_ns is None or r.mono_ns < before_ns]


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
    response = response_to(obs, req.request)
    made = list(calls(response)) if response else []
    naming = re.compile(rf"(?<![\w-]){re.escape(window)}(?![\w-])")
    named = [c for c in made if naming.search(str(c.arguments or ""))]
    if len(named) == 1:
        return req.request, named[0].id
    if len(made) == 1:
        return req.request, made[0].id
    return req.request, None


def window_response_calls(obs: Observation, window: str) -> tuple[Call, ...]:
    """Every call of the response that opened ``window`` (the agent received that whole response)."""
    number, _ = window_call(obs, window)
    response = response_to(obs, number)
    return calls(response) if response else ()


# --- evidence --------------------------------------------------------------------------


def request_item(req: Request, note: str | None = None) -> dict[str, Any]:
    """A model request the fake server received, as evidence: number and message outline."""
    item: dict[str, Any] = {"request": req.request, "status": req.status,
                            "messages": message_outline(sent_messages(req))}
    if req.error:
        item["error"] = clip(req.error, 2 * EXCERPT_CHARS)
    if note:
        item["note"] = note
    return item


def record_item(record: records_.Record) -> dict[str, Any]:
    """Any record, as evidence: its kind and the fields that identify it."""
    keep = ("request", "chunk", "window", "status", "error", "problem", "after_chunk", "finished")
    values = {"kind": record.kind, **{k: getattr(record, k) for k in keep if getattr(record, k, None) is not None}}
    return {k: clip(v) if isinstance(v, str) else v for k, v in values.items()}


def refused_records(records: Iterable[records_.Record]) -> list[Request]:
    """The requests among ``records`` the server refused."""
    return [req for req in _of(records, Request) if refused(req)]


def record_texts(obs: Observation) -> Iterator[tuple[str, str]]:
    """Every record as text, with where it is, for the canary scan. A request's headers are
    left out: carrying the key in its authentication header is what the key is for."""
    for r in obs.records:
        data = r.to_json()
        if isinstance(r, Request):
            body = {k: v for k, v in data.items() if k != "headers"}
            yield f"request {r.request} sent to the model", json.dumps(body, default=str)
        else:
            yield f"{r.kind} record {r.index or ''}".rstrip(), json.dumps(data, default=str)


# --- text ------------------------------------------------------------------------------


def squeeze(text: str) -> str:
    return "".join(text.split())


def same_text(a: str, b: str) -> bool:
    """Equal, ignoring whitespace differences (terminal output wraps and pads)."""
    return squeeze(a) == squeeze(b)


def starts_with(text: str, prefix: str) -> bool:
    """``text`` begins with ``prefix``, ignoring whitespace differences."""
    return squeeze(text).startswith(squeeze(prefix))
