"""Tools the model may call: ``bash`` and ``read_file``.

A bash command runs as the leader of a new session (so its own process group), with
output to a file rather than a pipe: a background process that keeps the pipe open can
then never hang the tool. Stop kills the whole tree with SIGKILL and returns only once each
process of it is gone: the tree is walked from the shell by parent links (the
/proc/PID/task/*/children files, a few reads per process of the tree), every process is
held by a pidfd, the group and each of them are signalled, the pidfds are waited on; then
/proc is scanned for processes that still carry the call's tag in their environment
(descendants whose parent had already exited, or forked after the walk), and any found
go the same way."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import failpoints

TAG_VAR = "REFAGENT_TOOL_TAG"
OUTPUT_LIMIT = 30_000
SECRET_SUFFIXES = ("_API_KEY", "_AUTH_TOKEN", "_SECRET")
GONE_DEADLINE_S = 10.0  # failsafe only: SIGKILL'd processes normally vanish in microseconds
TERM_GRACE_S = 2.0  # used only by the term-then-wait failpoint

TOOL_SPECS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a bash command in the working folder and return its output and exit code.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "the command line"}},
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file (relative to the working folder).",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
]


@dataclass
class ToolResult:
    output: str
    exit_code: int | None
    aborted: bool = False


class ToolRun:
    """One tool call being executed. ``run()`` is awaited; on Stop, ``abort()``."""

    def __init__(self, name: str, arguments: Any, cwd: Path, call_id: str, output_path: Path):
        """``output_path``: where the command's output goes while it runs (beside the
        session log, so a crashed run leaves it where the next one cleans it up)."""
        self.name, self.arguments, self.cwd, self.call_id = name, arguments, cwd, call_id
        self.output_path = output_path
        self.proc: asyncio.subprocess.Process | None = None
        self._spawn: asyncio.Future | None = None
        self.tag = f"{os.getpid()}-{call_id}-{time.monotonic_ns()}"
        self._out_path: Path | None = None

    async def run(self, on_started: Callable[[int, int], None]) -> ToolResult:
        if self.name == "bash":
            return await self._bash(on_started)
        if self.name == "read_file":
            return self._read_file()
        return ToolResult(f"unknown tool {self.name!r}; available: bash, read_file", None)

    def _read_file(self) -> ToolResult:
        args = self.arguments if isinstance(self.arguments, dict) else {}
        path = args.get("path")
        if not isinstance(path, str):
            return ToolResult("read_file needs a string argument 'path'", None)
        try:
            text = (self.cwd / path).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return ToolResult(f"cannot read {path}: {exc.strerror or exc}", 1)
        return ToolResult(_clip(text), 0)

    async def _bash(self, on_started: Callable[[int, int], None]) -> ToolResult:
        args = self.arguments if isinstance(self.arguments, dict) else {}
        command = args.get("command")
        if not isinstance(command, str):
            return ToolResult("bash needs a string argument 'command'", None)
        fd = os.open(self.output_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self._out_path = self.output_path
        try:
            # Shielded: a Stop arriving while the process is being created must not leave
            # a process nobody knows about; abort() waits for the spawn and kills its tree.
            self._spawn = asyncio.ensure_future(asyncio.create_subprocess_exec(
                "bash", "-c", command, cwd=self.cwd, stdin=asyncio.subprocess.DEVNULL,
                stdout=fd, stderr=fd, start_new_session=True, env=tool_environment(self.tag),
            ))
            proc = await asyncio.shield(self._spawn)
            self.proc = proc
        finally:
            os.close(fd)
        on_started(proc.pid, proc.pid)
        code = await proc.wait()
        return ToolResult(self._collect_output(), code)

    async def abort(self) -> ToolResult:
        """Stop: kill the whole tree, wait until every process of it is gone, then report."""
        if self.proc is None and self._spawn is not None:
            try:
                self.proc = await self._spawn
            except OSError:
                pass  # it never started
        if self.proc is not None:
            await kill_tree(self.proc, self.tag)
        output = self._collect_output() if self._out_path else ""
        note = "[aborted by Stop: the command's whole process tree was killed]"
        return ToolResult(f"{output}\n{note}" if output else note, None, aborted=True)

    def _collect_output(self) -> str:
        path, self._out_path = self._out_path, None
        if path is None:
            return ""
        try:
            return _clip(path.read_text(encoding="utf-8", errors="replace"))
        finally:
            path.unlink(missing_ok=True)


def tool_environment(tag: str) -> dict[str, str]:
    """The agent's environment minus its secrets (a command's ``env > file`` must not leak
    the API key, C13), plus the call's tag."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(SECRET_SUFFIXES)}
    env[TAG_VAR] = tag
    return env


def _clip(text: str) -> str:
    if len(text) <= OUTPUT_LIMIT:
        return text
    return text[:OUTPUT_LIMIT] + f"\n[output cut at {OUTPUT_LIMIT} of {len(text)} characters]"


def _read(path: str) -> bytes:
    """One small /proc file: os.open/os.read, without the io stack (a third of the cost)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 20)
    finally:
        os.close(fd)


def _stat(pid: int | str) -> list[bytes]:
    """The fields of /proc/PID/stat after the command name: [state, ppid, pgrp, …]."""
    stat = _read(f"/proc/{pid}/stat")
    return stat[stat.rindex(b")") + 2 :].split()


PPID, STARTTIME = 1, 19  # indexes into _stat()


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (its /proc/PID/task/*/children): a walk from
    a root touches only the tree, where a scan of /proc reads two files per process."""
    found: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            found += map(int, _read(f"/proc/{pid}/task/{tid}/children").split())
    except OSError:
        pass  # gone meanwhile: it has no children left to find
    return found


