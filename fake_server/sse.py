"""Server-sent events as bytes, and templates of the events a long stream repeats.

A streamed answer is mostly one event over and over — a text delta — that differs from chunk to
chunk in its text alone (and, on the Responses API, its sequence number). Encoding each one as a
dict through ``json.dumps`` costs more than everything else the server does for a chunk, so an
encoder makes a ``Template`` of such an event once, from the very dict it would send with a
marker in place of the text, and then only escapes the text into it. The bytes are the ones
``sse`` would give for the dict (the template is cut out of that output), which the encoders'
tests check byte for byte.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from json.encoder import encode_basestring  # json.dumps' own string escaping (ensure_ascii=False)
from typing import Any, Literal

TEXT = "\ue000stopbench-text\ue000"   # a private-use marker no scenario text or id is made of
NUMBER = 987_654_321_987_654_321     # the same for a number (a sequence number)
_TEXT_JSON = json.dumps(TEXT, ensure_ascii=False).encode()
_NUMBER_JSON = str(NUMBER).encode()


def sse(event: str | None, data: Any) -> bytes:
    """One server-sent event; ``data`` is a dict (JSON) or a literal like ``[DONE]``."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def sse_all(events: Iterable[tuple[str | None, Any]]) -> bytes:
    return b"".join(sse(name, data) for name, data in events)


class Template:
    """The bytes of events that differ only in one string (``fill``), or in one string and then
    one number (``fill_numbered``)."""

    __slots__ = ("head", "middle", "tail", "strings")

    def __init__(self, head: bytes, middle: bytes, tail: bytes):
        self.head, self.middle, self.tail = head, middle, tail
        # The same parts as text (SSE is UTF-8): a burst's events are put together as one string
        # and encoded once.
        self.strings = head.decode(), middle.decode(), tail.decode()

    @classmethod
    def of(cls, events: list[tuple[str | None, Any]], numbered: bool = False) -> Template | None:
        """The template of ``events`` made with ``TEXT`` (and ``NUMBER``, if ``numbered``) in place
        of what varies; None when a marker is not found exactly once, in that order (a model name
        that contains one, say): the caller then encodes such events whole."""
        whole = sse_all(events)
        head, found, rest = whole.partition(_TEXT_JSON)
        if not found or _TEXT_JSON in rest:
            return None
        if not numbered:
            return cls(head, b"", rest)
        middle, found, tail = rest.partition(_NUMBER_JSON)
        if not found or _NUMBER_JSON in tail:
            return None
        return cls(head, middle, tail)

    def fill(self, text: str) -> bytes:
        return self.head + encode_basestring(text).encode() + self.tail

    def fill_numbered(self, text: str, number: int) -> bytes:
        return self.head + encode_basestring(text).encode() + self.middle + str(number).encode() + self.tail

    def fill_all(self, texts: list[str]) -> bytes:
        """``fill`` of each of ``texts``, joined."""
        head, _, tail = self.strings
        return (head + (tail + head).join(map(encode_basestring, texts)) + tail).encode()

    def fill_all_numbered(self, texts: list[str], first: int) -> bytes:
        """``fill_numbered`` of each of ``texts``, joined, numbered from ``first``."""
        head, middle, tail = self.strings
        return "".join([f"{head}{encode_basestring(text)}{middle}{number}{tail}"
                        for number, text in enumerate(texts, first)]).encode()


class Templates:
    """An encoder's templates by key: ``made.get(key)`` is the template (falsy when it could not
    be made, None when not made yet), ``make`` makes one from the events with the markers in. A
    dict read, not a call, on the path every chunk takes."""

    def __init__(self) -> None:
        self.made: dict[object, Template | Literal[False]] = {}

    def make(self, key: object, events: list[tuple[str | None, Any]],
             numbered: bool = False) -> Template | Literal[False]:
        made = self.made[key] = Template.of(events, numbered) or False
        return made
