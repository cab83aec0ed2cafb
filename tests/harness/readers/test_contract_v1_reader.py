"""The contract-v1 reader against hand-written logs: good, torn, damaged, gapped, headerless."""

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.model import Capability, LogCapture, Snapshot
from harness.readers import CannotDamage, UnknownReader, capture, get_reader
from harness.readers.contract_v1 import (
    ContractV1Reader,
    LogDamaged,
    complete_prefix,
    event_field_problems,
    read_contract_v1,
)
from tests.harness.checks.observations import Clock, LogBuilder

READER = ContractV1Reader()


def snap(data: bytes, mono_ns: int = 1) -> Snapshot:
    return Snapshot(reader=READER.name, path="s-test.jsonl", data=data, mono_ns=mono_ns)


def two_turn_log() -> LogBuilder:
    log = LogBuilder(Clock())
    log.event("turn_started", turn=1, input="hello", inbox=[])
    log.event("model_request", turn=1, step=1, request={"model": "m", "messages": [], "tools": [], "stream": True})
    log.event("assistant_message", turn=1, step=1, text="hi", tool_calls=[], finish_reason="stop", interrupted=False)
    log.event("step_settled", turn=1, step=1)
    log.event("turn_ended", turn=1, reason="completed")
    return log


def test_reads_header_and_events_with_line_numbers(tmp_path):
    path = tmp_path / "s-test.jsonl"
    path.write_bytes(two_turn_log().to_bytes())
    log = read_contract_v1(path)
    assert log.path == str(path)
    assert log.header.session_id == "s-test" and log.header.model == "stopbench-1"
    assert log.header.adapter == "inproc" and log.header.parent is None
    assert [e.type for e in log.events] == ["turn_started", "model_request", "assistant_message",
                                             "step_settled", "turn_ended"]
    assert [e.line for e in log.events] == [2, 3, 4, 5, 6]
    assert [e.seq for e in log.events] == [1, 2, 3, 4, 5]
    assert log.events[2].get("text") == "hi" and log.events[2].turn == 1
    assert log.events[0].mono_ns < log.events[-1].mono_ns
    assert log.torn_tail is None


def test_torn_last_line_is_kept_not_parsed():
    data = two_turn_log().to_bytes(torn=b'{"seq": 6, "type": "turn_sta')
    log = read_contract_v1(data)
    assert len(log.events) == 5
    assert log.torn_tail == b'{"seq": 6, "type": "turn_sta'
    assert complete_prefix(data) == two_turn_log().to_bytes()


def test_unparsable_last_line_with_newline_is_torn():
    builder = two_turn_log()
    builder.raw(b'{"seq": 6, "ty')
    log = read_contract_v1(builder.to_bytes())
    assert log.torn_tail == b'{"seq": 6, "ty\n'
    assert len(log.events) == 5


def test_damage_before_last_line_names_file_and_line():
    builder = LogBuilder(Clock())
    builder.event("turn_started", turn=1, input="x", inbox=[])
    builder.raw(b"garbage{")
    builder.event("turn_ended", turn=1, reason="completed", seq=2)
    with pytest.raises(LogDamaged) as err:
        read_contract_v1(builder.to_bytes(), path="/s/s-test.jsonl")
    assert err.value.line == 3 and err.value.path == "/s/s-test.jsonl"
    assert str(err.value).startswith("/s/s-test.jsonl:3: unreadable line")


def test_seq_gap_is_damage():
    builder = LogBuilder(Clock())
    builder.event("turn_started", turn=1, input="x", inbox=[])
    builder.event("turn_ended", turn=1, reason="completed", seq=3)
    with pytest.raises(LogDamaged, match=r"<bytes>:3: seq 3 where 2 was expected"):
        read_contract_v1(builder.to_bytes())


@pytest.mark.parametrize("first_line, problem", [
    (b'{"seq": 1, "type": "turn_started", "turn": 1}', "missing header: line 1 is an event"),
    (b'{"format": "contract-log", "version": 2, "session_id": "s", "created": "t", "cwd": "/", "model": "m"}',
     "not a contract-log v1 header"),
    (b'{"format": "contract-log", "version": 1, "created": "t", "cwd": "/", "model": "m"}', "header lacks session_id"),
])
def test_bad_header_is_damage(first_line, problem):
    data = first_line + b"\n" + json.dumps({"seq": 1, "type": "turn_ended", "turn": 1}).encode() + b"\n"
    with pytest.raises(LogDamaged, match=problem) as err:
        read_contract_v1(data)
    assert err.value.line == 1


def test_empty_file_has_no_header():
    with pytest.raises(LogDamaged, match="missing header"):
        read_contract_v1(b"")


def test_unknown_event_type_is_damage():
    builder = LogBuilder(Clock())
    builder.raw(json.dumps({"seq": 1, "type": "turn_paused", "turn": 1}).encode())
    builder.event("turn_ended", turn=1, reason="completed", seq=2)
    with pytest.raises(LogDamaged, match=r":2: unknown event type 'turn_paused'"):
        read_contract_v1(builder.to_bytes())


def test_field_problems_name_the_field():
    builder = LogBuilder(Clock())
    builder.event("tool_result", turn=1, call_id="c1", output="x", exit_code=None, aborted="yes")
    builder.event("torn_tail_dropped", offset=10, dropped=base64.b64encode(b"x").decode())
    log = builder.read()
    assert event_field_problems(log.events[0]) == ["tool_result.aborted is str, not bool"]
    assert event_field_problems(log.events[1]) == []


