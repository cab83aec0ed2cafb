"""Full-text search over a session: SQLite FTS5 (the standard library's ``sqlite3``).

The index is derived data, rebuilt in memory each time a log is loaded for a search and
never written anywhere: the log stays the only record (and loading it never writes).
Rebuilding costs tens of milliseconds on a 132k-event log, so a cache file beside the log
would buy little and add a second thing to keep in step with it.

One FTS5 row per event that carries text (``rowid`` = the event's ``seq``): user text
(``turn_started`` input, ``inbox_queued`` text), assistant text (``assistant_message``),
tool commands (``tool_call``: a bash command, or the arguments of another tool) and tool
outputs (``tool_result``). The rows are collected while the log is decoded
(``Indexer`` is a replay target of ``log.load``), and the FTS5 table is contentless with no
column sizes (``content='', columnsize=0``): the text is already in memory, and FTS5's own
copy of it and a size row per event would double the rebuild. Without sizes there is no
bm25 ranking, so matches are listed in the order they happened (the latest ``limit``); the
few rows a search returns get a small table of their own for FTS5's snippets.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec

from . import log
from .events import Event, apply_all, tag_of

FIELD_OF = {"turn_started": "user", "inbox_queued": "user", "assistant_message": "assistant",
            "tool_call": "command", "tool_result": "output"}
FIELDS = ("user", "assistant", "command", "output")
SNIPPET_TOKENS = 12
CREATE_INDEX = "CREATE VIRTUAL TABLE idx USING fts5(body, content='', columnsize=0)"


@dataclass
class Hit:
    seq: int
    type: str
    snippet: str


# The one field of each event type that carries its text.
class TurnInput(Event, tag="turn_started"):
    input: Any = None


class InboxText(Event, tag="inbox_queued"):
    text: Any = None


class AssistantText(Event, tag="assistant_message"):
    text: Any = None


class ToolCommand(Event, tag="tool_call"):
    arguments: Any = None


class ToolOutput(Event, tag="tool_result"):
    output: Any = None


class Indexer:
    """Collects the text of each event of the chosen ``fields`` as (seq, text) rows, in seq
    order; a replay target for ``log.load`` (events are seen while still in cache, and need
    not be kept)."""

    def __init__(self, header: dict[str, Any] | None = None, fields: Iterable[str] = FIELDS):
        self.rows: list[tuple[int, str]] = []
        self.types: list[str] = []
        wanted = frozenset(fields)
        by_kind: dict[type[Event], Callable[[Any], None]] = {
            TurnInput: self._text_of(TurnInput, "input"), InboxText: self._text_of(InboxText, "text"),
            AssistantText: self._text_of(AssistantText, "text"), ToolOutput: self._text_of(ToolOutput, "output"),
            ToolCommand: self._command,
        }
        self.handlers = {kind: handler for kind, handler in by_kind.items() if FIELD_OF[tag_of(kind)] in wanted}

    @classmethod
    def of_events(cls, events: Iterable[dict[str, Any]], fields: Iterable[str] = FIELDS) -> Indexer:
        indexer = cls(None, fields)
        apply_all(indexer, events)
        return indexer

    def _text_of(self, kind: type[Event], field: str) -> Callable[[Any], None]:
        rows, types, type_, text_of = self.rows, self.types, tag_of(kind), attrgetter(field)

        def collect(event: Any) -> None:
            text = text_of(event)
            if text and type(text) is str:
                rows.append((event.seq, text))
                types.append(type_)

        return collect

    def _command(self, event: ToolCommand) -> None:
        arguments = event.arguments
        command = arguments.get("command") if isinstance(arguments, dict) else None
        text = command if isinstance(command, str) else msgspec.json.encode(arguments).decode() if arguments else ""
        if text:
            self.rows.append((event.seq, text))
            self.types.append("tool_call")

    def find(self, seq: int) -> int:
        """The position of event ``seq``'s row (rows are in seq order)."""
        return bisect.bisect_left(self.rows, (seq,))


class SearchIndex:
    """An FTS5 index in memory over the rows an ``Indexer`` collected."""

    def __init__(self, indexer: Indexer):
        self._indexer = indexer
        self._db = sqlite3.connect(":memory:", isolation_level=None)
        self._db.execute(CREATE_INDEX)
        self._db.execute("BEGIN")
        self._db.executemany("INSERT INTO idx(rowid, body) VALUES (?, ?)", indexer.rows)
        self._db.execute("COMMIT")

    @classmethod
    def of_log(cls, path: str | Path) -> SearchIndex:
        """Load a session log (never writing it; damage raises ``LogDamage``) and index it."""
        indexer: Indexer = log.load(path, replay=Indexer).replayed
        return cls(indexer)

    def search(self, query: str, limit: int = 20, *, raw: bool = False) -> tuple[list[Hit], int]:
        """The latest ``limit`` matching events in the order they happened, and how many
        matched in all. ``query`` is plain words (all must occur, each taken literally)
        unless ``raw``, when it is FTS5 query syntax; one FTS5 cannot parse raises
        ``ValueError``."""
        match = query if raw else quote_terms(query)
        if not match.strip():
            return [], 0
        try:
            (total,) = self._db.execute("SELECT count(*) FROM idx WHERE idx MATCH ?", (match,)).fetchone()
            found = [seq for (seq,) in self._db.execute(
                "SELECT rowid FROM idx WHERE idx MATCH ? ORDER BY rowid DESC LIMIT ?", (match, limit))][::-1]
            snippets = self._snippets(match, found)
        except sqlite3.OperationalError as exc:
            raise ValueError(f"bad search query {query!r}: {exc}") from None
        types = self._indexer.types
        return [Hit(seq, types[self._indexer.find(seq)], snippets.get(seq, "")) for seq in found], total

    def _snippets(self, match: str, seqs: list[int]) -> dict[int, str]:
        """FTS5's snippets need the text: the matched rows get a small table of their own."""
        if not seqs:
            return {}
        rows = self._indexer.rows
        db = self._db
        db.execute("CREATE VIRTUAL TABLE temp.hits USING fts5(body)")
        try:
            db.executemany("INSERT INTO hits(rowid, body) VALUES (?, ?)",
                           [rows[self._indexer.find(seq)] for seq in seqs])
            return dict(db.execute(
                "SELECT rowid, snippet(hits, 0, '[', ']', '…', ?) FROM hits WHERE hits MATCH ?",
                (SNIPPET_TOKENS, match)))
        finally:
            db.execute("DROP TABLE temp.hits")

    def close(self) -> None:
        self._db.close()


def quote_terms(query: str) -> str:
    """Plain words to an FTS5 query: every word must occur (each one quoted, so that
    ``test_x.py`` or ``--flag`` is a phrase of its tokens, never FTS5 syntax)."""
    return " ".join('"' + word.replace('"', '""') + '"' for word in query.split())
