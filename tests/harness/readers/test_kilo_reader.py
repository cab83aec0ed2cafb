"""Kilo CLI's reader — opencode's, parametrised — on stores recorded from Kilo CLI 7.7.7
(tests/fixtures/agents/kilo-7.7.7/, kept as SQL dumps and rebuilt here)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harness.readers import READERS, LogDamaged, get_reader
from tests.harness.readers.test_native_readers import FIXTURES, FOLLOW_UP, PROMPT, signature
from tests.harness.readers.test_native_readers import parse as parse_store

from .store_testkit import restore_dump

AGENT = FIXTURES / "kilo-7.7.7"
EXPECTED = {
    ("completed", "final"): "T1 A1 C1 S1 R1 P1 A1 P1 E1",
    ("kill-stream", "killed"): "T1 A1",
    ("kill-stream", "resumed"): "T1 A1 T2 A2 P2 E2",
    ("kill-tool", "killed"): "T1 A1",  # the running tool's part was not in the store at the kill
    ("kill-tool", "resumed"): "T1 T2 A2 P2 E2",
    ("stop-tool", "stopped"): "T1 A1 C1 S1",
    ("stop-tool", "resumed"): "T1 A1 C1 S1 T2 A2 P2 E2",
}
READER = get_reader("kilo")


def store(case: str, phase: str, tmp_path: Path) -> str:
    [dump] = (AGENT / case / phase).rglob("*.db.sql")
    tmp_path.mkdir(parents=True, exist_ok=True)
    return restore_dump(dump, tmp_path / "kilo.db")


def parse(path: str):
    return parse_store("kilo", path)


def test_it_is_opencodes_reader_with_kilos_names():
    assert READERS["kilo"] is READER and READER is not None
    opencode = READERS["opencode"]
    assert type(READER).__mro__[1] is type(opencode)
    assert READER.capabilities == opencode.capabilities and READER.damage_kinds == opencode.damage_kinds
    assert READER.agent_versions == "Kilo CLI 7.7.x"


@pytest.mark.parametrize("key", sorted(EXPECTED), ids=lambda k: "-".join(k))
def test_events_of_every_recording(key, tmp_path):
    assert READER is not None
    log = parse(store(*key, tmp_path))
    assert signature(log) == EXPECTED[key]
    assert READER.format_problems(log) == []
    assert log.header.session_id == json.loads((AGENT / key[0] / "case.json").read_text())["session_id"]
    assert log.header.cwd == "/tmp/sbrec/kilo/work" and log.header.model == "fake-model"
    assert log.events[0].get("input").strip('"') in (PROMPT, "Explain, at length, what this folder is for.")


def test_completed_turn_content(tmp_path):
    log = parse(store("completed", "final", tmp_path))
    call, result = log.of_type("tool_call")[0], log.of_type("tool_result")[0]
    assert result.get("call_id") == call.get("call_id") and "stopbench-hello" in result.get("output")
    assert [m.get("text") for m in log.of_type("assistant_message")] == [
        "I will run the check.", "The command printed stopbench-hello. Done."]
    assert [e.get("reason") for e in log.of_type("turn_ended")] == ["completed"]


def test_a_resume_after_a_kill_mid_tool_drops_the_killed_step(tmp_path):
    """What Kilo did: the step killed mid-tool is gone from the store once it resumed."""
    assert READER is not None
    before = READER.snapshot(store("kill-tool", "killed", tmp_path / "a"))
    after_path = store("kill-tool", "resumed", tmp_path / "b")
    after = READER.snapshot(after_path)
    assert before is not None and after is not None
    change = READER.lost(before, after)
    assert change is not None and "message" in change.where and "is gone" in change.detail
    assert parse(after_path).of_type("turn_started")[1].get("input").strip('"') == FOLLOW_UP


def test_unknown_schema_names_kilo(tmp_path):
    path = store("completed", "final", tmp_path)
    con = sqlite3.connect(path)
    con.execute("insert into migration (id, time_completed) values ('20290101000000_future', 0)")
    con.commit()
    con.close()
    with pytest.raises(LogDamaged, match="20290101000000_future.*Kilo CLI 7.7.x"):
        parse(path)
    con = sqlite3.connect(path)
    con.execute("delete from migration where id = '20290101000000_future'")
    con.execute("update session set version = '8.0.0'")
    con.commit()
    con.close()
    with pytest.raises(LogDamaged, match="written by Kilo CLI 8.0.0.*Kilo CLI 7.7.x"):
        parse(path)
