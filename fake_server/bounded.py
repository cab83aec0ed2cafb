"""What a request record keeps: what the checks read, bounded in size.

Agents resend their whole history with every request, so a task whose tool printed a few
megabytes sends those megabytes again and again; a server keeping every body whole grows by
each one for as long as it runs. The record keeps what the harness's checks read — the canonical
request: roles, tool calls and their ids, tool results, every text — with each text (or tool
call's arguments) longer than ``KEEP_TEXT_CHARS`` kept as its start and its end around a marker
naming how many characters were left out and the SHA-256 of the whole, in every request alike
(one text sent twice reads the same in both records). A body up to ``KEEP_BODY_BYTES`` is kept
whole; past it ``body`` is left out, its size and SHA-256 kept. ``elided`` says what was cut, so
no reader takes a cut text for what was sent.

The canary scan (C13) looks for the API key in every record: around each place the
request's own credential appears in a body that is not kept whole, an excerpt is kept
(``body_excerpts``), so a key leaked into a large request is still found.
"""
from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from typing import Any

from .canonical import Canonical

KEEP_BODY_BYTES = 256 * 1024
KEEP_TEXT_CHARS = 64 * 1024
EXCERPT_CHARS = 60
MAX_EXCERPTS = 20
MIN_SECRET_CHARS = 8     # shorter credentials would match by chance


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def bounded(fields: dict[str, Any], raw: bytes, secrets: Iterable[str]) -> dict[str, Any]:
    """The fields of a Request record as it is stored: every canonical text (or tool call's
    arguments) past ``KEEP_TEXT_CHARS`` ``cut``, in every request alike, so that one text sent
    twice reads the same in both records; the body kept whole up to ``KEEP_BODY_BYTES``, past it
    left out (its size and SHA-256 kept, and excerpts around the request's credentials).
    ``elided`` lists what was cut or left out."""
    elided: list[str] = []
    out = dict(fields)
    if out.get("canonical") is not None:
        out["canonical"] = _cut_texts(out["canonical"], elided)
    if len(raw) > KEEP_BODY_BYTES and "body" in out:
        del out["body"]
        out["body_bytes"] = len(raw)
        out["body_sha256"] = sha256(raw)
        elided.insert(0, f"body ({len(raw)} bytes): not kept, past {KEEP_BODY_BYTES} bytes")
        excerpts = _excerpts(raw, secrets)
        if excerpts:
            out["body_excerpts"] = excerpts
    if elided:
        out["elided"] = elided
    return out


def cut(text: str) -> str:
    """``text`` if it is at most ``KEEP_TEXT_CHARS`` long, else its start and end around a
    marker naming what was left out."""
    if len(text) <= KEEP_TEXT_CHARS:
        return text
    half = KEEP_TEXT_CHARS // 2
    left_out = len(text) - 2 * half
    digest = sha256(text.encode("utf-8"))
    return f"{text[:half]}[… {left_out} characters elided; the whole text's sha256 is {digest} …]{text[-half:]}"


def _cut_texts(canonical: Canonical, elided: list[str]) -> Canonical:
    """``canonical`` with each long text and tool call arguments ``cut`` (a copy, if any is),
    each noted in ``elided``."""
    if not any(len(m["text"]) > KEEP_TEXT_CHARS or any(len(c["arguments"]) > KEEP_TEXT_CHARS
                                                       for c in m["tool_calls"]) for m in canonical["messages"]):
        return canonical
    out = copy.copy(canonical)
    messages = []
    for i, m in enumerate(canonical["messages"]):
        kept = dict(m)
        if len(m["text"]) > KEEP_TEXT_CHARS:
            kept["text"] = cut(m["text"])
            elided.append(f"messages[{i}].text ({len(m['text'])} characters): start and end kept")
        calls = []
        for j, c in enumerate(m["tool_calls"]):
            if len(c["arguments"]) > KEEP_TEXT_CHARS:
                elided.append(f"messages[{i}].tool_calls[{j}].arguments ({len(c['arguments'])} characters): "
                              "start and end kept")
                c = {**c, "arguments": cut(c["arguments"])}
            calls.append(c)
        kept["tool_calls"] = calls
        messages.append(kept)
    out["messages"] = messages  # type: ignore[typeddict-item]
    return out


def _excerpts(raw: bytes, secrets: Iterable[str]) -> list[str]:
    """The text around each occurrence of each secret in ``raw`` (up to ``MAX_EXCERPTS``)."""
    out: list[str] = []
    for secret in {s for s in secrets if len(s) >= MIN_SECRET_CHARS}:
        needle = secret.encode()
        at = raw.find(needle)
        while at >= 0 and len(out) < MAX_EXCERPTS:
            around = raw[max(0, at - EXCERPT_CHARS):at + len(needle) + EXCERPT_CHARS]
            out.append(around.decode("utf-8", "replace"))
            at = raw.find(needle, at + len(needle))
    return out
