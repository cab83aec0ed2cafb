"""Reader for llm's SQLite log: ``$LLM_USER_PATH/logs.db``.

Written for the schema of llm 0.36 (the ``_llm_migrations`` table's newest entry
``m027_turns_response_json``), from recordings of 0.36 (``tests/fixtures/agents/llm-0.36``,
kept as SQL dumps). The conversation is a tree of content-addressed messages: a ``threads``
row names its tip (``tip_message_hash``), each ``messages`` row its parent, and ``parts``
hold each message's text, tool calls and tool results (JSON in ``payload``). One database
holds every thread: ``…/logs.db#<thread id>`` names one, a bare path means the newest.
``llm -c`` continues the newest thread, moving its tip.

=========================================  ===================================================
rows (the chain from the root to the tip)   canonical events
=========================================  ===================================================
``user`` message, its text parts            ``turn_started`` (input)
``assistant`` message                       ``assistant_message`` (text parts; ``tool_call``
                                            parts as calls) and one ``tool_call`` per call
``tool`` message, its ``tool_result`` parts ``tool_result`` (``exception`` kept)
=========================================  ===================================================

A chain is written when it has run to its end; a run stopped or killed before leaves nothing
of its turn. Not recorded, so never emitted: turn ends, Stop requests, model requests, tool
starts, aborted results, partial text. The snapshot, the row comparison and ``db#session``
paths are those of every SQLite store (``harness.readers.sqlite``).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from harness.model import Capability, Change, FormatProblem, LogCapture, SessionHeader, SessionLog, Snapshot
from harness.readers import sqlite as sqlite_store
from harness.readers.base import CannotDamage, Damage, LogDamaged, UnknownVersion
from harness.readers.jsonl import Events

KNOWN_MIGRATION = "m027_turns_response_json"
TABLES = ("threads", "messages", "parts")
REQUIRED_COLUMNS = {
    "threads": ("id", "tip_message_hash", "datetime_utc"),
    "messages": ("hash", "parent_hash", "role"),
    "parts": ("id", "message_hash", "position", "type", "text", "payload"),
}


class LlmLogsReader:
    name = "llm-logs"
    capabilities = frozenset({Capability.FORMAT_RULES})
    damage_kinds: frozenset[str] = frozenset()  # SQLite writes whole rows or none: no torn tail; no line to break
    agent_versions = "llm 0.36"

    def snapshot(self, path: str) -> Snapshot | None:
        return sqlite_store.snapshot(self.name, path)

    def parse(self, snapshot: Snapshot) -> SessionLog:
        db, wanted = sqlite_store.split(snapshot.path)
        with sqlite_store.opened(snapshot) as con:
            self._check_schema(db, con)
            thread = _thread(db, con, wanted)
            if thread is None:
                return SessionLog(path=snapshot.path, header=SessionHeader(session_id=None), events=())
            chain = _chain(db, con, thread)
            events = _events(con, chain, thread["id"])
        header = SessionHeader(session_id=thread["id"], created=thread["created"], adapter="chat",
                               raw={"tip": thread["tip"], "chain": [m["hash"] for m in chain]})
        return SessionLog(path=snapshot.path, header=header, events=tuple(events))

    def _check_schema(self, db: str, con: sqlite3.Connection) -> None:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
        if "_llm_migrations" not in tables:
            raise LogDamaged(db, None, f"no _llm_migrations table: not an llm log database ({self.agent_versions})",
                             where="table _llm_migrations")
        names = [r[0] for r in con.execute("select name from _llm_migrations order by rowid")]
        if not names or names[-1] != KNOWN_MIGRATION:
            raise UnknownVersion(db, None, f"schema at migration {names[-1] if names else None!r}; this reader was "
                                       f"written for {self.agent_versions} ({KNOWN_MIGRATION}) and does not know it",
                             where="table _llm_migrations")
        for table, columns in REQUIRED_COLUMNS.items():
            have = {r[1] for r in con.execute(f'pragma table_info("{table}")')}
            missing = [c for c in columns if c not in have]
            if missing:
                raise LogDamaged(db, None, f"table {table} lacks {', '.join(missing)} (as {self.agent_versions} "
                                           "has it)", where=f"table {table}")

    def damage(self, path: str, kind: str) -> Damage:
        raise CannotDamage(f"llm's log database has no damage {kind!r}")

    def changed(self, before: Snapshot, after: Snapshot) -> Change | None:
        return sqlite_store.first_changed_row(before, after, TABLES)

    def lost(self, before: Snapshot, after: Snapshot) -> Change | None:
        """Messages and parts are written once (a message is named by its content): every one of
        ``before`` is still there, unchanged. A thread's tip moves on as it grows."""
        old, new = sqlite_store.rows(before, TABLES), sqlite_store.rows(after, TABLES)
        for key, value in sorted(old.items()):
            table, rid = key
            if table != "threads" and new.get(key) != value:
                return Change(where=f"table {table}, row {rid}",
                              detail=f"{table} {rid} is {'gone' if key not in new else 'rewritten'}")
        return None

    def format_problems(self, log: SessionLog) -> list[FormatProblem]:
        """llm's rules beyond the chain itself (whose breaks ``parse`` refuses): each tool
        result answers a call made earlier in the thread."""
        problems = []
        calls: set[str] = set()
        for event in log.events:
            if event.type == "tool_call":
                calls.add(event.get("call_id"))
            if event.type == "tool_result" and event.get("call_id") not in calls:
                problems.append(FormatProblem(note=f"tool result for {event.get('call_id')} answers no earlier call "
                                                   f"({event.where})", event=event, line=event.line))
        return problems

    def continuation_problems(self, before: LogCapture, after: SessionLog) -> list[FormatProblem]:
        return []  # a database has no torn tail to continue after


