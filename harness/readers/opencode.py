"""Reader for opencode's SQLite store: ``~/.local/share/opencode/opencode.db``.

Written for the schema of opencode 1.18.x (``session.version``; the ``migration`` table's
newest entry ``20260622202450_simplify_session_input``), from recordings of 1.18.33
(``tests/fixtures/agents/opencode-1.18.33``, kept as SQL dumps). One database holds every
session: a path ``…/opencode.db#ses_…`` names one, a bare path means the newest.

The snapshot is a consistent copy taken with SQLite's backup API from a read-only
connection (``mode=ro``): the agent's file is never written and never write-locked. Rows
are JSON in ``data``; rows are updated in place as a step streams (a tool part goes
``pending`` → ``running`` → ``completed``), so the store is *not* append-only.

=========================================  ===================================================
rows                                        canonical events
=========================================  ===================================================
``message`` role ``user`` + its text parts  ``turn_started`` (input)
``message`` role ``assistant`` (one step)   ``assistant_message`` (text parts; ``interrupted``
                                            when a text part has a start and no end)
``part`` type ``tool``                      ``tool_call`` (input); ``tool_started`` once the part
                                            is ``running`` with a start time (no pid is stored);
                                            ``tool_result`` once ``completed`` / ``error``
``part`` type ``step-finish``               ``step_settled``
last assistant message of a user message,   ``turn_ended``: ``stop`` → ``completed``, ``length`` →
completed (``time.completed``)              ``max_tokens``; ``error`` ``MessageAbortedError`` →
                                            ``aborted`` (source ``user``), other errors → ``error``
=========================================  ===================================================

Events carry ``line`` (the row's position in reading order) and ``where`` ("row 3 of table
part (prt_…)"). Not recorded: model requests (a ``step-start`` part has no messages), Stop
requests apart from their effect, the text streamed before an interruption (a text part
is written empty at its start and filled only at its end).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from harness.model import (
    Capability,
    Change,
    FormatProblem,
    LogCapture,
    SessionHeader,
    SessionLog,
    Snapshot,
)
from harness.readers import sqlite as sqlite_store
from harness.readers.base import CannotDamage, Damage, LogDamaged, UnknownVersion
from harness.readers.jsonl import Events

REQUIRED_COLUMNS = {
    "session": ("id", "directory", "version", "time_created"),
    "message": ("id", "session_id", "time_created", "data"),
    "part": ("id", "message_id", "session_id", "time_created", "data"),
}
TABLES = ("session", "message", "part")
FINAL_TOOL_STATES = ("completed", "error")
FINISH_REASONS = {"stop": "completed", "length": "max_tokens", "content-filter": "blocked"}


class OpenCodeReader:
    """opencode's store. A fork that keeps its schema (Kilo CLI) is this reader with its own
    name, program, versions and newest migration (``harness.readers.kilo``)."""

    name = "opencode"
    program = "opencode"  # as refusals name the agent
    capabilities = frozenset({Capability.TURN_ENDS, Capability.INTERRUPTED_TEXT, Capability.TOOL_STARTS,
                              Capability.STEP_SETTLEMENTS, Capability.FORMAT_RULES})
    damage_kinds = frozenset({"mid-file"})
    agent_versions = "opencode 1.18.x"
    supported_versions: tuple[str, ...] = ("1.18.",)  # session.version prefixes
    known_migration = "20260622202450_simplify_session_input"

    # --- snapshots ----------------------------------------------------------------------
    def snapshot(self, path: str) -> Snapshot | None:
        return sqlite_store.snapshot(self.name, path)

    def parse(self, snapshot: Snapshot) -> SessionLog:
        db, wanted = sqlite_store.split(snapshot.path)
        with sqlite_store.opened(snapshot) as con:
            self._check_schema(db, con)
            session = self._session(db, con, wanted)
            return _Mapper(db, con, session).run(snapshot.path)

    def _check_schema(self, db: str, con: sqlite3.Connection) -> None:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
        if "migration" not in tables:
            raise LogDamaged(db, None, f"no migration table: not an {self.program} database ({self.agent_versions})",
                             where="table migration")
        migrations = sorted(r[0] for r in con.execute("select id from migration"))
        newest = migrations[-1] if migrations else None
        if newest != self.known_migration:
            raise UnknownVersion(db, None, f"schema at migration {newest!r}; this reader was written for "
                                       f"{self.agent_versions} (schema {self.known_migration}) and does not know it",
                             where="table migration")
        for table, columns in REQUIRED_COLUMNS.items():
            if table not in tables:
                raise LogDamaged(db, None, f"no table {table} (as {self.agent_versions} has it)",
                                 where=f"table {table}")
            have = {r[1] for r in con.execute(f'pragma table_info("{table}")')}
            missing = [c for c in columns if c not in have]
            if missing:
                raise LogDamaged(db, None, f"table {table} lacks {', '.join(missing)} "
                                 f"(as {self.agent_versions} has it)", where=f"table {table}")

    # --- damage -------------------------------------------------------------------------
    def damage(self, path: str, kind: str) -> Damage:
        """``mid-file``: one message part's JSON is overwritten with garbage (a database has
        no torn tail: SQLite's journal makes every write whole or absent)."""
        if kind != "mid-file":
            raise CannotDamage(f"{self.program}'s database has no damage {kind!r} (known: mid-file)")
        db, wanted = sqlite_store.split(path)
        con = sqlite3.connect(db)
        try:
            session = wanted or _newest_session(con)
            rows = [r[0] for r in con.execute("select rowid from part where session_id = ? order by id", (session,))]
            if len(rows) < 3:
                raise CannotDamage(f"mid-file damage needs at least three parts in session {session}, "
                                   f"it has {len(rows)}")
            target = rows[len(rows) // 2]
            con.execute("update part set data = ? where rowid = ?", ('{"type": \x00 not json', target))
            con.commit()
        finally:
            con.close()
        return Damage(kind, None, f"row {target} of table part")

    # --- comparisons --------------------------------------------------------------------
    def changed(self, before: Snapshot, after: Snapshot) -> Change | None:
        return sqlite_store.first_changed_row(before, after, TABLES)

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None:
        """Every message and part of ``before`` is still there, and a part that was final then
        (a text with an end, a finished tool, a step-finish) is unchanged."""
        old, new = sqlite_store.rows(before, TABLES), sqlite_store.rows(after, TABLES)
        for key, value in sorted(old.items()):
            table, rid = key
            if table not in ("message", "part"):
                continue
            if key not in new:
                return Change(where=f"table {table}, row {rid}", detail=f"{table} {rid} is gone")
            if table == "part" and _final(value) and new[key] != value:
                return Change(where=f"table part, row {rid}", detail=f"final part {rid} was rewritten")
        return None

    def _session(self, db: str, con: sqlite3.Connection, wanted: str | None) -> dict[str, Any]:
        sid = wanted or _newest_session(con)
        if sid is None:
            raise LogDamaged(db, None, "the database holds no session", where="table session")
        row = con.execute("select rowid, id, directory, version, time_created, model from session where id = ?",
                          (sid,)).fetchone()
        if row is None:
            raise LogDamaged(db, None, f"no session {sid!r}", where="table session")
        rowid, sid, directory, version, created, model = row
        if not (isinstance(version, str) and version.startswith(self.supported_versions)):
            raise UnknownVersion(db, None, f"session {sid} was written by {self.program} {version}; this reader was "
                                       f"written for {self.agent_versions}", where=f"row {rowid} of table session")
        try:
            model_id = json.loads(model).get("id") if model else None
        except (ValueError, AttributeError):
            model_id = None
        return {"id": sid, "directory": directory, "version": version, "created": created, "model": model_id}

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """opencode's rules as its database shows them: each tool part has a call id, each
        finished tool has an end time, each turn's assistant messages name their user message."""
        problems = []
        for event in log.events:
            if event.type == "tool_call" and not event.get("call_id"):
                problems.append(FormatProblem(note=f"tool part without callID ({event.where})", event=event,
                                              line=event.line))
            if event.type == "tool_result" and not event.get("ended_ms"):
                problems.append(FormatProblem(note=f"finished tool without an end time ({event.where})", event=event,
                                              line=event.line))
            if event.type == "assistant_message" and event.get("orphan"):
                problems.append(FormatProblem(note=f"assistant message names no user message ({event.where})",
                                              event=event, line=event.line))
        return problems

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]:
        return []  # a database has no torn tail to continue after


