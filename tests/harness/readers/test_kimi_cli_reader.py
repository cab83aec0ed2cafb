"""The kimi-cli reader on stores recorded from kimi-cli 1.51.0 through stopbench's own tasks
(``tests/fixtures/agents/kimi-cli-1.51.0/<task>/<session id>/wire.jsonl``, kept with ``--keep``):
a Stop in a tool and mid-stream, kills in a tool and mid-stream with restarts, a provider 400."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.model import Capability
from harness.readers import LogDamaged, get_reader
from harness.readers.base import capture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents" / "kimi-cli-1.51.0"
ABBR = {"turn_started": "T", "assistant_message": "A", "tool_call": "C", "tool_result": "R", "turn_ended": "E"}
EXPECTED = {
    # Stop inside the window (no result for the call), Stop mid-stream (the part received kept), a follow-up.
    "interrupt-cancel": "T1 A1 C1 E1 T2 A2 E2 T3 A3 E3",
    # Killed inside the window (both calls ran at once: the quick one has its result), no turn end;
    # killed mid-stream before any part was written; each restart a new turn on the same log.
    "interrupt-restart": "T1 A1 C1 C1 R1 T2 A2 E2 T3 T4 A4 E4",
    # A completed turn; a turn the provider refused: no text, a turn end all the same.
    "exit-codes": "T1 A1 E1 T2 E2",
}
READER = get_reader("kimi-cli")


def store(task: str) -> Path:
    [path] = FIXTURES.glob(f"{task}/*/wire.jsonl")
    return path


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_recorded_stores_parse_into_canonical_events(task):
    cap = capture(READER, str(store(task)), "final")
    assert cap.error is None and cap.log is not None
    assert " ".join(f"{ABBR[e.type]}{e.turn}" for e in cap.log.events) == EXPECTED[task]
    assert cap.log.header.session_id == store(task).parent.name
    assert all(e.mono_ns is not None for e in cap.log.events)  # epoch seconds land on the harness's clock
    assert READER.format_problems(cap.log) == []


def test_what_a_stop_leaves_is_read_as_written():
    log = capture(READER, str(store("interrupt-cancel")), "final").log
    assert [e.get("reason") for e in log.of_type("turn_ended")] == [None, None, None]  # TurnEnd says no reason
    [call] = log.of_type("tool_call")
    assert call.get("name") == "Shell" and "fake_server.window" in call.get("arguments")["command"]
    assert not log.of_type("tool_result")  # the stopped call got no result at all
    assert log.of_type("assistant_message")[1].get("text") == "Here is the report, sect"
    # none of it is claimed: checks that need it answer unknown, naming the capability
    for missing in (Capability.TURN_ENDS, Capability.TOOL_ABORTS, Capability.INTERRUPTED_TEXT,
                    Capability.TOOL_STARTS, Capability.REQUESTS):
        assert missing not in READER.capabilities


def test_a_torn_last_line_is_kept_apart_and_damage_before_it_is_refused(tmp_path):
    data = store("exit-codes").read_bytes()
    torn = tmp_path / "s1" / "wire.jsonl"
    torn.parent.mkdir()
    torn.write_bytes(data + READER.torn_fragment)
    cap = capture(READER, str(torn), "torn")
    assert cap.error is None and cap.log.torn_tail == READER.torn_fragment
    lines = data.split(b"\n")
    lines[3] = b'{"timestamp": 1, "mess'  # a record cut short, then a new line: a restart left it
    torn.write_bytes(b"\n".join(lines))
    assert capture(READER, str(torn), "left").log.cut_records == ((4, lines[3]),)
    lines[3] = b'{"timestamp": 1, \x00 "mess'  # bytes no record starts with: damage
    torn.write_bytes(b"\n".join(lines))
    assert "wire.jsonl:4: unreadable line" in capture(READER, str(torn), "damaged").error


def test_another_protocol_or_no_metadata_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "s1" / "wire.jsonl"
    path.parent.mkdir()
    path.write_text('{"type": "metadata", "protocol_version": "2.0"}\n', encoding="utf-8")
    with pytest.raises(LogDamaged, match="wire protocol 2.0; this reader was written for kimi-cli 1.51.x"):
        READER.parse(READER.snapshot(str(path)))
    path.write_text('{"timestamp": 1.0, "message": {"type": "TurnBegin", "payload": {"user_input": "x"}}}\n',
                    encoding="utf-8")
    with pytest.raises(LogDamaged, match=r"wire.jsonl:1: line 1 is not the metadata line"):
        READER.parse(READER.snapshot(str(path)))


def test_a_result_for_no_call_breaks_its_format_rules(tmp_path):
    path = tmp_path / "s1" / "wire.jsonl"
    path.parent.mkdir()
    path.write_text('{"type": "metadata", "protocol_version": "1.10"}\n'
                    '{"timestamp": 1.0, "message": {"type": "TurnBegin", "payload": {"user_input": "x"}}}\n'
                    '{"timestamp": 2.0, "message": {"type": "ToolResult", "payload": {"tool_call_id": "c9", '
                    '"return_value": {"is_error": false, "output": "ok"}}}}\n', encoding="utf-8")
    log = READER.parse(READER.snapshot(str(path)))
    [problem] = READER.format_problems(log)
    assert "tool result for c9 answers no earlier call" in problem.note and problem.line == 3
