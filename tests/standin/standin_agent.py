#!/usr/bin/env python3
"""standin-agent: a small headless coding agent. OpenAI Chat Completions (streamed), one `bash` tool.

    standin_agent.py [--base-url URL] [--model M] [--store DIR] [--cwd DIR]
                     [--resume SESSION_ID] [--timeout SECONDS] PROMPT

The API key comes from STANDIN_API_KEY; STANDIN_BASE_URL, STANDIN_MODEL and STANDIN_STORE stand in
for the options. Exit status: 0 completed, 2 error, 3 stopped (SIGINT/SIGTERM/SIGHUP) or timed out
(STANDIN_EXIT_CODES=unix: 0, 1, 130 stopped, 124 timed out).
Standard library only; README.md beside this file describes the session document and the fault
switches (STANDIN_FAULTS).
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import errno
import json
import math
import os
import re
import secrets
import select
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import namedtuple
from pathlib import Path
from urllib.parse import urlsplit

VERSION = "standin-agent 0.1.0"
FORMAT, FORMAT_VERSION = "standin-session", 1

OUTCOME_UNKNOWN = "[interrupted: outcome unknown; verify before retrying]"
NOT_STARTED = "[interrupted: never started]"
NOT_RUN = "[not run: the turn was stopped before this command started]"

# Exit-code conventions (STANDIN_EXIT_CODES): the contract's, and the usual Unix one — 1 on
# error, 130 (128 + SIGINT) when stopped, 124 when timed out, as GNU timeout reports it.
EXIT_CONVENTIONS = {
    "contract": {"completed": 0, "error": 2, "max_tokens": 2, "aborted": 3, "interrupted": 3},
    "unix": {"completed": 0, "error": 1, "max_tokens": 1, "aborted": 130, "interrupted": 124},
}
# When the session id is told on stderr (STANDIN_SESSION_NOTICE): first thing, or only as the
# process exits (then a process killed with SIGKILL never tells it).
SESSION_NOTICES = ("start", "exit")
# Whether it relaunches itself (STANDIN_RELAUNCH), as CLIs that restart under other runtime
# options do: the outer process waits for the inner one and forwards no signal. "child": the
# inner one stays in the outer one's process group (a terminal's Ctrl-C reaches both);
# "session": it starts a session of its own (nothing sent to the group reaches it).
RELAUNCH_MODES = ("no", "child", "session")
# What a Stop signal does (STANDIN_ON_STOP): stop the turn and exit 3 (or 130), or — as a
# program that leaves SIGINT to its default action — die of it, settling nothing.
ON_STOP = ("settle", "die")

FAULTS = {
    "orphan-tools": (["C3"], "on Stop in a tool, exit without killing the tool's process tree"),
    "wrong-exit-codes": (["C8"], "exit 0 after Stop or timeout"),
    "key-leak": (["C13"], "write the API key into a file in the session store"),
    "drop-dangling": (["C4"], "on resume, drop the unanswered tool calls from the history"),
    "unanswered-dangling": (["C4"], "on resume, keep the unanswered tool calls but give them no result"),
    "same-repair-wording": (["C14"], "on resume, answer started and never-started calls with one wording"),
    "lose-partial": (["C5"], "on Stop mid-stream, discard the text streamed so far"),
    "request-after-stop": (["C9"], "after Stop mid-stream, send one more model request before exiting"),
    "blank-fork": (["C7"], "on resume, start a blank conversation instead of continuing the session"),
}
# The fault switches of the ACP mode (--acp; --acp --list-faults lists these).
ACP_FAULTS = {
    "acp-cancel-end-turn": (["C12"], "answer a cancelled prompt with stopReason end_turn"),
    "acp-update-after-cancel": (["C9"], "send one more session/update for a cancelled turn after answering it"),
    "acp-prompt-hangs": (["C1"], "never answer a cancelled prompt"),
    "acp-stopped-tool-completed": (["C3"], "report a tool call stopped by a cancel as completed"),
    "acp-load-forgets-killed": (["C11"], "session/load replays no turn that a kill left unfinished"),
    "acp-no-load": (["C7"], "advertise loadSession but answer session/load with -32601"),
}

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
CONNECT_TIMEOUT_S = 30.0
DRAIN_MAX = 4 * 1024 * 1024
OUTPUT_MAX = 30000
ROLES = {"system", "user", "assistant", "tool"}

SYSTEM_PROMPT = ("You are standin, a coding agent working in {cwd}. Run shell commands with the bash tool; "
                 "answer briefly once the task is done.")
BASH_TOOL = {"type": "function", "function": {
    "name": "bash", "description": "Run a bash command in the working folder; returns its output and exit code.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "the command"}},
                   "required": ["command"]}}}


class Fatal(Exception):
    """A refusal or usage problem: message on stderr, exit 2."""


class ModelError(Exception):
    """The model request failed (HTTP status, stream error, connection); carries the step so far."""

    def __init__(self, message: str, step: Step | None = None):
        super().__init__(message)
        self.step = step


class Stopped(Exception):
    """Stop was requested (a signal or the run's timeout)."""


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def say(text: str) -> None:
    try:
        print(f"standin: {text}", file=sys.stderr, flush=True)
    except OSError:
        pass


# --- Stop: signals and the timeout wake one pipe; every blocking wait polls it ----------------------


class Stopper:
    """Records the first Stop (its cause) and wakes whatever the agent is waiting on.

    Signal handlers only set the cause and write a byte to a pipe; every blocking wait of the
    agent (connect, send, receive, a running tool) polls that pipe next to its own descriptor,
    so a Stop is acted on at once, never by an exception thrown into arbitrary code.
    """

    def __init__(self, deadline: float | None, timeout_s: float | None):
        self.deadline = deadline
        self.timeout_s = timeout_s
        self.cause: str | None = None
        self.at_ns: int | None = None
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum, _frame) -> None:
        self.request(signal.Signals(signum).name)

    def request(self, cause: str) -> None:
        if self.cause is None:
            self.cause, self.at_ns = cause, time.monotonic_ns()
        try:
            os.write(self._w, b"!")
        except OSError:
            pass

    def requested(self) -> bool:
        if self.cause is None and self.deadline is not None and time.monotonic() >= self.deadline:
            self.request("timeout")
        return self.cause is not None

    def check(self) -> None:
        if self.requested():
            raise Stopped(self.cause)

    def wait(self, fd: int | None, events: int, limit: float | None = None) -> None:
        """Until ``fd`` is ready for ``events``; Stopped on Stop, TimeoutError after ``limit`` s."""
        poller = select.poll()
        if fd is not None:
            poller.register(fd, events)
        poller.register(self._r, select.POLLIN)
        end = None if limit is None else time.monotonic() + limit
        while True:
            self.check()
            bounds = [b for b in (self.deadline, end) if b is not None]
            ms = None if not bounds else max(0, math.ceil((min(bounds) - time.monotonic()) * 1000))
            ready = poller.poll(ms)
            self.check()
            if fd is not None and any(f == fd for f, _ in ready):
                return
            if end is not None and time.monotonic() >= end:
                raise TimeoutError(f"nothing within {limit:g} s")

    def wait_process(self, proc: subprocess.Popen) -> None:
        """Until ``proc`` exits (reaped); Stopped on Stop."""
        try:
            fd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            fd = None
        try:
            while proc.poll() is None:
                try:
                    self.wait(fd, select.POLLIN, None if fd is not None else 0.02)
                except TimeoutError:
                    pass
        finally:
            if fd is not None:
                os.close(fd)

    def describe(self) -> str:
        if self.cause == "timeout":
            return f"the run's timeout ({self.timeout_s:g} s) expired"
        return f"the user stopped the turn ({self.cause})"


