"""Read-only views over an observation's fake-server records and session log.

Checkers ask the same questions of the records ("the first request after this kill", "the
response to request 3", "which tool call opened window w1"); answering them once here keeps
each checker down to its invariant. Everything is ordered by ``mono_ns``, the one clock all
processes share.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from harness.model import Observation, SessionEvent, SessionLog, StopDelivery

Record = Mapping[str, Any]


def of_kind(obs: Observation, kind: str) -> list[Record]:
    return [r for r in obs.records if r.get("kind") == kind]


def requests_between(obs: Observation, after_ns: int, before_ns: int | None = None) -> list[Record]:
    """Model requests the server received strictly after ``after_ns`` (and before ``before_ns``)."""
    return [
        r for r in of_kind(obs, "request")
        if r["mono_ns"] > after_ns and (before_ns is None or r["mono_ns"] < before_ns)
    ]


def first_request_after(obs: Observation, after_ns: int) -> Record | None:
    later = requests_between(obs, after_ns)
    return later[0] if later else None


def last_request_before(obs: Observation, before_ns: int) -> Record | None:
    earlier = [r for r in of_kind(obs, "request") if r["mono_ns"] < before_ns]
    return earlier[-1] if earlier else None


def request_record(obs: Observation, number: int) -> Record | None:
    return next((r for r in of_kind(obs, "request") if r.get("request") == number), None)


def response_to(obs: Observation, number: int) -> Record | None:
    return next((r for r in of_kind(obs, "response") if r.get("request") == number), None)


def chunks_of(obs: Observation, number: int) -> list[Record]:
    return sorted((r for r in of_kind(obs, "chunk") if r.get("request") == number), key=lambda r: r["chunk"])


def streamed_text(obs: Observation, number: int, upto_chunk: int | None = None) -> str:
    """The text the server flushed for request ``number``, up to chunk ``upto_chunk``."""
    return "".join(
        c.get("text") or "" for c in chunks_of(obs, number) if upto_chunk is None or c["chunk"] <= upto_chunk
    )


def window_record(obs: Observation, window: str) -> Record | None:
    return next((r for r in of_kind(obs, "window") if r.get("window") == window), None)


def messages(record: Record) -> list[Mapping[str, Any]]:
    """The canonical messages of a request record (same shape for every wire API)."""
    return list((record.get("canonical") or {}).get("messages") or [])


def window_call(obs: Observation, window: str) -> tuple[int | None, str | None]:
    """The request whose response opened ``window``, and the tool call id that ran it.

    The window program reports after the response that scripted it was streamed, so its
    request is the last one received before the window record. Within that response the call
    is the one whose arguments name the window; a single call is taken as is.
    """
    rec = window_record(obs, window)
    if rec is None:
        return None, None
    request = last_request_before(obs, rec["mono_ns"])
    if request is None:
        return None, None
    response = response_to(obs, request["request"]) or {}
    calls = list(response.get("tool_calls") or [])
    naming = re.compile(rf"(?<![\w-]){re.escape(window)}(?![\w-])")
    named = [c for c in calls if naming.search(str(c.get("arguments", "")))]
    if len(named) == 1:
        return request["request"], named[0].get("id")
    if len(calls) == 1:
        return request["request"], calls[0].get("id")
    return request["request"], None


def balance_problems(msgs: Iterable[Mapping[str, Any]]) -> list[str]:
    """Why a message history is not balanced (empty when it is).

    Balanced: every tool call of an assistant message is answered by exactly one tool
    message with its id, among the tool messages that directly follow it, and no tool
    message answers a call that was not made there.
    """
    problems: list[str] = []
    open_calls: dict[str, int] = {}
    for position, m in enumerate(msgs, start=1):
        role = m.get("role")
        if role == "tool":
            call_id = m.get("tool_call_id")
            if call_id in open_calls:
                del open_calls[call_id]
            else:
                problems.append(f"message {position}: tool result for {call_id!r}, which no preceding assistant "
                                f"message left open")
            continue
        problems.extend(f"message {at}: tool call {cid!r} has no tool result" for cid, at in open_calls.items())
        open_calls = {}
        if role == "assistant":
            for call in m.get("tool_calls") or []:
                open_calls[call.get("id")] = position
    problems.extend(f"message {at}: tool call {cid!r} has no tool result" for cid, at in open_calls.items())
    return problems


def tool_answer(msgs: list[Mapping[str, Any]], call_id: str) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """The assistant message that made call ``call_id`` and the tool message answering it."""
    made = next((m for m in msgs if m.get("role") == "assistant"
                 and any(c.get("id") == call_id for c in m.get("tool_calls") or [])), None)
    answer = next((m for m in msgs if m.get("role") == "tool" and m.get("tool_call_id") == call_id), None)
    return made, answer


def chat_message_text(message: Mapping[str, Any]) -> str:
    """The text of a Chat Completions message (string content or a list of text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def turn_at(log: SessionLog, ns: int) -> int | None:
    """The number of the last turn started before ``ns``."""
    started = [e for e in log.of_type("turn_started") if e.mono_ns is not None and e.mono_ns < ns]
    return started[-1].turn if started else None


def same_text(a: str, b: str) -> bool:
    """Equal, ignoring whitespace differences (terminal output wraps and pads)."""
    return "".join(a.split()) == "".join(b.split())


def starts_with(text: str, prefix: str) -> bool:
    """``text`` begins with ``prefix``, ignoring whitespace differences."""
    return "".join(text.split()).startswith("".join(prefix.split()))


def first_changed_event(before: SessionLog, after: SessionLog) -> SessionEvent | None:
    """The first event of ``before`` that ``after`` does not hold unchanged at the same place.

    Returns the event of ``after`` at that place, or the missing event of ``before`` when
    ``after`` is shorter; None when ``after`` starts with every event of ``before``.
    """
    for old, new in zip(before.events, after.events):
        if (old.seq, old.type, dict(old.data)) != (new.seq, new.type, dict(new.data)):
            return new
    if len(after.events) < len(before.events):
        return before.events[len(after.events)]
    return None


def stops_seen(obs: Observation) -> list[StopDelivery]:
    """Every Stop that reached a running turn: the harness's deliveries, plus the timeouts the
    agent fired itself (a ``stop_requested`` with source ``timeout`` in its log), which no
    driver delivers."""
    stops = [s for s in obs.stops if s.exercised]
    if obs.log is not None and not any(s.source == "timeout" for s in stops):
        for event in obs.log.of_type("stop_requested"):
            if event.get("source") == "timeout" and event.mono_ns is not None:
                stops.append(StopDelivery(mono_ns=event.mono_ns, source="timeout", how="timeout (agent's own)",
                                          phase="other", exercised=True))
    return sorted(stops, key=lambda s: s.mono_ns)
