"""The Python API: open (or resume) a session, then start, stop and await turns.

Opening a session with ``resume`` is the whole recovery path: the log is loaded (never
written), replayed into a ``SessionState``, repaired in memory, and the next turn starts
with a ``session_resumed`` note. Processes a crashed run left behind are found by the tag
its ``tool_started`` events recorded and killed, and the note says so.
"""

from __future__ import annotations

import datetime as dt
import glob
import os
import secrets
from pathlib import Path
from typing import Any

from . import failpoints
from .adapters import make_adapter
from .engine import Session
from .log import LoadedLog, LogWriter, load, paused_gc, utc_now
from .state import History, SessionState
from .tools import reap_orphans

SYSTEM_PROMPT = (
    "You are refagent, a small coding agent. You work in the folder {cwd}. Use the bash tool "
    "to run commands and read_file to read files. Be brief."
)


def default_sessions_dir() -> Path:
    env = os.environ.get("REFAGENT_SESSIONS_DIR")
    return Path(env) if env else Path.home() / ".refagent" / "sessions"


def new_session_id() -> str:
    return "s-" + dt.datetime.now(dt.UTC).strftime("%Y%m%d%H%M%S") + "-" + secrets.token_hex(4)


def log_path_of(sessions_dir: str | Path, session_id: str) -> Path:
    if not session_id or "/" in session_id or session_id.startswith("."):
        raise ValueError(f"not a session id: {session_id!r}")
    return Path(sessions_dir) / f"{session_id}.jsonl"


def latest_session_id(sessions_dir: str | Path) -> str:
    logs = sorted(Path(sessions_dir).glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    if not logs:
        raise FileNotFoundError(f"no session to continue in {sessions_dir}")
    return logs[-1].stem


def replay(loaded: LoadedLog) -> SessionState:
    """Build the state a log describes, repairing a crash in memory only."""
    header = loaded.header
    state = SessionState(header, History(SYSTEM_PROMPT.format(cwd=header.get("cwd", "."))))
    with paused_gc():
        for event in loaded.events:
            state.apply(event)
    state.repair_open_turn()
    return state


async def open_session(*, sessions_dir: str | Path | None = None, cwd: str | Path | None = None,
                       adapter: str = "http", model: str = "stopbench-1", base_url: str | None = None,
                       api_key: str | None = None, scenario: str | None = None,
                       resume: str | None = None) -> Session:
    failpoints.check_env()
    sessions_dir = Path(sessions_dir) if sessions_dir else default_sessions_dir()
    cwd = Path(cwd or os.getcwd()).resolve()
    model_adapter = make_adapter(adapter, base_url=base_url, api_key=api_key, scenario=scenario)
    if resume and failpoints.on("resume-forks"):
        resume = None
    if resume:
        return _resume(log_path_of(sessions_dir, resume), model_adapter, cwd, model)
    session_id = new_session_id()
    header: dict[str, Any] = {
        "format": "contract-log", "version": 1, "session_id": session_id, "created": utc_now(),
        "cwd": str(cwd), "model": model, "adapter": adapter, "parent": None,
    }
    if failpoints.on("leak-api-key"):
        header["api_key"] = api_key
    writer = LogWriter.create(log_path_of(sessions_dir, session_id), header)
    state = SessionState(header, History(SYSTEM_PROMPT.format(cwd=cwd)))
    return Session(session_id=session_id, writer=writer, state=state, adapter=model_adapter, cwd=cwd, model=model)


def _resume(path: Path, model_adapter: Any, cwd: Path, model: str) -> Session:
    if not path.exists():
        raise FileNotFoundError(f"no session {path.stem!r} in {path.parent}")
    loaded = load(path)  # LogDamage propagates: the caller reports it, the file is untouched
    state = replay(loaded)
    writer = LogWriter.reopen(loaded)
    if failpoints.on("repair-writes-disk"):
        ending = state.endings.get(state.last_turn)
        if ending is not None and ending.get("synthesized"):
            writer.append("turn_ended", turn=state.last_turn, reason="interrupted")
    if failpoints.on("lose-inbox"):
        for item in state.pending_inbox():
            item.status = "lost"
    reaped = reap_orphans(_unfinished_tool_tags(loaded))
    for leftover in path.parent.glob(f"{glob.escape(path.stem)}.*.out"):  # output of calls a crash cut off
        leftover.unlink(missing_ok=True)
    gap_s = _gap_seconds(loaded.events[-1].get("time") if loaded.events else loaded.header.get("created"))
    return Session(session_id=loaded.header["session_id"], writer=writer, state=state, adapter=model_adapter,
                   cwd=cwd, model=model, resumed_gap_s=gap_s, reaped=reaped)


def _unfinished_tool_tags(loaded: LoadedLog) -> list[str]:
    finished = {e.get("call_id") for e in loaded.events if e["type"] == "tool_result"}
    return [e["tag"] for e in loaded.events
            if e["type"] == "tool_started" and e.get("tag") and e.get("call_id") not in finished]


def _gap_seconds(last_time: str | None) -> float:
    if not last_time:
        return 0.0
    try:
        then = dt.datetime.strptime(last_time, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    except ValueError:
        return 0.0
    return max(0.0, (dt.datetime.now(dt.UTC) - then).total_seconds())


def fork(sessions_dir: str | Path, session_id: str, at_seq: int) -> tuple[str, Path]:
    """A new session holding events 1..``at_seq`` of another; its header names the parent."""
    loaded = load(log_path_of(sessions_dir, session_id))
    last = loaded.events[-1]["seq"] if loaded.events else 0
    if not 1 <= at_seq <= last:
        raise ValueError(f"--at {at_seq} is outside the session's events 1..{last}")
    new_id = new_session_id()
    header = dict(loaded.header, session_id=new_id, created=utc_now(), parent={"session_id": session_id, "seq": at_seq})
    header.pop("api_key", None)
    path = log_path_of(sessions_dir, new_id)
    writer = LogWriter.create(path, header)
    try:
        for event in loaded.events[:at_seq]:
            writer.copy(event)
        writer.checkpoint()
    finally:
        writer.close()
    return new_id, path


__all__ = ["open_session", "fork", "replay", "latest_session_id", "default_sessions_dir", "Session"]