class Blind:
    """A waiter that ignores Stop (used only by the request-after-stop fault)."""

    def check(self) -> None:
        pass

    def wait(self, fd: int | None, events: int, limit: float | None = None) -> None:
        poller = select.poll()
        poller.register(fd, events)
        if not poller.poll(None if limit is None else math.ceil(limit * 1000)):
            raise TimeoutError(f"nothing within {limit:g} s")


# --- HTTP/1.1 over a socket we own: Stop closes it at once, keeping what already arrived ------------


class Dechunker:
    """Incremental decoder of ``Transfer-Encoding: chunked``."""

    def __init__(self):
        self.buf = bytearray()
        self.left = 0
        self.state = "size"
        self.done = False

    def feed(self, data: bytes) -> bytes:
        self.buf += data
        out = bytearray()
        while not self.done:
            if self.state == "size":
                end = self.buf.find(b"\r\n")
                if end < 0:
                    break
                line = bytes(self.buf[:end]).split(b";")[0].strip()
                del self.buf[:end + 2]
                try:
                    size = int(line, 16)
                except ValueError:
                    raise ModelError(f"bad chunk size {line[:20]!r} in the response") from None
                if size == 0:
                    self.done = True
                else:
                    self.left, self.state = size, "data"
            elif self.state == "data":
                if not self.buf:
                    break
                piece = self.buf[:self.left]
                out += piece
                del self.buf[:len(piece)]
                self.left -= len(piece)
                if self.left == 0:
                    self.state = "crlf"
            else:
                if len(self.buf) < 2:
                    break
                del self.buf[:2]
                self.state = "size"
        return bytes(out)


class Connection:
    """One request on one connection (``Connection: close``), every wait through the waiter."""

    def __init__(self, url: str, waiter, read_timeout: float):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ModelError(f"unsupported base URL {url!r} (http:// or https:// expected)")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.waiter = waiter
        self.read_timeout = read_timeout
        self.sock: socket.socket | None = None
        self.buf = bytearray()
        self.dechunk: Dechunker | None = None
        self.left: int | None = None
        self.finished = False

    def open(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str]]:
        self._connect()
        head = f"POST {self.target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        self._send_all(head.encode("latin-1") + body)
        return self._read_head()

    def _connect(self) -> None:
        problem: Exception | None = None
        for family, kind, proto, _, addr in socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM):
            sock = socket.socket(family, kind, proto)
            sock.setblocking(False)
            self.sock = sock
            try:
                code = sock.connect_ex(addr)
                if code not in (0, errno.EINPROGRESS):
                    raise OSError(code, os.strerror(code))
                self.waiter.wait(sock.fileno(), select.POLLOUT, CONNECT_TIMEOUT_S)
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code:
                    raise OSError(code, os.strerror(code))
                break
            except OSError as exc:
                problem = exc
                sock.close()
                self.sock = None
        if self.sock is None:
            raise ModelError(f"cannot connect to {self.host}:{self.port}: {problem}")
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls:
            self.sock = ssl.create_default_context().wrap_socket(self.sock, server_hostname=self.host,
                                                                 do_handshake_on_connect=False)
            while True:
                try:
                    self.sock.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    self.waiter.wait(self.sock.fileno(), select.POLLIN, CONNECT_TIMEOUT_S)
                except ssl.SSLWantWriteError:
                    self.waiter.wait(self.sock.fileno(), select.POLLOUT, CONNECT_TIMEOUT_S)

    def _send_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            self.waiter.check()
            try:
                view = view[self.sock.send(view):]
            except (BlockingIOError, ssl.SSLWantWriteError):
                self.waiter.wait(self.sock.fileno(), select.POLLOUT, self.read_timeout)
            except ssl.SSLWantReadError:
                self.waiter.wait(self.sock.fileno(), select.POLLIN, self.read_timeout)

    def _recv(self) -> bytes:
        while True:
            self.waiter.check()
            try:
                return self.sock.recv(65536)
            except (BlockingIOError, ssl.SSLWantReadError):
                self.waiter.wait(self.sock.fileno(), select.POLLIN, self.read_timeout)
            except ssl.SSLWantWriteError:
                self.waiter.wait(self.sock.fileno(), select.POLLOUT, self.read_timeout)

    def _read_head(self) -> tuple[int, dict[str, str]]:
        while True:
            while b"\r\n\r\n" not in self.buf:
                data = self._recv()
                if not data:
                    raise ModelError("the server closed the connection before answering")
                self.buf += data
                if len(self.buf) > 1024 * 1024:
                    raise ModelError("the response head is too large")
            head, _, rest = bytes(self.buf).partition(b"\r\n\r\n")
            self.buf = bytearray(rest)
            lines = head.decode("latin-1").split("\r\n")
            try:
                status = int(lines[0].split(" ", 2)[1])
            except (IndexError, ValueError):
                raise ModelError(f"not an HTTP response: {lines[0][:80]!r}") from None
            if 100 <= status < 200:
                continue
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self.dechunk = Dechunker()
            elif headers.get("content-length", "").isdigit():
                self.left = int(headers["content-length"])
            if status in (204, 304) or self.left == 0:
                self.finished = True
            return status, headers

    def _decode(self, raw: bytes) -> bytes:
        if self.dechunk is not None:
            out = self.dechunk.feed(raw)
            self.finished = self.dechunk.done
            return out
        if self.left is not None:
            out = raw[:self.left]
            self.left -= len(out)
            self.finished = self.left == 0
            return out
        return raw

    def read(self) -> bytes:
        """The next piece of the decoded body; b"" at its end."""
        while not self.finished:
            if self.buf:
                raw = bytes(self.buf)
                self.buf.clear()
            else:
                raw = self._recv()
                if not raw:
                    self.finished = True
                    return b""
            out = self._decode(raw)
            if out:
                return out
        return b""

    def read_all(self, limit: int = 1024 * 1024) -> bytes:
        out = bytearray()
        while len(out) < limit:
            piece = self.read()
            if not piece:
                break
            out += piece
        return bytes(out)

    def drain(self) -> bytes:
        """The decoded body bytes that have already arrived, read without waiting; then close."""
        raw = bytearray(self.buf)
        self.buf.clear()
        if self.sock is not None:
            try:
                while len(raw) < DRAIN_MAX:
                    piece = self.sock.recv(65536)
                    if not piece:
                        break
                    raw += piece
            except OSError:  # nothing more waiting (BlockingIOError, SSLWantReadError) or a reset
                pass
        self.close()
        if not raw or self.finished:
            return b""
        try:
            return self._decode(bytes(raw))
        except ModelError:
            return b""

    def close(self) -> None:
        if self.sock is None:
            return
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.sock = None