def _thread(db: str, con: sqlite3.Connection, wanted: str | None) -> dict[str, Any] | None:
    query = "select id, tip_message_hash, datetime_utc from threads "
    row = (con.execute(query + "where id = ?", (wanted,)).fetchone() if wanted
           else con.execute(query + "order by datetime_utc desc, rowid desc limit 1").fetchone())
    if row is None and wanted:
        raise LogDamaged(db, None, f"no thread {wanted!r} in the log", where="table threads")
    return None if row is None else {"id": row[0], "tip": row[1], "created": row[2]}


def _chain(db: str, con: sqlite3.Connection, thread: dict[str, Any]) -> list[dict[str, Any]]:
    """The thread's messages from its root to its tip."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    current = thread["tip"]
    while current is not None:
        if current in seen:
            raise LogDamaged(db, None, f"thread {thread['id']}: message {current} is its own ancestor",
                             where="table messages")
        seen.add(current)
        row = con.execute("select hash, parent_hash, role from messages where hash = ?", (current,)).fetchone()
        if row is None:
            raise LogDamaged(db, None, f"thread {thread['id']}: message {current} is named but not stored",
                             where="table messages")
        out.append({"hash": row[0], "parent": row[1], "role": row[2]})
        current = row[1]
    return out[::-1]


def _events(con: sqlite3.Connection, chain: list[dict[str, Any]], thread_id: str) -> list[Any]:
    events = Events()
    step = 0
    for number, message in enumerate(chain, 1):
        parts = con.execute("select id, type, text, payload from parts where message_hash = ? order by position",
                            (message["hash"],)).fetchall()
        where = f"message {number} of thread {thread_id} ({message['hash']})"
        text = "".join(p[2] for p in parts if p[1] == "text" and isinstance(p[2], str))
        payloads = [(p[1], _payload(p[3])) for p in parts]
        if message["role"] == "user":
            step = 0
            events.start_turn(number, where=where, input=text, inbox=[])
        elif message["role"] == "assistant":
            step += 1
            calls = [{"id": p.get("tool_call_id"), "name": p.get("name"), "arguments": json.dumps(p.get("arguments"))}
                     for kind, p in payloads if kind == "tool_call"]
            events.add("assistant_message", number, where=where, step=step, text=text, tool_calls=calls,
                       finish_reason=None, interrupted=False)
            for kind, p in payloads:
                if kind == "tool_call":
                    events.add("tool_call", number, where=where, step=step, call_id=p.get("tool_call_id"),
                               name=p.get("name"), arguments=p.get("arguments"))
        elif message["role"] == "tool":
            for kind, p in payloads:
                if kind == "tool_result":
                    output = p.get("output")
                    events.add("tool_result", number, where=where, call_id=p.get("tool_call_id"), name=p.get("name"),
                               output=output if isinstance(output, str) else json.dumps(output), aborted=False,
                               exception=p.get("exception"))
    return events.items


def _payload(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
