"""Copilot CLI's events reader on stores recorded from Copilot CLI 1.0.102
(tests/fixtures/agents/copilot-1.0.102/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.model import Capability
from harness.readers import READERS, LogDamaged, get_reader
from tests.harness.readers.test_native_readers import FIXTURES, FOLLOW_UP, PROMPT, copy_one, signature
from tests.harness.readers.test_native_readers import parse as parse_store

AGENT = FIXTURES / "copilot-1.0.102"
EXPECTED = {
    ("completed", "final"): "T1 A1 C1 S1 R1 A1",
    ("kill-stream", "killed"): "T1",
    ("kill-stream", "resumed"): "T1 T2 A2",
    ("kill-tool", "killed"): "T1 A1 C1 S1",
    ("kill-tool", "resumed"): "T1 A1 C1 S1 R1 T2 A2",
    ("stop-tool", "stopped"): "T1 A1 C1 S1 Q1",
    ("stop-tool", "resumed"): "T1 A1 C1 S1 Q1 T2 A2",
}
READER = get_reader("copilot")


def store(case: str, phase: str, tmp_path: Path) -> str:
    return copy_one(AGENT / case / phase, "events.jsonl", tmp_path)


def parse(path: str):
    return parse_store("copilot", path)


def test_declarations():
    assert READERS["copilot"] is READER and READER is not None
    assert READER.damage_kinds == {"torn-tail", "mid-file"}
    assert {Capability.TOOL_STARTS, Capability.STOP_REQUESTS, Capability.APPEND_ONLY} <= READER.capabilities
    for missing in (Capability.TURN_ENDS, Capability.REQUESTS, Capability.TOOL_ABORTS, Capability.INTERRUPTED_TEXT):
        assert missing not in READER.capabilities


@pytest.mark.parametrize("key", sorted(EXPECTED), ids=lambda k: "-".join(k))
def test_events_of_every_recording(key, tmp_path):
    assert READER is not None
    case, phase = key
    log = parse(store(case, phase, tmp_path))
    assert signature(log) == EXPECTED[key]
    assert READER.format_problems(log) == []
    assert log.header.session_id == json.loads((AGENT / case / "case.json").read_text())["session_id"]
    assert (log.header.cwd, log.header.model) == ("/tmp/sbrec/copilot/work", "fake-model")
    first = log.events[0]
    assert first.get("typed") in (PROMPT, "Explain, at length, what this folder is for.")
    assert first.get("input").startswith("<current_datetime>") and first.get("input").endswith(first.get("typed"))
    assert all(e.mono_ns is not None for e in log.events)


def test_completed_turn_content(tmp_path):
    log = parse(store("completed", "final", tmp_path))
    call, started, result = (log.of_type(k)[0] for k in ("tool_call", "tool_started", "tool_result"))
    assert call.get("name") == "bash" and call.get("arguments")["command"] == "echo stopbench-hello"
    assert call.get("call_id") == started.get("call_id") == result.get("call_id")
    assert result.get("output").startswith("stopbench-hello\n") and result.get("exit_code") == 0
    assert result.get("aborted") is False and result.get("is_error") is False
    assert [m.get("text") for m in log.of_type("assistant_message")] == [
        "I will run the check.", "The command printed stopbench-hello. Done."]
    assert log.of_type("turn_ended") == []  # no event says a user's turn ended: none is invented


def test_stop_is_recorded_and_a_resume_repairs_a_killed_call(tmp_path):
    stopped = parse(store("stop-tool", "stopped", tmp_path / "a"))
    [stop] = stopped.of_type("stop_requested")
    assert (stop.get("source"), stop.get("native_reason")) == ("user", "user_abort")
    assert stopped.of_type("tool_result") == []  # the stopped call got no completion
    resumed = parse(store("kill-tool", "resumed", tmp_path / "b"))
    [repair] = resumed.of_type("tool_result")
    assert repair.get("call_id") == resumed.of_type("tool_call")[0].get("call_id")
    assert repair.get("aborted") is True and repair.get("error_code") == "interrupted"
    assert repair.get("output").startswith("Tool execution was interrupted before a result was recorded")
    assert resumed.of_type("turn_started")[1].get("typed") == FOLLOW_UP


@pytest.mark.parametrize("case,first", [("kill-tool", "killed"), ("kill-stream", "killed"), ("stop-tool", "stopped")])
def test_resume_keeps_every_durable_record(case, first, tmp_path):
    assert READER is not None
    before = READER.snapshot(store(case, first, tmp_path / "before"))
    after = READER.snapshot(store(case, "resumed", tmp_path / "after"))
    assert before is not None and after is not None
    assert READER.lost(before, after) is None and READER.changed(before, after) is not None


def test_torn_tail_and_mid_file_damage(tmp_path):
    assert READER is not None
    path = store("completed", "final", tmp_path / "a")
    intact = signature(parse(path))
    READER.damage(path, "torn-tail")
    torn = parse(path)
    assert torn.torn_tail == READER.torn_fragment and signature(torn) == intact
    path = store("completed", "final", tmp_path / "b")
    damage = READER.damage(path, "mid-file")
    with pytest.raises(LogDamaged) as caught:
        parse(path)
    assert caught.value.line == damage.line and f"{path}:{damage.line}:" in str(caught.value)


def test_unknown_version_and_missing_start_are_refused(tmp_path):
    path = store("completed", "final", tmp_path / "a")
    Path(path).write_bytes(Path(path).read_bytes().replace(b'"copilotVersion":"1.0.102"',
                                                           b'"copilotVersion":"2.3.0"', 1))
    with pytest.raises(LogDamaged, match="Copilot CLI 2.3.0.*Copilot CLI 1.0.x"):
        parse(path)
    path = store("completed", "final", tmp_path / "b")
    Path(path).write_text("\n".join(Path(path).read_text().splitlines()[1:]) + "\n")
    with pytest.raises(LogDamaged, match=":1: the first event is .*not session.start"):
        parse(path)


def test_a_broken_chain_is_a_format_problem(tmp_path):
    assert READER is not None
    path = store("completed", "final", tmp_path)
    lines = Path(path).read_text().splitlines()
    event = json.loads(lines[3])
    event["parentId"] = "not-the-one-before"
    lines[3] = json.dumps(event)
    Path(path).write_text("\n".join(lines) + "\n")
    problems = READER.format_problems(parse(path))
    assert [p.line for p in problems] == [4] and "not-the-one-before" in problems[0].note
