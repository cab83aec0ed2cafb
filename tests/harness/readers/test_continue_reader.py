"""Continue CLI's session-document reader on the store recorded from Continue CLI 1.5.47
(tests/fixtures/agents/continue-1.5.47/). Continue wrote its document only when a turn
completed (killed or stopped runs left none), so the one recording is ``completed``; the
other shapes are that document edited as Continue's own fields allow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.model import Capability
from harness.readers import READERS, LogDamaged, get_reader
from tests.harness.readers.test_native_readers import FIXTURES, PROMPT, copy_one, signature
from tests.harness.readers.test_native_readers import parse as parse_store

AGENT = FIXTURES / "continue-1.5.47"
READER = get_reader("continue")


def store(tmp_path: Path) -> str:
    return copy_one(AGENT / "completed" / "final", "*.json", tmp_path)


def parse(path: str):
    return parse_store("continue", path)


def edit(path: str, change) -> None:
    doc = json.loads(Path(path).read_text())
    change(doc)
    Path(path).write_text(json.dumps(doc, indent=2))


def test_declarations():
    assert READERS["continue"] is READER and READER is not None
    assert READER.damage_kinds == {"mid-file"}
    assert READER.capabilities == {Capability.FORMAT_RULES}  # no times, no turn ends, not append-only


def test_the_recorded_completed_turn(tmp_path):
    assert READER is not None
    log = parse(store(tmp_path))
    assert signature(log) == "T1 A1 C1 R1 A1"
    assert READER.format_problems(log) == []
    case = json.loads((AGENT / "completed" / "case.json").read_text())
    assert log.header.session_id == case["session_id"]
    assert (log.header.cwd, log.header.model) == ("/tmp/sbrec/continue/work", "fake-model")
    assert log.events[0].get("input") == PROMPT
    call, result = log.of_type("tool_call")[0], log.of_type("tool_result")[0]
    assert call.get("name") == "Bash" and call.get("arguments") == {"command": "echo stopbench-hello"}
    assert result.get("call_id") == call.get("call_id") and "stopbench-hello" in result.get("output")
    assert result.get("aborted") is False
    assert [m.get("text") for m in log.of_type("assistant_message")] == [
        "I will run the check.", "The command printed stopbench-hello. Done."]


def test_a_canceled_tool_state_is_aborted_and_an_unfinished_one_has_no_result(tmp_path):
    path = store(tmp_path)
    edit(path, lambda d: d["history"][1]["toolCallStates"][0].update(status="canceled"))
    assert parse(path).of_type("tool_result")[0].get("aborted") is True
    edit(path, lambda d: d["history"][1]["toolCallStates"][0].update(status="calling"))
    assert parse(path).of_type("tool_result") == []


def test_lost_and_changed(tmp_path):
    assert READER is not None
    path = store(tmp_path)
    before = READER.snapshot(path)
    edit(path, lambda d: d["history"].append({"message": {"role": "user", "content": "more"}, "contextItems": []}))
    grown = READER.snapshot(path)
    assert before is not None and grown is not None
    assert READER.lost(before, grown) is None and READER.changed(before, grown) is not None
    edit(path, lambda d: d["history"][0]["message"].update(content="another question"))
    rewritten = READER.snapshot(path)
    assert rewritten is not None
    change = READER.lost(before, rewritten)
    assert change is not None and change.where == "history item 1"


def test_mid_file_damage_is_refused_naming_the_line(tmp_path):
    assert READER is not None
    path = store(tmp_path)
    damage = READER.damage(path, "mid-file")
    with pytest.raises(LogDamaged) as caught:
        parse(path)
    assert caught.value.path == path and caught.value.line == damage.line


def test_a_document_that_is_no_session_is_refused(tmp_path):
    path = store(tmp_path)
    edit(path, lambda d: d.pop("sessionId"))
    with pytest.raises(LogDamaged, match="not a session document.*Continue CLI 1.5.x"):
        parse(path)
    path = store(tmp_path / "b")
    edit(path, lambda d: d["history"][2]["message"].update(role="robot"))
    with pytest.raises(LogDamaged, match="history item 3 has no message with a known role"):
        parse(path)


def test_a_tool_state_without_its_call_is_a_format_problem(tmp_path):
    assert READER is not None
    path = store(tmp_path)
    edit(path, lambda d: d["history"][1]["toolCallStates"][0].update(toolCallId="call_nowhere"))
    problems = READER.format_problems(parse(path))
    assert len(problems) == 1 and "call_nowhere" in problems[0].note