def test_registry_knows_contract_v1_and_none(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(two_turn_log().to_bytes())
    reader = get_reader("contract-v1")
    assert reader is not None and reader.capabilities == frozenset(Capability)
    snapshot = reader.snapshot(str(path))
    assert snapshot is not None and reader.parse(snapshot).header.session_id == "s-test"
    assert reader.snapshot(str(tmp_path / "missing.jsonl")) is None
    assert get_reader("none") is None
    with pytest.raises(UnknownReader, match="unknown log reader 'no-such-store' .known: .*contract-v1.*none"):
        get_reader("no-such-store")


def test_append_onto_a_torn_line_is_damage_at_that_line():
    torn = b'{"seq": 6, "type": "tool_res'
    appended = two_turn_log().to_bytes(torn=torn) + b'{"seq": 6, "type": "turn_ended", "turn": 1}\n' \
        + b'{"seq": 7, "type": "turn_ended", "turn": 2}\n'
    with pytest.raises(LogDamaged, match=r"s.jsonl:7: unreadable line"):
        read_contract_v1(appended, path="s.jsonl")


def test_settlement_fields_depend_on_the_reason():
    builder = LogBuilder(Clock())
    builder.event("turn_ended", turn=1, reason="error")
    builder.event("turn_ended", turn=2, reason="aborted", source="user")
    builder.event("turn_ended", turn=3, reason="completed")
    log = builder.read()
    assert [event_field_problems(e) for e in log.events] == [["turn_ended lacks error"], [], []]


@given(cut=st.integers(min_value=0, max_value=10_000))
@settings(max_examples=150, deadline=None)
def test_a_log_cut_at_any_byte_reads_as_a_prefix_with_a_torn_tail(cut):
    data = two_turn_log().to_bytes()
    cut = cut % (len(data) + 1)
    header_end = data.index(b"\n") + 1
    if cut < header_end:
        with pytest.raises(LogDamaged, match=":1: missing header"):
            read_contract_v1(data[:cut])
        return
    full = read_contract_v1(data)
    log = read_contract_v1(data[:cut])
    assert log.events == full.events[: len(log.events)]
    kept = complete_prefix(data[:cut])
    assert data.startswith(kept) and kept.endswith(b"\n")
    assert log.torn_tail == (data[len(kept):cut] or None)


def test_capture_parses_or_keeps_the_readers_refusal(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(two_turn_log().to_bytes())
    good = capture(READER, str(path), "after kill 1")
    assert good.moment == "after kill 1" and good.log is not None and good.error is None
    lines = two_turn_log().to_bytes().split(b"\n")
    lines[2] = b"garbage"
    path.write_bytes(b"\n".join(lines))
    bad = capture(READER, str(path), "before restart 1")
    assert bad.log is None and bad.error is not None and ":3: unreadable line" in bad.error
    assert capture(READER, None, "final") == LogCapture(moment="final", snapshot=None)


def test_changed_is_any_difference_and_lost_only_a_complete_line():
    data = two_turn_log().to_bytes()
    assert READER.changed(snap(data), snap(data)) is None
    grown = data + b'{"seq": 6}\n'
    change = READER.changed(snap(data), snap(grown))
    assert change is not None and change.line == 7
    assert READER.lost(snap(data), snap(grown)) is None  # appending keeps every record
    torn = data + b'{"seq": 6, "ty'
    assert READER.lost(snap(torn), snap(data + b'{"seq": 6, "type": "x"}\n')) is None  # a torn tail is not durable
    rewritten = data.replace(b'"hello"', b'"hullo"')
    lost = READER.lost(snap(data), snap(rewritten))
    assert lost is not None and lost.line == 2 and lost.where.startswith("line 2, byte ")


def test_format_problems_and_continuation_problems_are_the_formats_rules():
    builder = LogBuilder(Clock())
    builder.event("turn_ended", turn=1, reason="error")
    problems = READER.format_problems(builder.read())
    assert [(p.note, p.line) for p in problems] == [("turn_ended lacks error", 2)]
    clean = two_turn_log().to_bytes()
    torn = b'{"seq": 6, "type": "tool_res'
    before = LogCapture("before restart 1", snap(clean + torn), read_contract_v1(clean + torn))
    cut = two_turn_log()
    cut.event("torn_tail_dropped", offset=len(clean), dropped=base64.b64encode(torn).decode())
    assert READER.continuation_problems(before, cut.read()) == []
    uncut = two_turn_log()
    uncut.event("turn_started", turn=2, input="again", inbox=[])
    [problem] = READER.continuation_problems(before, uncut.read())
    assert "without a torn_tail_dropped event first" in problem.note and problem.line == 7


def test_damage_is_the_formats_own(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(two_turn_log().to_bytes())
    torn = READER.damage(str(path), "torn-tail")
    assert torn.kind == "torn-tail" and torn.line == 7
    assert read_contract_v1(path).torn_tail is not None
    path.write_bytes(two_turn_log().to_bytes())
    mid = READER.damage(str(path), "mid-file")
    with pytest.raises(LogDamaged) as err:
        read_contract_v1(path)
    assert err.value.line == mid.line and mid.where == f"line {mid.line}"
    with pytest.raises(CannotDamage):
        READER.damage(str(path), "bit-rot")