class EventStream:
    """Server-sent events: the data of each complete event."""

    def __init__(self):
        self.buf = bytearray()
        self.data: list[str] = []

    def feed(self, data: bytes) -> list[str]:
        self.buf += data
        events = []
        while True:
            end = self.buf.find(b"\n")
            if end < 0:
                return events
            line = bytes(self.buf[:end]).rstrip(b"\r").decode("utf-8", "replace")
            del self.buf[:end + 1]
            if not line:
                if self.data:
                    events.append("\n".join(self.data))
                    self.data = []
            elif line.startswith("data:"):
                value = line[5:]
                self.data.append(value[1:] if value.startswith(" ") else value)


class Step:
    """One model response as it streams in: text, tool calls by index, finish reason."""

    def __init__(self, echo):
        self.text: list[str] = []
        self.calls: dict[int, dict] = {}
        self.finish: str | None = None
        self.done = False
        self.stopped = False
        self.echo = echo

    @property
    def content(self) -> str:
        return "".join(self.text)

    def apply(self, data: str) -> None:
        if data.strip() == "[DONE]":
            self.done = True
            return
        try:
            event = json.loads(data)
        except ValueError:
            raise ModelError(f"the stream sent something that is not JSON: {data[:80]!r}") from None
        if not isinstance(event, dict):
            return
        if event.get("error"):
            error = event["error"]
            message = error.get("message") if isinstance(error, dict) else str(error)
            raise ModelError(f"the model's stream failed: {message}")
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                self.echo(content)
            for piece in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(piece.get("index", 0), {"id": None, "name": "", "arguments": ""})
                if piece.get("id"):
                    slot["id"] = piece["id"]
                function = piece.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]

    def tool_calls(self) -> list[dict]:
        calls = []
        for index in sorted(self.calls):
            slot = self.calls[index]
            calls.append({"id": slot["id"] or f"call_{secrets.token_hex(8)}", "type": "function",
                          "function": {"name": slot["name"], "arguments": slot["arguments"]}})
        return calls


def error_message(body: bytes) -> str:
    try:
        data = json.loads(body)
        error = data.get("error", data)
        return str(error.get("message") or error) if isinstance(error, dict) else str(error)
    except (ValueError, AttributeError):
        return body.decode("utf-8", "replace").strip()[:300] or "(no body)"


def stream_step(url: str, headers: dict[str, str], payload: dict, waiter, read_timeout: float, echo) -> Step:
    """One streamed model request. On Stop: keep what already arrived, close, ``step.stopped``."""
    step = Step(echo)
    events = EventStream()
    conn = Connection(url, waiter, read_timeout)
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    try:
        status, _ = conn.open({**headers, "Content-Length": str(len(body))}, body)
        if status != 200:
            raise ModelError(f"HTTP {status} from the model: {error_message(conn.read_all())}", step)
        while not step.done:
            piece = conn.read()
            if not piece:
                break
            for data in events.feed(piece):
                step.apply(data)
                if step.done:
                    break
    except Stopped:
        step.stopped = True
        arrived = conn.drain()  # closes the connection
        try:
            for data in events.feed(arrived):
                step.apply(data)
                if step.done:
                    break
        except ModelError:
            pass
        return step
    except ModelError as exc:
        exc.step = step
        raise
    except (OSError, UnicodeError) as exc:
        raise ModelError(f"the connection to the model failed: {exc}", step) from None
    finally:
        conn.close()
    if not step.done and step.finish is None:
        raise ModelError("the stream ended before the model finished its answer", step)
    return step


# --- process trees: found through /proc parent links, frozen, killed, waited for --------------------

ProcInfo = namedtuple("ProcInfo", "state ppid pgid sid start")


def proc_stat(pid: int) -> ProcInfo | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()
    try:
        return ProcInfo(fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def proc_table() -> dict[int, ProcInfo]:
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = proc_stat(int(name))
            if info is not None:
                table[int(name)] = info
    return table


def tree_members(table: dict[int, ProcInfo], root: int, root_start: int | None, known) -> set[int]:
    """The root (if it is still the same process), its process group and session, every descendant."""
    children: dict[int, list[int]] = {}
    for pid, info in table.items():
        children.setdefault(info.ppid, []).append(pid)
    seeds = {pid for pid in known if pid in table}
    root_info = table.get(root)
    if root_info is not None and (root_start is None or root_info.start == root_start):
        seeds.add(root)
        root_start = root_info.start
    if root_start is not None:
        seeds |= {pid for pid, info in table.items()
                  if (info.sid == root or info.pgid == root) and info.start >= root_start}
    found, todo = set(), list(seeds)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    found.discard(os.getpid())
    return found


def signal_same(pid: int, start: int, sig: int) -> None:
    info = proc_stat(pid)
    if info is not None and info.start == start:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def reap_orphans() -> None:
    """Collect exited processes reparented to us (we are a child subreaper); only when no tool runs."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_tree(root: int, root_start: int | None, child: subprocess.Popen | None = None,
              grace_s: float = 5.0) -> tuple[int, list[int]]:
    """SIGSTOP every process of the tree (re-walking until no new one appears), SIGKILL them all,
    then wait until each is gone. Returns (how many were killed, PIDs still there at the deadline)."""
    marked: dict[int, int] = {}
    for _ in range(100):
        table = proc_table()
        fresh = [pid for pid in tree_members(table, root, root_start, marked) if pid not in marked]
        if not fresh:
            break
        for pid in fresh:
            marked[pid] = table[pid].start
            signal_same(pid, table[pid].start, signal.SIGSTOP)
    for pid, start in marked.items():
        signal_same(pid, start, signal.SIGKILL)
    if child is not None:
        try:
            child.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    me = os.getpid()
    pending = {pid: start for pid, start in marked.items() if child is None or pid != child.pid}
    deadline, delay = time.monotonic() + grace_s, 0.0005
    while pending:
        for pid, start in list(pending.items()):
            reap(pid)
            info = proc_stat(pid)
            if info is None or info.start != start or (info.state == "Z" and info.ppid != me):
                del pending[pid]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
    return len(marked), sorted(pending)


def become_subreaper() -> None:
    """Orphans of our tools are reparented to us, so /proc parent links keep leading to them."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


# --- the session document ----------------------------------------------------------------------------


def default_store() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "standin" / "sessions"


def new_session(cwd: str, model: str) -> dict:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    return {"format": FORMAT, "version": FORMAT_VERSION, "id": f"{stamp}-{secrets.token_hex(4)}",
            "created": now_iso(), "cwd": cwd, "model": model,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT.format(cwd=cwd), "mono_ns": time.monotonic_ns()}],
            "turns": [], "tool_starts": {}}