# --- helpers --------------------------------------------------------------------------


def _newest_session(con: sqlite3.Connection) -> str | None:
    row = con.execute("select id from session order by time_created desc, id desc limit 1").fetchone()
    return row[0] if row else None


def _json(db: str, table: str, rowid: int, rid: str, raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as err:
        raise LogDamaged(db, None, f"unreadable data in {table} {rid} (not JSON: {err})",
                         where=f"row {rowid} of table {table}") from None
    if not isinstance(value, dict):
        raise LogDamaged(db, None, f"data of {table} {rid} is not a JSON object", where=f"row {rowid} of table {table}")
    return value


def _final(raw: Any) -> bool:
    try:
        part = json.loads(raw[-1]) if isinstance(raw, tuple) else json.loads(raw)
    except (TypeError, ValueError):
        return False
    if not isinstance(part, dict):
        return False
    kind = part.get("type")
    if kind == "text":
        return bool((part.get("time") or {}).get("end"))
    if kind == "tool":
        return (part.get("state") or {}).get("status") in FINAL_TOOL_STATES
    return kind in ("step-finish", "step-start")


class _Mapper:
    def __init__(self, db: str, con: sqlite3.Connection, session: dict[str, Any]):
        self.db, self.con, self.session = db, con, session
        self.events = Events()
        self.position = 0

    def _where(self, table: str, rowid: int, rid: str) -> tuple[int, str]:
        self.position += 1
        return self.position, f"row {rowid} of table {table} ({rid})"

    def run(self, path: str) -> SessionLog:
        sid = self.session["id"]
        messages = []
        for rowid, mid, _created, raw in self.con.execute(
                "select rowid, id, time_created, data from message where session_id = ? order by time_created, id",
                (sid,)):
            messages.append((rowid, mid, _json(self.db, "message", rowid, mid, raw)))
        parts: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
        for rowid, pid, mid, raw in self.con.execute(
                "select rowid, id, message_id, data from part where session_id = ? order by id", (sid,)):
            parts.setdefault(mid, []).append((rowid, pid, _json(self.db, "part", rowid, pid, raw)))
        # the last assistant message answering each user message: where that turn can end
        last_reply: dict[str, str] = {}
        for _, mid, data in messages:
            if data.get("role") == "assistant" and data.get("parentID"):
                last_reply[data["parentID"]] = mid
        users = {mid for _, mid, data in messages if data.get("role") == "user"}
        step = 0
        for rowid, mid, data in messages:
            role = data.get("role")
            line, where = self._where("message", rowid, mid)
            if role == "user":
                text = "".join(p.get("text", "") for _, _, p in parts.get(mid, []) if p.get("type") == "text"
                               and not p.get("synthetic"))
                self.events.start_turn(line, where=where, input=text, inbox=[], message_id=mid,
                                       created_ms=data.get("time", {}).get("created"))
                step = 0
                continue
            if role != "assistant":
                continue
            step += 1
            self._assistant(rowid, mid, data, parts.get(mid, []), step, line, where,
                            orphan=data.get("parentID") not in users)
            if last_reply.get(str(data.get("parentID"))) == mid:
                self._turn_end(mid, data, line, where)
        header = SessionHeader(session_id=sid, created=str(self.session["created"]), cwd=self.session["directory"],
                               model=self.session["model"], adapter="chat",
                               raw={"version": self.session["version"]})
        return SessionLog(path=path, header=header, events=tuple(self.events.items))

    def _assistant(self, rowid: int, mid: str, data: dict[str, Any], parts: list, step: int, line: int, where: str,
                   orphan: bool) -> None:
        texts = [p for _, _, p in parts if p.get("type") == "text"]
        tools = [(r, pid, p) for r, pid, p in parts if p.get("type") == "tool"]
        unfinished = any(not (p.get("time") or {}).get("end") for p in texts)
        calls = [{"id": p.get("callID"), "name": p.get("tool"),
                  "arguments": json.dumps((p.get("state") or {}).get("input") or {})} for _, _, p in tools]
        text = "".join(p.get("text", "") for p in texts)
        self.events.add("assistant_message", line, where=where, step=step, text=text,
                        tool_calls=calls, finish_reason=data.get("finish"), interrupted=unfinished,
                        message_id=mid, orphan=orphan)
        for prow, pid, part in parts:
            kind = part.get("type")
            if kind == "tool":
                pline, pwhere = self._where("part", prow, pid)
                state = part.get("state") or {}
                status = state.get("status")
                times = state.get("time") or {}
                self.events.add("tool_call", pline, where=pwhere, step=step, call_id=part.get("callID"),
                                name=part.get("tool"), arguments=state.get("input") or {}, status=status)
                if status in ("running", *FINAL_TOOL_STATES) and times.get("start"):
                    self.events.add("tool_started", pline, where=pwhere, call_id=part.get("callID"), pid=None,
                                    pgid=None, started_ms=times["start"])
                if status in FINAL_TOOL_STATES:
                    output = state.get("output") if status == "completed" else state.get("error")
                    text = output if isinstance(output, str) else json.dumps(output)
                    self.events.add("tool_result", pline, where=pwhere, call_id=part.get("callID"), output=text,
                                    exit_code=(state.get("metadata") or {}).get("exit"), status=status,
                                    aborted=status == "error" and "abort" in text.lower(), ended_ms=times.get("end"))
            elif kind == "step-finish":
                pline, pwhere = self._where("part", prow, pid)
                self.events.add("step_settled", pline, where=pwhere, step=step, reason=part.get("reason"))

    def _turn_end(self, mid: str, data: dict[str, Any], line: int, where: str) -> None:
        completed = (data.get("time") or {}).get("completed")
        error = data.get("error")
        if isinstance(error, dict):
            name = error.get("name")
            message = (error.get("data") or {}).get("message") if isinstance(error.get("data"), dict) else None
            if name == "MessageAbortedError":
                self.events.add("turn_ended", line, where=where, reason="aborted", source="user", native_error=name)
            else:
                self.events.add("turn_ended", line, where=where, reason="error", error=message or str(name),
                                native_error=name)
            return
        finish = data.get("finish")
        if completed and finish in FINISH_REASONS:
            self.events.add("turn_ended", line, where=where, reason=FINISH_REASONS[finish], native_finish=finish)
