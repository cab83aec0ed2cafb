"""Tools the model may call: ``bash`` and ``read_file``.

A bash command runs as the leader of a new session (so its own process group), with
output to a file rather than a pipe: a background process that keeps the pipe open can
then never hang the tool. Stop kills the whole tree at once with SIGKILL — the group, every
descendant found through ``/proc`` parent links (including ones that called setsid), and
every process that still carries this call's tag in its environment (descendants whose
parent already exited) — and returns only once each of them is gone, waiting on pidfds
rather than sleeping.
"""

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
            self.proc = await asyncio.shield(self._spawn)
        finally:
            os.close(fd)
        on_started(self.proc.pid, self.proc.pid)
        code = await self.proc.wait()
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


def _scan_proc(tags: set[str]) -> tuple[dict[int, list[int]], set[int]]:
    """One pass over ``/proc`` (about half a millisecond): parent links, and the processes
    whose environment carries one of ``tags``."""
    needles = [f"{TAG_VAR}={tag}".encode() + b"\0" for tag in tags]
    children: dict[int, list[int]] = {}
    tagged: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split(None, 2)[1])
            children.setdefault(ppid, []).append(pid)
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
            if any(needle in environ for needle in needles):
                tagged.add(pid)
        except (OSError, ValueError):
            continue
    return children, tagged


def tree_of(root_pid: int, tag: str) -> list[int]:
    """PIDs of the root, its descendants (setsid escapees included: the parent links
    hold), and every process carrying the call's tag (orphans whose parent exited)."""
    children, tagged = _scan_proc({tag})
    found = {root_pid}
    stack = [root_pid, *tagged]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return sorted(found | tagged)


def reap_orphans(tags: list[str]) -> list[int]:
    """Kill what a crashed run's tool calls left running, found by the tags its log
    recorded (a tag names one call of one agent process, so no stranger matches)."""
    if not tags:
        return []
    _, tagged = _scan_proc(set(tags))
    for pid in tagged:
        _signal(pid, signal.SIGKILL)
    return sorted(tagged)


async def kill_tree(proc: asyncio.subprocess.Process, tag: str) -> None:
    pgid = proc.pid  # start_new_session made the shell its group's leader
    if failpoints.on("no-tree-kill"):
        _signal(proc.pid, signal.SIGKILL)
        await proc.wait()
        return
    # The walk comes first: once a parent dies its children are re-parented and the
    # links are gone. PIDs found here are signalled within the millisecond, while each
    # is still held as a zombie or running, so they cannot have been reused.
    pids = tree_of(proc.pid, tag)
    if failpoints.on("term-then-wait"):
        _signal_all(pgid, pids, signal.SIGTERM)
        await _wait_gone(pids, TERM_GRACE_S, proc)
    _signal_all(pgid, pids, signal.SIGKILL)
    if not await _wait_gone(pids, GONE_DEADLINE_S, proc):
        raise RuntimeError(f"processes of the tool's tree survived SIGKILL for {GONE_DEADLINE_S} s")
    # A process that forked or called setsid between the walk and the kill still carries
    # the tag: walk once more and kill whatever is left.
    late = [pid for pid in tree_of(proc.pid, tag) if pid not in pids and not _is_zombie(pid)]
    if late:
        _signal_all(pgid, late, signal.SIGKILL)
        await _wait_gone(late, GONE_DEADLINE_S, proc)


def _signal_all(pgid: int, pids: list[int], sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in pids:
        _signal(pid, sig)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


async def _wait_gone(pids: list[int], deadline_s: float, shell: asyncio.subprocess.Process) -> bool:
    """True once every process is gone (exited; a zombie counts as gone), False at the deadline."""
    loop = asyncio.get_running_loop()
    waits = [loop.create_task(shell.wait())]
    waits += [loop.create_task(_pid_exit(pid)) for pid in pids if pid != shell.pid]
    done, pending = await asyncio.wait(waits, timeout=deadline_s)
    for task in pending:
        task.cancel()
    return not pending


async def _pid_exit(pid: int) -> None:
    """Wait for a process that is not our child to exit: its pidfd turns readable."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if select.select([fd], [], [], 0)[0]:
            return
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
        try:
            await ready
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True
    return stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] in (b"Z", b"X")