def refuse(path: Path, problem: str) -> Fatal:
    return Fatal(f"{path}: damaged session document ({problem}); refusing to resume it, the file is left as it is")


def load_session(store: Path, session_id: str) -> tuple[dict, Path]:
    """Read a session document. Never writes: repairs happen in memory, when requests are built."""
    if not SESSION_ID.fullmatch(session_id):
        raise Fatal(f"{session_id!r} is not a session id")
    path = store / f"{session_id}.json"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise Fatal(f"no session {session_id!r} in {store} (looked for {path})") from None
    except OSError as exc:
        raise Fatal(f"cannot read {path}: {exc}") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise refuse(path, f"not UTF-8 at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise refuse(path, f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    problem = session_problem(doc, session_id)
    if problem:
        raise refuse(path, problem)
    return doc, path


def session_problem(doc, session_id: str) -> str | None:
    if not isinstance(doc, dict):
        return "not a JSON object"
    if doc.get("format") != FORMAT:
        return f"format is {doc.get('format')!r}, not {FORMAT!r}"
    if doc.get("version") != FORMAT_VERSION:
        return f"unsupported version {doc.get('version')!r} (this agent reads version {FORMAT_VERSION})"
    if doc.get("id") != session_id:
        return f"its id is {doc.get('id')!r}, not {session_id!r}"
    messages, turns, starts = doc.get("messages"), doc.get("turns"), doc.get("tool_starts")
    if not isinstance(messages, list) or not isinstance(turns, list) or not isinstance(starts, dict):
        return "messages and turns must be arrays, tool_starts an object"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            return f"messages[{i}] is not a message with a known role"
        if m["role"] == "assistant" and not isinstance(m.get("tool_calls", []), list):
            return f"messages[{i}].tool_calls is not an array"
    for i, t in enumerate(turns):
        if not isinstance(t, dict) or not isinstance(t.get("started"), str):
            return f"turns[{i}] is not a turn"
    return None


def save_document(path: Path, doc: dict) -> None:
    """Rewrite the whole document atomically: a temp file beside it, fsync, rename, fsync the folder."""
    data = (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    try:
        dirfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)
    except OSError:
        pass


def unanswered_calls(messages: list[dict]) -> list[dict]:
    """Tool calls of assistant messages that no tool message answers."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    return [c for m in messages if m.get("role") == "assistant"
            for c in m.get("tool_calls") or [] if c.get("id") not in answered]


def command_of(call: dict) -> str:
    try:
        args = json.loads((call.get("function") or {}).get("arguments") or "{}")
        return str(args.get("command", "")) if isinstance(args, dict) else ""
    except ValueError:
        return ""


def repair_text(call: dict, started: bool, faults: set[str]) -> str:
    """The in-memory result of a call a killed run left without one (never written to the document)."""
    shown = command_of(call)[:200]
    if started or "same-repair-wording" in faults:
        return (f"{OUTCOME_UNKNOWN} The agent was killed while this command was running: {shown!r}. It may have "
                "finished, run partly or not at all. Retry it only if it is read-only or idempotent; otherwise "
                "check the state first, or ask the user.")
    return (f"{NOT_STARTED} The agent was killed before this command started: {shown!r}. "
            "It did not run; run it now if it is still needed.")


def wire_messages(doc: dict, faults: set[str]) -> list[dict]:
    """The document's messages as Chat Completions messages: our own fields dropped, and every tool call
    left without a result answered right after its message's results (started vs never started)."""
    messages, starts = doc["messages"], doc.get("tool_starts", {})
    out: list[dict] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        i += 1
        if m["role"] != "assistant" or not m.get("tool_calls"):
            entry = {"role": m["role"], "content": m.get("content") or ""}
            if m["role"] == "tool":
                entry["tool_call_id"] = m.get("tool_call_id")
            out.append(entry)
            continue
        results = []
        while i < len(messages) and messages[i]["role"] == "tool":
            results.append(messages[i])
            i += 1
        answered = {r.get("tool_call_id") for r in results}
        calls = m["tool_calls"]
        missing = [c for c in calls if c.get("id") not in answered]
        if missing and "drop-dangling" in faults:
            calls = [c for c in calls if c.get("id") in answered]
        entry = {"role": "assistant", "content": m.get("content") or None}
        if calls:
            entry["tool_calls"] = [{"id": c["id"], "type": "function", "function": {
                "name": c["function"]["name"], "arguments": c["function"]["arguments"]}} for c in calls]
        if entry["content"] is not None or calls:
            out.append(entry)
        out.extend({"role": "tool", "tool_call_id": r.get("tool_call_id"), "content": r.get("content") or ""}
                   for r in results)
        if faults & {"drop-dangling", "unanswered-dangling"}:
            continue
        out.extend({"role": "tool", "tool_call_id": c["id"], "content": repair_text(c, c["id"] in starts, faults)}
                   for c in missing)
    return out


def clip_output(text: str) -> str:
    if len(text) <= OUTPUT_MAX:
        return text
    half = OUTPUT_MAX // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters cut …]\n{text[-half:]}"


# --- the agent ---------------------------------------------------------------------------------------


class Agent:
    def __init__(self, doc: dict, path: Path, cfg: argparse.Namespace, key: str, stopper: Stopper,
                 faults: set[str]):
        self.doc, self.path, self.cfg, self.key = doc, path, cfg, key
        self.stop, self.faults = stopper, faults
        self.tool_env = {k: v for k, v in os.environ.items() if k != "STANDIN_API_KEY"}
        self.printed = ""

    # the document
    def save(self) -> None:
        save_document(self.path, self.doc)

    def append(self, message: dict) -> dict:
        message["mono_ns"] = time.monotonic_ns()
        self.doc["messages"].append(message)
        self.save()
        return message

    def answer(self, call_id: str, content: str, **fields) -> None:
        self.append({"role": "tool", "tool_call_id": call_id, "content": content, **fields})

    # output
    def echo(self, text: str) -> None:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
            self.printed += text
        except OSError:
            pass

    # the model
    def headers(self) -> dict[str, str]:
        parts = urlsplit(self.cfg.base_url)
        return {"Host": parts.netloc, "Authorization": f"Bearer {self.key}", "Content-Type": "application/json",
                "Accept": "text/event-stream", "User-Agent": VERSION.replace(" ", "/"), "Connection": "close"}

    def payload(self) -> dict:
        return {"model": self.cfg.model, "stream": True, "stream_options": {"include_usage": True},
                "messages": wire_messages(self.doc, self.faults), "tools": [BASH_TOOL]}

    def url(self) -> str:
        return self.cfg.base_url.rstrip("/") + "/chat/completions"

    def step(self) -> Step:
        return stream_step(self.url(), self.headers(), self.payload(), self.stop, self.cfg.read_timeout, self.echo)

    def stray_request(self) -> None:
        """The request-after-stop fault: one more model request, Stop ignored."""
        conn = Connection(self.url(), Blind(), 5.0)
        body = json.dumps(self.payload(), ensure_ascii=False).encode("utf-8")
        try:
            conn.open({**self.headers(), "Content-Length": str(len(body))}, body)
        except (ModelError, OSError):
            pass
        finally:
            conn.close()

    # a turn
    def turn(self, prompt: str, note: str | None) -> tuple[str, str | None]:
        turn = {"started": now_iso(), "started_ns": time.monotonic_ns(), "ended": None, "ended_ns": None,
                "outcome": None, "cause": None, "stop": None, "first_message": len(self.doc["messages"]),
                "cwd": self.cfg.cwd}
        self.doc["turns"].append(turn)
        if note:
            self.append({"role": "user", "content": note, "note": "resumed"})
        self.append({"role": "user", "content": prompt})
        try:
            outcome, cause = self.loop()
        except ModelError as exc:  # a failure outside a request (e.g. a bad base URL)
            outcome, cause = "error", str(exc)
        if self.printed and not self.printed.endswith("\n"):
            self.echo("\n")
        if self.stop.cause is not None:
            turn["stop"] = {"cause": self.stop.cause, "at_ns": self.stop.at_ns}
        turn.update(ended=now_iso(), ended_ns=time.monotonic_ns(), outcome=outcome, cause=cause)
        self.save()
        return outcome, cause

    def stopped(self) -> tuple[str, str]:
        return ("interrupted" if self.stop.cause == "timeout" else "aborted"), self.stop.describe()

    def loop(self) -> tuple[str, str | None]:
        while True:
            if self.stop.requested():
                return self.stopped()
            try:
                step = self.step()
            except ModelError as exc:
                text = exc.step.content if exc.step is not None else ""
                if text:
                    self.append({"role": "assistant", "content": text, "error": str(exc)})
                return "error", str(exc)
            text = step.content
            if step.stopped and not step.done:
                if text and "lose-partial" not in self.faults:
                    self.append({"role": "assistant", "content": text, "interrupted": True})
                if "request-after-stop" in self.faults:
                    self.stray_request()
                return self.stopped()
            if self.printed and not self.printed.endswith("\n"):
                self.echo("\n")
            calls = step.tool_calls()
            message = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = calls
            if text or calls:
                self.append(message)
            if step.finish == "length":
                for call in calls:
                    self.answer(call["id"], "[not run: the answer was cut off at the token limit]", aborted=True)
                return "max_tokens", "the model's answer reached the token limit"
            if not calls:
                return ("completed", None) if not step.stopped else self.stopped()
            for call in calls:
                self.run_tool(call)

    def run_tool(self, call: dict) -> None:
        cid, function = call["id"], call["function"]
        if self.stop.requested():
            self.answer(cid, NOT_RUN, aborted=True)
            return
        if function["name"] != "bash":
            self.answer(cid, f"[error: there is no tool {function['name']!r}; the only tool is bash]")
            return
        try:
            args = json.loads(function["arguments"] or "{}")
        except ValueError:
            args = None
        command = args.get("command") if isinstance(args, dict) else None
        if not isinstance(command, str) or not command.strip():
            self.answer(cid, "[error: bash needs a JSON object with a non-empty string 'command']")
            return
        start = {"started": now_iso(), "started_ns": time.monotonic_ns(), "pid": None, "start_ticks": None}
        self.doc["tool_starts"][cid] = start
        self.save()  # durable before the command runs
        if self.stop.requested():
            del self.doc["tool_starts"][cid]
            self.answer(cid, NOT_RUN, aborted=True)
            return
        say(f"$ {command}")
        with tempfile.TemporaryFile() as out:
            began = time.monotonic()
            try:
                proc = subprocess.Popen(["/bin/bash", "-c", command], cwd=self.cfg.cwd, env=self.tool_env,
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
            except OSError as exc:
                del self.doc["tool_starts"][cid]
                self.answer(cid, f"[error: could not start bash: {exc}]")
                return
            info = proc_stat(proc.pid)
            start.update(pid=proc.pid, start_ticks=info.start if info else None)
            self.save()
            try:
                self.stop.wait_process(proc)
            except Stopped:
                self.abort_tool(cid, proc, start, out, time.monotonic() - began)
                return
            reap_orphans()
            output = read_output(out)
        code = proc.returncode
        status = f"[exit code {code}]" if code >= 0 else f"[killed by {signal_name(-code)}]"
        self.answer(cid, f"{output}\n{status}" if output else status, exit_code=code)

    def abort_tool(self, cid: str, proc: subprocess.Popen, start: dict, out, elapsed: float) -> None:
        why = self.stop.describe()
        if "orphan-tools" in self.faults:
            content = f"[aborted: {why} after {elapsed:.2f} s]"
        else:
            killed, survivors = kill_tree(proc.pid, start["start_ticks"], child=proc)
            reap_orphans()
            content = f"[aborted: {why} after {elapsed:.2f} s; the command and its processes ({killed}) were killed]"
            if survivors:
                content += f"\n[warning: processes {survivors} were still there after SIGKILL]"
        output = read_output(out)
        self.answer(cid, f"{content}\n{output}" if output else content, aborted=True)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def read_output(out) -> str:
    out.seek(0)
    return clip_output(out.read(4 * OUTPUT_MAX).decode("utf-8", "replace")).rstrip("\n")


def reap_leftovers(doc: dict) -> int:
    """Processes a killed run's unfinished commands left running (recorded pid + start time): kill them."""
    killed = 0
    for call in unanswered_calls(doc["messages"]):
        start = doc["tool_starts"].get(call.get("id")) or {}
        if isinstance(start.get("pid"), int) and isinstance(start.get("start_ticks"), int):
            killed += kill_tree(start["pid"], start["start_ticks"])[0]
    reap_orphans()
    return killed


def resume_note(doc: dict, cwd: str, reaped: int) -> str:
    parts = [f"[standin: this session was resumed in a new process; files in {cwd} may have changed since "
             "the last message."]
    last = doc["turns"][-1] if doc["turns"] else {}
    if last and last.get("ended") is None:
        parts.append("The previous run stopped before its turn ended (the agent was killed).")
    first = last.get("first_message") if isinstance(last.get("first_message"), int) else 0
    dangling = unanswered_calls(doc["messages"][first:])
    if dangling:
        parts.append(f"The {len(dangling)} tool call(s) it left without a result are answered as interrupted.")
    if reaped:
        parts.append(f"{reaped} process(es) its unfinished command left running were killed.")
    return " ".join(parts) + "]"


# --- the command line ------------------------------------------------------------------------------


# --- ACP mode: the Agent Client Protocol on stdin/stdout (JSON-RPC 2.0, one message a line) --------


METHOD_NOT_FOUND = -32601
STOP_REASONS = {"completed": "end_turn", "aborted": "cancelled", "interrupted": "cancelled",
                "max_tokens": "max_tokens", "error": "refusal"}


class AcpAgent(Agent):
    """A session's agent whose output is ``session/update`` notifications, not stdout; each
    bash call is reported as an ACP tool call, after asking the client's permission."""

    def __init__(self, server: AcpServer, session_id: str, doc: dict, path: Path, cfg: argparse.Namespace,
                 key: str, faults: set[str]):
        super().__init__(doc, path, cfg, key, Stopper(None, None), faults)
        self.server, self.session_id = server, session_id
        self.note: str | None = None  # the resume note for the next prompt, after a load

    def echo(self, text: str) -> None:
        self.printed += text
        self.server.update(self.session_id, {"sessionUpdate": "agent_message_chunk",
                                             "content": {"type": "text", "text": text}})

    def run_tool(self, call: dict) -> None:
        cid = call["id"]
        try:
            args = json.loads(call["function"]["arguments"] or "{}")
        except ValueError:
            args = None
        tool = {"toolCallId": acp_call_id(cid), "title": call["function"]["name"], "kind": "execute",
                "rawInput": args}
        # STANDIN_ACP_ANNOUNCE=permission: the call is first announced by the permission request
        # that carries it, and never reported in progress (as Gemini CLI does).
        in_permission = os.environ.get("STANDIN_ACP_ANNOUNCE") == "permission"
        if in_permission:
            tool["status"] = "pending"
        else:
            self.server.update(self.session_id, {"sessionUpdate": "tool_call", "status": "pending", **tool})
        allowed = self.server.permission(self.session_id, tool, self.stop)
        if not allowed:
            self.answer(cid, "[not run: permission was not given]", aborted=True)
        else:
            if not in_permission:
                self.server.update(self.session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tool["toolCallId"],
                                                     "status": "in_progress"})
            super().run_tool(call)
        if self.stop.requested() and os.environ.get("STANDIN_ACP_ASK_AFTER_CANCEL") == "yes":
            # asked once more for the stopped call (a client must answer "cancelled"), waiting for the answer
            self.server.permission(self.session_id, tool, Stopper(None, None))
        result = self.doc["messages"][-1]
        if result.get("aborted") and os.environ.get("STANDIN_ACP_FORGET_STOPPED") == "yes":
            # STANDIN_ACP_FORGET_STOPPED=yes: no result kept for a stopped call, none made up for it
            # either, so the next request is unbalanced and the server refuses it (as Gemini CLI's was)
            self.doc["messages"].pop()
            self.save()
            self.faults = self.faults | {"unanswered-dangling"}
        failed = result.get("aborted") and "acp-stopped-tool-completed" not in self.faults
        self.server.update(self.session_id, {
            "sessionUpdate": "tool_call_update", "toolCallId": tool["toolCallId"], "status": "failed" if failed else "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": result.get("content") or ""}}]})


