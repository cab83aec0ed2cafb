"""The calibration agent's model client: one HTTP/1.1 request, a chunked SSE body, the steps of
an OpenAI Chat Completions stream, and the one ``bash`` tool it offers.

Standard library only and written by hand, as the agent itself (``agent.py``): an HTTP library
would cost the headless agent milliseconds of start-up that its latencies would carry. The
in-process agent (``agent_inproc.py``) speaks the same wire through it.
"""

from __future__ import annotations

import json
from typing import Any

BASH_TOOL = {"type": "function", "function": {
    "name": "bash", "description": "Run a bash command; returns its output and exit status.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "the command"}},
                   "required": ["command"]}}}


class ModelError(Exception):
    """The model request failed: a status other than 200, a stream that broke, no server."""


def http_request(url: str, path: str, body: dict[str, Any], api_key: str) -> tuple[tuple[str, int], bytes]:
    """(host, port) and the bytes of a POST of ``body`` as JSON to ``url`` + ``path``."""
    scheme, _, rest = url.partition("://")
    hostport, slash, base_path = rest.partition("/")
    host, _, port_text = hostport.rpartition(":") if ":" in hostport else (hostport, "", "80")
    if scheme != "http" or not host or not port_text.isdigit():
        raise ModelError(f"the calibration agent speaks plain http to host:port only, not {url!r}")
    port = int(port_text)
    data = json.dumps(body).encode()
    target = (slash + base_path).rstrip("/") + path
    head = (f"POST {target} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nAuthorization: Bearer {api_key}\r\nContent-Length: {len(data)}\r\n"
            "Connection: close\r\n\r\n")
    return (host, port), head.encode() + data


class ResponseParser:
    """Feed bytes of an HTTP response; get the SSE ``data:`` payloads of its body."""

    def __init__(self) -> None:
        self._buf = b""
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self._chunked = False
        self._body = b""  # de-chunked body not yet split into SSE events
        self._chunk_left = 0  # bytes left in the current chunk (-1: reading the size line)
        self.done = False  # the body ended (last chunk, or [DONE] seen)
        self.raw_body = b""

    def feed(self, data: bytes) -> list[str]:
        self._buf += data
        if self.status is None:
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                return []
            head, self._buf = self._buf[:end].decode("latin-1"), self._buf[end + 4:]
            lines = head.split("\r\n")
            try:
                self.status = int(lines[0].split()[1])
            except (IndexError, ValueError):
                raise ModelError(f"not an HTTP response: {lines[0]!r}") from None
            for line in lines[1:]:
                name, _, value = line.partition(":")
                self.headers[name.strip().lower()] = value.strip()
            self._chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
            self._chunk_left = -1
        if self._chunked:
            self._dechunk()
        else:
            self._body += self._buf
            self._buf = b""
        return self._events()

    def _dechunk(self) -> None:
        while self._buf and not self.done:
            if self._chunk_left < 0:
                end = self._buf.find(b"\r\n")
                if end < 0:
                    return
                size = int(self._buf[:end].split(b";")[0], 16)
                self._buf = self._buf[end + 2:]
                if size == 0:
                    self.done = True
                    return
                self._chunk_left = size
            take = self._buf[:self._chunk_left]
            self._body += take
            self._buf = self._buf[len(take):]
            self._chunk_left -= len(take)
            if self._chunk_left == 0:
                if len(self._buf) < 2:
                    self._chunk_left = 0
                    return
                self._buf = self._buf[2:]  # the CRLF after a chunk
                self._chunk_left = -1

    def _events(self) -> list[str]:
        if self.status != 200:
            self.raw_body += self._body
            self._body = b""
            return []
        out: list[str] = []
        while True:
            end = self._body.find(b"\n\n")
            if end < 0:
                return out
            event, self._body = self._body[:end].decode("utf-8", "replace"), self._body[end + 2:]
            data = "\n".join(line[5:].lstrip() for line in event.split("\n") if line.startswith("data:"))
            if data == "[DONE]":
                self.done = True
                return out
            if data:
                out.append(data)


class Step:
    """What one streamed response said: its text, its tool calls, its finish reason."""

    def __init__(self) -> None:
        self.text = ""
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None

    def feed(self, payload: str) -> str:
        """Take one chunk; return the text it added."""
        chunk = json.loads(payload)
        if "error" in chunk:
            raise ModelError(f"stream error: {chunk['error'].get('message')}")
        added = ""
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                added += delta["content"]
            for piece in delta.get("tool_calls") or []:
                call = self.calls.setdefault(piece.get("index", 0), {"id": "", "name": "", "arguments": ""})
                call["id"] = piece.get("id") or call["id"]
                function = piece.get("function") or {}
                call["name"] += function.get("name") or ""
                call["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        self.text += added
        return added

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.calls:
            message["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                                     for _, c in sorted(self.calls.items())]
        return message


def command_of(call: dict[str, Any]) -> str:
    try:
        arguments = json.loads(call["arguments"] or "{}")
    except json.JSONDecodeError:
        raise ModelError(f"tool call {call['id']}: arguments are not JSON") from None
    command = arguments.get("command") if isinstance(arguments, dict) else None
    if call["name"] != "bash" or not isinstance(command, str):
        raise ModelError(f"tool call {call['id']}: unknown tool {call['name']!r} or no command")
    return command