def _tagged(tags: set[str], since: int = 0) -> set[int]:
    """Processes started at or after clock tick ``since`` whose environment carries one of
    ``tags`` (the start time comes first: only recent processes have their environment read)."""
    needles = [f"{TAG_VAR}={tag}".encode() + b"\0" for tag in tags]
    tagged: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if since and int(_stat(name)[STARTTIME]) < since:
                continue
            environ = _read(f"/proc/{name}/environ")
        except (OSError, ValueError, IndexError):
            continue
        if any(needle in environ for needle in needles):
            tagged.add(int(name))
    return tagged


class Tree:
    """The processes of one tool call, each held by a pidfd (signals and waits then reach
    that process, never a later one that got its PID)."""

    def __init__(self) -> None:
        self.fds: dict[int, int] = {}  # pid -> pidfd

    def hold(self, pid: int, *, parent: int | None = None, tag: str | None = None) -> bool:
        """Take ``pid`` if it exists and, once held, is still ``parent``'s child or still
        carries ``tag`` (a PID read from /proc may have been reused since: the check is
        made on the process the pidfd holds); True if taken or already held."""
        if pid in self.fds:
            return True
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return False
        try:
            stat = _stat(pid)
            if parent is not None and int(stat[PPID]) != parent:
                raise ProcessLookupError
            if tag is not None and f"{TAG_VAR}={tag}".encode() + b"\0" not in _read(f"/proc/{pid}/environ"):
                raise ProcessLookupError
        except (OSError, ValueError, IndexError):
            os.close(fd)
            return False
        self.fds[pid] = fd
        return True

    def walk(self, root: int) -> None:
        """The root and all its descendants by parent links: those that left its process
        group or cleared their environment too, as long as their parent lives."""
        if not self.hold(root, parent=os.getpid()):
            return
        stack = [root]
        while stack:
            parent = stack.pop()
            for child in _children(parent):
                if child not in self.fds and self.hold(child, parent=parent):
                    stack.append(child)

    def kill(self, sig: int, group: int) -> None:
        """Signal the whole ``group`` in one call, then every process held by its pidfd
        (those outside the group, and any that left it since the walk)."""
        _killpg(group, sig)
        for pid in self.fds:
            self._send(pid, sig)

    def _send(self, pid: int, sig: int) -> None:
        try:
            signal.pidfd_send_signal(self.fds[pid], sig)
        except ProcessLookupError:
            pass

    async def gone(self, deadline_s: float) -> bool:
        """True once every process held has exited (a zombie is gone), False at the deadline."""
        loop = asyncio.get_running_loop()
        live = [fd for fd in self.fds.values() if not select.select([fd], [], [], 0)[0]]
        if not live:
            return True
        remaining = set(live)
        done = loop.create_future()

        def exited(fd: int) -> None:
            loop.remove_reader(fd)
            remaining.discard(fd)
            if not remaining and not done.done():
                done.set_result(None)

        for fd in live:
            loop.add_reader(fd, exited, fd)
        try:
            await asyncio.wait_for(done, deadline_s)
        except TimeoutError:
            return False
        finally:
            for fd in remaining:
                loop.remove_reader(fd)
        return True

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def tree_of(root_pid: int, tag: str) -> list[int]:
    """PIDs of the root, its descendants (setsid escapees included: the parent links
    hold), and every process carrying the call's tag (orphans whose parent exited)."""
    tree = Tree()
    try:
        tree.walk(root_pid)
        return sorted(set(tree.fds) | _tagged({tag}))
    finally:
        tree.close()


def reap_orphans(tags: list[str]) -> list[int]:
    """Kill what a crashed run's tool calls left running, found by the tags its log
    recorded (a tag names one call of one agent process, so no stranger matches)."""
    if not tags:
        return []
    tagged = _tagged(set(tags))
    for pid in tagged:
        _signal(pid, signal.SIGKILL)
    return sorted(tagged)


async def kill_tree(proc: asyncio.subprocess.Process, tag: str) -> None:
    """SIGKILL the tool's tree and return once every process of it is gone.

    Order matters for speed and for reach: the walk by parent links comes first (once a
    parent dies its children are re-parented and the links are gone) and costs a few
    reads per process of the tree; the group and each process found are killed at once;
    then, while the kernel tears them down, nothing runs here but the wait. Only after
    that is /proc scanned for the call's tag — orphans whose parent had already exited,
    and anything forked between the walk and the kill — and, if any is found, the kill
    and the wait are repeated until a scan finds none."""
    if failpoints.on("no-tree-kill"):
        _signal(proc.pid, signal.SIGKILL)
        await proc.wait()
        return
    since = _start_ticks(proc.pid)
    group = proc.pid  # start_new_session made the shell its group's leader
    tree = Tree()
    try:
        tree.walk(proc.pid)
        if failpoints.on("term-then-wait"):
            tree.kill(signal.SIGTERM, group)
            await tree.gone(TERM_GRACE_S)
        while True:
            tree.kill(signal.SIGKILL, group)
            if not await tree.gone(GONE_DEADLINE_S):
                raise RuntimeError(f"processes of the tool's tree survived SIGKILL for {GONE_DEADLINE_S} s")
            late = [pid for pid in _tagged({tag}, since) if pid not in tree.fds and tree.hold(pid, tag=tag)]
            if not late:
                break
    finally:
        tree.close()
    await proc.wait()  # reaped too: the subprocess transport is closed before the result is written


def _start_ticks(pid: int) -> int:
    """When ``pid`` started, in clock ticks since boot; 0 (scan everything) if unknown."""
    try:
        return int(_stat(pid)[STARTTIME])
    except (OSError, ValueError, IndexError):
        return 0


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