# STANDIN_ACP_CALL_IDS=per-process: a tool call's ACP id is the model's call id under a prefix
# each process draws anew, so a load names the same call otherwise than the live turn did (as
# kimi-cli does: "<uuid>/<call id>").
CALL_ID_PREFIX = f"{uuid.uuid4()}/" if os.environ.get("STANDIN_ACP_CALL_IDS") == "per-process" else ""


def acp_call_id(call_id):
    return f"{CALL_ID_PREFIX}{call_id}" if call_id else call_id


class AcpServer:
    """Reads requests on stdin (the main thread); a prompt runs in a thread of its own, so a
    ``session/cancel`` read meanwhile wakes it through its Stopper's pipe."""

    def __init__(self, args: argparse.Namespace, key: str, faults: set[str], store: Path):
        self.args, self.key, self.faults, self.store = args, key, faults, store
        self.lock = threading.Lock()
        self.agents: dict[str, AcpAgent] = {}
        self.turn: tuple[threading.Thread, str, object] | None = None  # thread, session id, prompt request id
        self.next_id = 0
        self.waiting: dict[int, tuple[int, list]] = {}  # our request id → (pipe to wake, [response])

    # the wire
    def send(self, message: dict, *more: dict) -> None:
        """Messages in one write (a client reads them together)."""
        line = "".join(json.dumps({"jsonrpc": "2.0", **m}, ensure_ascii=False) + "\n" for m in (message, *more))
        with self.lock:
            try:
                sys.stdout.write(line)
                sys.stdout.flush()
            except OSError:
                pass

    def update(self, session_id: str, update: dict) -> None:
        self.send({"method": "session/update", "params": {"sessionId": session_id, "update": update}})

    def permission(self, session_id: str, tool: dict, stop: Stopper) -> bool:
        """Ask the client; False when it rejects or cancels, or the turn is stopped meanwhile."""
        r, w = os.pipe()
        answer: list = []
        with self.lock:
            self.next_id += 1
            number = self.next_id
            self.waiting[number] = (w, answer)
        options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                   {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]
        self.send({"id": number, "method": "session/request_permission",
                   "params": {"sessionId": session_id, "toolCall": tool, "options": options}})
        try:
            stop.wait(r, select.POLLIN)
        except Stopped:
            return False
        finally:
            os.close(r)
            with self.lock:
                self.waiting.pop(number, None)
            os.close(w)
        outcome = (answer[0].get("result") or {}).get("outcome") if answer and isinstance(answer[0], dict) else None
        return isinstance(outcome, dict) and outcome.get("optionId") == "allow"

    # requests
    def serve(self) -> int:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.send({"id": None, "error": {"code": -32700, "message": "not JSON"}})
                continue
            if not isinstance(message, dict):
                continue
            if "method" not in message:
                self.answered(message)
                continue
            try:
                result = self.handle(message["method"], message.get("params") or {}, message.get("id"))
            except Fatal as exc:
                result = {"error": {"code": -32603, "message": str(exc)}}
            if "id" in message and result is not None:
                self.send({"id": message["id"], **result})
        running = self.turn
        if running is not None:  # stdin closed mid-turn: stop it, give it a moment, go
            self.agents[running[1]].stop.request("eof")
            running[0].join(5)
        return 0

    def answered(self, message: dict) -> None:
        with self.lock:
            waiting = self.waiting.get(message.get("id"))
        if waiting is not None:
            waiting[1].append(message)
            os.write(waiting[0], b"!")

    def handle(self, method: str, params: dict, request_id) -> dict | None:
        """A request's response ({"result": …} or {"error": …}); None: answered later, or a notification."""
        if method == "initialize" and os.environ.get("STANDIN_ACP_NOISE") == "yes":
            with self.lock:  # a stray print and an answer to nothing: a client must survive both
                sys.stdout.write('debug: starting\n{"jsonrpc": "2.0", "id": 999, "result": {}}\n')
                sys.stdout.flush()
        if method == "initialize":
            return {"result": {"protocolVersion": 1, "authMethods": [], "agentInfo": {"name": "standin",
                                                                                      "version": VERSION},
                               "agentCapabilities": {"loadSession": True,
                                                     "sessionCapabilities": {"close": {}, "resume": {}},
                                                     "promptCapabilities": {}}}}
        if method == "session/new" and os.environ.get("STANDIN_ACP_AUTH") == "required":
            return {"error": {"code": -32000, "message": "Authentication required"}}
        if method == "session/new":
            doc = new_session(os.path.abspath(params.get("cwd") or self.args.cwd or os.getcwd()), self.args.model)
            self.store.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = self.store / f"{doc['id']}.json"
            save_document(path, doc)
            self.agents[doc["id"]] = AcpAgent(self, doc["id"], doc, path, self.config(doc), self.key, self.faults)
            self.send({"id": request_id, "result": {"sessionId": doc["id"]}}, {
                "method": "session/update", "params": {"sessionId": doc["id"], "update": {
                    "sessionUpdate": "available_commands_update", "availableCommands": []}}})
            return None  # answered, with the session's commands right after
        if method == "session/load":
            if "acp-no-load" in self.faults:
                return {"error": {"code": METHOD_NOT_FOUND, "message": "session/load is not implemented"}}
            answer = self.take_up(str(params.get("sessionId")), replay=True)
            self.send({"id": request_id, **answer}, {  # the session's commands in the same write, as opencode
                "method": "session/update", "params": {"sessionId": params.get("sessionId"), "update": {
                    "sessionUpdate": "available_commands_update", "availableCommands": []}}})
            return None
        if method == "session/resume":  # as a load, without the replay
            return self.take_up(str(params.get("sessionId")), replay=False)
        if method == "session/prompt":
            return self.prompt(params, request_id)
        if method == "session/cancel":
            self.cancel(lambda session, _: session == params.get("sessionId"))
            return None
        if method == "$/cancel_request":
            self.cancel(lambda _, prompt_id: prompt_id == params.get("requestId"))
            return None
        if method == "session/close":
            self.agents.pop(str(params.get("sessionId")), None)
            return {"result": {}}
        return {"error": {"code": METHOD_NOT_FOUND, "message": f"{method} is not a method"}} if request_id else None

    def take_up(self, session_id: str, *, replay: bool) -> dict:
        doc, path = load_session(self.store, session_id)
        agent = AcpAgent(self, doc["id"], doc, path, self.config(doc), self.key, self.faults)
        if replay:
            self.replay(agent)
        agent.note = resume_note(doc, agent.cfg.cwd, reap_leftovers(doc))
        self.agents[doc["id"]] = agent
        return {"result": {}}

    def config(self, doc: dict) -> argparse.Namespace:
        return argparse.Namespace(**{**vars(self.args), "cwd": doc["cwd"]})

    def cancel(self, matches) -> None:
        running = self.turn
        if running is not None and matches(running[1], running[2]):
            self.agents[running[1]].stop.request("cancel")

    def prompt(self, params: dict, request_id) -> dict | None:
        agent = self.agents.get(str(params.get("sessionId")))
        if agent is None:
            return {"error": {"code": -32602, "message": f"no session {params.get('sessionId')!r}"}}
        if self.turn is not None:
            return {"error": {"code": -32600, "message": "a prompt is already running"}}
        text = "".join(b.get("text", "") for b in params.get("prompt") or [] if isinstance(b, dict))
        agent.stop, agent.printed = Stopper(None, None), ""
        thread = threading.Thread(target=self.run_turn, args=(agent, text, request_id), daemon=True)
        self.turn = (thread, agent.session_id, request_id)
        thread.start()
        return None

    def run_turn(self, agent: AcpAgent, text: str, request_id) -> None:
        note, agent.note = agent.note, None
        outcome, cause = agent.turn(text, note)
        self.turn = None  # over before it is answered: the client may send the next prompt at once
        if outcome != "completed":
            say(f"turn {outcome}: {cause}")
        cancelled = outcome in ("aborted", "interrupted")
        if cancelled and "acp-prompt-hangs" in self.faults:
            return
        reason = "end_turn" if cancelled and "acp-cancel-end-turn" in self.faults else STOP_REASONS[outcome]
        late = []
        if cancelled and "acp-update-after-cancel" in self.faults:  # flushed with the answer, right after it
            late = [{"method": "session/update", "params": {"sessionId": agent.session_id, "update": {
                "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "(one more thing)"}}}}]
        # The session's own update, as real agents send it after a turn: no part of the turn.
        commands = {"method": "session/update", "params": {"sessionId": agent.session_id, "update": {
            "sessionUpdate": "available_commands_update", "availableCommands": []}}}
        # STANDIN_ACP_ANSWER_DELAY_S=S: an agent slow to answer a prompt whose turn is over (a
        # real one reports an error its model request met only after it is done with it)
        time.sleep(float(os.environ.get("STANDIN_ACP_ANSWER_DELAY_S") or 0))
        self.send({"id": request_id, "result": {"stopReason": reason}}, *late, commands)

    def replay(self, agent: AcpAgent) -> None:
        """The session's history as updates, before the load is answered."""
        doc = agent.doc
        messages = doc["messages"]
        forgotten: set[int] = set()
        if "acp-load-forgets-killed" in self.faults:
            turns = doc["turns"]
            for i, turn in enumerate(turns):
                if turn.get("ended") is None:
                    end = turns[i + 1]["first_message"] if i + 1 < len(turns) else len(messages)
                    forgotten.update(range(turn["first_message"], end))
        for i, m in enumerate(messages):
            if i in forgotten or m["role"] == "system":
                continue
            content = {"type": "text", "text": m.get("content") or ""}
            if m["role"] == "user":
                agent.server.update(agent.session_id, {"sessionUpdate": "user_message_chunk", "content": content})
            elif m["role"] == "assistant":
                if m.get("content"):
                    agent.server.update(agent.session_id, {"sessionUpdate": "agent_message_chunk",
                                                           "content": content})
                for call in m.get("tool_calls") or []:
                    try:
                        args = json.loads(call["function"]["arguments"] or "{}")
                    except ValueError:
                        args = None
                    agent.server.update(agent.session_id, {
                        "sessionUpdate": "tool_call", "toolCallId": acp_call_id(call["id"]), "title": call["function"]["name"],
                        "kind": "execute", "status": "pending", "rawInput": args})
            elif m["role"] == "tool":
                agent.server.update(agent.session_id, {
                    "sessionUpdate": "tool_call_update", "toolCallId": acp_call_id(m.get("tool_call_id")),
                    "status": "failed" if m.get("aborted") else "completed",
                    "content": [{"type": "content", "content": content}]})


def acp_main(args: argparse.Namespace) -> int:
    try:
        faults = parse_faults(os.environ.get("STANDIN_FAULTS", ""), ACP_FAULTS)
        key = os.environ.get("STANDIN_API_KEY", "")
        if not key:
            raise Fatal("no API key: set STANDIN_API_KEY")
    except Fatal as exc:
        say(f"error: {exc}")
        return 2
    become_subreaper()
    store = Path(args.store).expanduser().absolute() if args.store else default_store()
    return AcpServer(args, key, faults, store).serve()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="standin_agent.py", description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default=os.environ.get("STANDIN_BASE_URL", "https://api.openai.com/v1"))
    parser.add_argument("--model", default=os.environ.get("STANDIN_MODEL", "gpt-4o-mini"))
    parser.add_argument("--store", default=os.environ.get("STANDIN_STORE"), help="folder of session documents")
    parser.add_argument("--cwd", help="working folder for the tools (default: the current one)")
    parser.add_argument("--resume", metavar="SESSION_ID", help="continue this session with a new turn")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="stop the turn after this long (exit 3)")
    parser.add_argument("--read-timeout", type=float, default=float(os.environ.get("STANDIN_READ_TIMEOUT", "600")),
                        help=argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version=VERSION)
    parser.add_argument("--list-faults", action="store_true", help="print the fault switches as JSON and exit")
    parser.add_argument("--acp", action="store_true", help="serve the Agent Client Protocol on stdin/stdout")
    parser.add_argument("prompt", nargs="?")
    args = parser.parse_args(argv)
    if not args.list_faults and not args.acp and not args.prompt:
        parser.error("a PROMPT is required")
    if args.timeout is not None and not args.timeout > 0:
        parser.error("--timeout must be a positive number of seconds")
    return args


def parse_faults(text: str, known: dict = FAULTS) -> set[str]:
    faults = {f.strip() for f in text.split(",") if f.strip()}
    unknown = sorted(faults - set(known))
    if unknown:
        raise Fatal(f"unknown fault {unknown[0]!r} in STANDIN_FAULTS (known: {', '.join(known)})")
    return faults


def leak_key(store: Path, base_url: str, key: str) -> None:
    """The key-leak fault: a debug dump of the request headers, key included."""
    dump = {"base_url": base_url, "headers": {"Authorization": f"Bearer {key}"}}
    (store / "debug-requests.txt").write_text(json.dumps(dump) + "\n", encoding="utf-8")


def setting(name: str, choices) -> str:
    """A convention chosen through the environment (the first choice by default)."""
    value = os.environ.get(name) or next(iter(choices))
    if value not in choices:
        raise Fatal(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def relaunch(mode: str, argv: list[str]) -> int:
    """The outer process of a relaunch: start the agent again as a child and exit as it does.
    It ignores the Stop signals itself and forwards none."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    inner = subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv],
                             env={**os.environ, "STANDIN_RELAUNCH": "no"}, start_new_session=mode == "session",
                             preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL)
                                                 for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)])
    code = inner.wait()
    return code if code >= 0 else 128 - code


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()
    argv = sys.argv[1:] if argv is None else argv
    try:
        mode = setting("STANDIN_RELAUNCH", RELAUNCH_MODES)
    except Fatal as exc:
        say(f"error: {exc}")
        return 2
    if mode != "no":
        return relaunch(mode, argv)
    args = parse_args(argv)
    if args.list_faults:
        print(json.dumps({name: {"checks": checks, "description": text}
                          for name, (checks, text) in (ACP_FAULTS if args.acp else FAULTS).items()}, indent=1))
        return 0
    if args.acp:
        return acp_main(args)
    stopper = Stopper(began + args.timeout if args.timeout else None, args.timeout)
    try:
        dies = setting("STANDIN_ON_STOP", ON_STOP) == "die"
    except Fatal as exc:
        say(f"error: {exc}")
        return 2
    if not dies:
        stopper.install()
    become_subreaper()
    exit_codes, notice, told = EXIT_CONVENTIONS["contract"], "start", []

    def tell_session(doc: dict, moment: str) -> None:
        if moment == notice and not told:
            told.append(doc["id"])
            print(f"session: {doc['id']}", file=sys.stderr, flush=True)

    doc = None
    try:
        exit_codes = EXIT_CONVENTIONS[setting("STANDIN_EXIT_CODES", EXIT_CONVENTIONS)]
        notice = setting("STANDIN_SESSION_NOTICE", SESSION_NOTICES)
        faults = parse_faults(os.environ.get("STANDIN_FAULTS", ""))
        key = os.environ.get("STANDIN_API_KEY", "")
        if not key:
            raise Fatal("no API key: set STANDIN_API_KEY")
        args.cwd = os.path.abspath(args.cwd or os.getcwd())
        if not os.path.isdir(args.cwd):
            raise Fatal(f"working folder {args.cwd} does not exist")
        store = Path(args.store).expanduser().absolute() if args.store else default_store()
        note = None
        if args.resume and "blank-fork" not in faults:
            doc, path = load_session(store, args.resume)
            tell_session(doc, "start")
            note = resume_note(doc, args.cwd, reap_leftovers(doc))
        else:
            doc = new_session(args.cwd, args.model)
            tell_session(doc, "start")
            try:
                store.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:
                raise Fatal(f"cannot create the session store {store}: {exc}") from None
            path = store / f"{doc['id']}.json"
        if "key-leak" in faults:
            leak_key(store, args.base_url, key)
        agent = Agent(doc, path, args, key, stopper, faults)
        outcome, cause = agent.turn(args.prompt, note)
    except (Fatal, OSError) as exc:  # OSError: the store cannot be written
        say(f"error: {exc}")
        return exit_codes["error"]
    finally:
        if doc is not None:
            tell_session(doc, "exit")
    if outcome != "completed":
        say(f"turn {outcome}: {cause}")
    if outcome in ("aborted", "interrupted") and "wrong-exit-codes" in faults:
        return 0
    return exit_codes[outcome]


if __name__ == "__main__":
    sys.exit(main())
