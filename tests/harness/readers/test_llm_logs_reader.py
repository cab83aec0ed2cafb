"""The llm reader on logs recorded from llm 0.36 (``tests/fixtures/agents/llm-0.36/<case>/logs.db.sql``,
SQL dumps of the ``logs.db`` of stopbench's own task runs, kept with ``--keep``; ``completed`` is
two turns with a tool call each, the second continued with ``-c``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from harness.readers import LogDamaged, get_reader
from harness.readers.base import capture

from .store_testkit import restore_dump

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents" / "llm-0.36"
ABBR = {"turn_started": "T", "assistant_message": "A", "tool_call": "C", "tool_result": "R"}
EXPECTED = {
    "completed": "T1 A1 C1 R1 A1 T2 A2 C2 R2 A2",
    # Both stopped turns left nothing: only the follow-up is in the log.
    "interrupt-cancel": "T1 A1",
    # Both killed turns left nothing; the first resume (-c) found no conversation and began one.
    "interrupt-restart": "T1 A1 T2 A2",
    # The refused turn left nothing either.
    "exit-codes": "T1 A1",
}
READER = get_reader("llm-logs")


def database(case: str, tmp_path: Path) -> str:
    db = tmp_path / case / "logs.db"
    db.parent.mkdir(parents=True)
    return restore_dump(FIXTURES / case / "logs.db.sql", db)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_recorded_logs_parse_into_canonical_events(case, tmp_path):
    cap = capture(READER, database(case, tmp_path), "final")
    assert cap.error is None and cap.log is not None
    assert " ".join(f"{ABBR[e.type]}{e.turn}" for e in cap.log.events) == EXPECTED[case]
    assert cap.log.header.session_id and all(e.where and cap.log.header.session_id in e.where for e in cap.log.events)
    assert READER.format_problems(cap.log) == []


def test_calls_and_results_pair_up_and_the_thread_is_named(tmp_path):
    db = database("completed", tmp_path)
    log = capture(READER, db, "final").log
    calls, results = log.of_type("tool_call"), log.of_type("tool_result")
    assert [c.get("call_id") for c in calls] == [r.get("call_id") for r in results]
    assert calls[0].get("arguments") == {"command": "ls -la"} and results[0].get("output").startswith("exit status 0")
    named = capture(READER, f"{db}#{log.header.session_id}", "named").log
    assert named.events == log.events
    assert "no thread 'nope'" in capture(READER, f"{db}#nope", "missing").error


def test_a_grown_thread_lost_nothing_and_a_rewritten_message_is_named(tmp_path):
    db = database("completed", tmp_path)
    before = READER.snapshot(db)
    con = sqlite3.connect(db)
    con.execute("insert into messages values ('b2:new', (select tip_message_hash from threads), 'user', null)")
    con.execute("update threads set tip_message_hash = 'b2:new'")
    con.commit()
    grown = READER.snapshot(db)
    assert READER.lost(before, grown) is None and READER.changed(before, grown) is not None
    con.execute("update parts set text = 'rewritten' where id = 1")
    con.commit()
    con.close()
    lost = READER.lost(before, READER.snapshot(db))
    assert lost is not None and lost.where == "table parts, row 1" and "rewritten" in lost.detail


def test_another_schema_and_a_broken_chain_are_refused(tmp_path):
    db = database("completed", tmp_path)
    con = sqlite3.connect(db)
    con.execute("update threads set tip_message_hash = 'b2:missing'")
    con.commit()
    with pytest.raises(LogDamaged, match="message b2:missing is named but not stored"):
        READER.parse(READER.snapshot(db))
    con.execute("insert into _llm_migrations values ('m099_future', '2027-01-01')")
    con.commit()
    con.close()
    with pytest.raises(LogDamaged, match="schema at migration 'm099_future'; this reader was written for llm 0.36"):
        READER.parse(READER.snapshot(db))
