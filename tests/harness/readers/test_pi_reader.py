"""pi's session reader on stores recorded from pi 0.73.1 (tests/fixtures/agents/pi-0.73.1/).

pi writes its session only once the first assistant message exists: the recording killed
mid-stream (``kill-stream``) left no file, so that case has no store to read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.model import Capability
from harness.readers import READERS, LogDamaged, get_reader
from tests.harness.readers.test_native_readers import FIXTURES, FOLLOW_UP, PROMPT, copy_one, signature
from tests.harness.readers.test_native_readers import parse as parse_store

AGENT = FIXTURES / "pi-0.73.1"
EXPECTED = {
    ("completed", "final"): "T1 A1 C1 R1 A1",
    ("kill-tool", "killed"): "T1 A1 C1",
    ("kill-tool", "resumed"): "T1 A1 C1 T2 A2",
    ("stop-tool", "stopped"): "T1 A1 C1",
    ("stop-tool", "resumed"): "T1 A1 C1 T2 A2",
}
READER = get_reader("pi")


def store(case: str, phase: str, tmp_path: Path) -> str:
    return copy_one(AGENT / case / phase, "*.jsonl", tmp_path)


def parse(path: str):
    return parse_store("pi", path)


def test_declarations():
    assert READERS["pi"] is READER and READER is not None
    assert READER.damage_kinds == {"torn-tail", "mid-file"}
    assert {Capability.APPEND_ONLY, Capability.MONO_TIMES, Capability.FORMAT_RULES} <= READER.capabilities
    for missing in (Capability.TURN_ENDS, Capability.STOP_REQUESTS, Capability.REQUESTS, Capability.TOOL_STARTS):
        assert missing not in READER.capabilities


@pytest.mark.parametrize("key", sorted(EXPECTED), ids=lambda k: "-".join(k))
def test_events_of_every_recording(key, tmp_path):
    assert READER is not None
    case, phase = key
    log = parse(store(case, phase, tmp_path))
    assert signature(log) == EXPECTED[key]
    assert READER.format_problems(log) == []
    assert log.header.session_id == json.loads((AGENT / case / "case.json").read_text())["session_id"]
    assert log.header.cwd == "/tmp/sbrec/pi/work"
    assert (log.header.model, log.header.adapter) == ("fake-model", "chat")
    assert log.events[0].get("input") == PROMPT
    assert all(e.mono_ns is not None for e in log.events)


def test_completed_turn_content(tmp_path):
    log = parse(store("completed", "final", tmp_path))
    call, result = log.of_type("tool_call")[0], log.of_type("tool_result")[0]
    assert call.get("name") == "bash" and call.get("arguments") == {"command": "echo stopbench-hello"}
    assert result.get("call_id") == call.get("call_id") and result.get("output") == "stopbench-hello\n"
    assert result.get("aborted") is False and result.get("is_error") is False
    messages = log.of_type("assistant_message")
    assert [m.get("text") for m in messages] == ["I will run the check.", "The command printed stopbench-hello. Done."]
    assert [m.get("finish_reason") for m in messages] == ["toolUse", "stop"]
    assert messages[0].get("tool_calls")[0]["id"] == call.get("call_id")
    assert log.of_type("turn_ended") == []  # pi records no turn end: none is invented


def test_a_resume_keeps_the_unanswered_call_and_appends(tmp_path):
    assert READER is not None
    before = READER.snapshot(store("kill-tool", "killed", tmp_path / "a"))
    after_path = store("kill-tool", "resumed", tmp_path / "b")
    after = READER.snapshot(after_path)
    assert before is not None and after is not None
    assert READER.lost(before, after) is None and READER.changed(before, after) is not None
    log = parse(after_path)
    assert log.of_type("tool_result") == []  # the killed call got no result, then or on resume
    assert log.of_type("turn_started")[1].get("input") == FOLLOW_UP


def test_aborted_command_is_marked(tmp_path):
    path = store("completed", "final", tmp_path)
    lines = Path(path).read_text().splitlines()
    entry = json.loads(lines[5])
    entry["message"].update(isError=True, content=[{"type": "text", "text": "partial\n\nCommand aborted"}])
    lines[5] = json.dumps(entry)
    Path(path).write_text("\n".join(lines) + "\n")
    result = parse(path).of_type("tool_result")[0]
    assert result.get("aborted") is True and result.get("is_error") is True


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


def test_unknown_version_and_missing_header_are_refused(tmp_path):
    path = store("completed", "final", tmp_path / "a")
    Path(path).write_bytes(Path(path).read_bytes().replace(b'"version":3', b'"version":4', 1))
    with pytest.raises(LogDamaged, match="version 4.*pi 0.73.x"):
        parse(path)
    path = store("completed", "final", tmp_path / "b")
    Path(path).write_text("\n".join(Path(path).read_text().splitlines()[1:]) + "\n")
    with pytest.raises(LogDamaged, match=":1: the first line is not a session header"):
        parse(path)


def test_a_broken_chain_is_a_format_problem(tmp_path):
    assert READER is not None
    path = store("completed", "final", tmp_path)
    lines = Path(path).read_text().splitlines()
    entry = json.loads(lines[4])
    entry["parentId"] = "deadbeef"
    lines[4] = json.dumps(entry)
    Path(path).write_text("\n".join(lines) + "\n")
    problems = READER.format_problems(parse(path))
    assert [p.line for p in problems] == [5] and "deadbeef" in problems[0].note


def test_responses_call_ids_are_the_wires(tmp_path):
    """On the Responses wire pi keeps ``<call_id>|<item id>``: the events carry the wire's id."""
    path = store("completed", "final", tmp_path)
    data = Path(path).read_bytes().replace(b'"call_b3a072000001"', b'"call_b3a072000001|fc_b3a072000004"')
    Path(path).write_bytes(data)
    log = parse(path)
    call, result = log.of_type("tool_call")[0], log.of_type("tool_result")[0]
    assert call.get("call_id") == result.get("call_id") == "call_b3a072000001"
    assert call.get("native_id") == "call_b3a072000001|fc_b3a072000004"
    assert log.of_type("assistant_message")[0].get("tool_calls")[0]["id"] == "call_b3a072000001"
