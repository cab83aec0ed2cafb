"""The session log: append, torn tail, mid-file damage, loading never writes, fork."""

from __future__ import annotations

import base64
import json

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_agent.api import fork, load_session, replay
from reference_agent.cli import main
from reference_agent.log import CHUNK_BYTES, LogDamage, LogWriter, load

HEADER = {"format": "contract-log", "version": 1, "session_id": "s-test", "created": "2026-11-29T00:00:00.000000Z",
          "cwd": "/tmp", "model": "m", "adapter": "inproc", "parent": None}


def make_log(tmp_path, n_turns=2, name="s-test"):
    path = tmp_path / f"{name}.jsonl"
    w = LogWriter.create(path, dict(HEADER, session_id=name))
    for t in range(1, n_turns + 1):
        w.append("turn_started", turn=t, input=f"question {t}", inbox=[])
        w.append("assistant_message", turn=t, step=1, text=f"answer {t}", tool_calls=[], finish_reason="stop", interrupted=False)
        w.append("turn_ended", turn=t, reason="completed")
    w.checkpoint()
    w.close()
    return path


def test_events_are_contiguous_and_stamped(tmp_path):
    path = make_log(tmp_path)
    loaded = load(path)
    assert loaded.header["session_id"] == "s-test"
    assert [e["seq"] for e in loaded.events] == list(range(1, 7))
    monos = [e["mono_ns"] for e in loaded.events]
    assert monos == sorted(monos)
    assert all(e["time"].endswith("Z") for e in loaded.events)
    assert loaded.torn is None


@pytest.mark.parametrize("tail", [b'{"seq": 7, "ty', b'{"seq": 7, "ty\n', b"garbage\n"])
def test_torn_tail_is_tolerated_and_loading_never_writes(tmp_path, tail):
    path = make_log(tmp_path)
    good = path.read_bytes()
    path.write_bytes(good + tail)
    before = path.read_bytes()
    loaded = load(path)
    assert path.read_bytes() == before
    assert loaded.torn is not None and loaded.torn.offset == len(good)
    assert len(loaded.events) == 6


def test_first_append_cuts_the_torn_line_and_records_it(tmp_path):
    path = make_log(tmp_path)
    good = path.read_bytes()
    path.write_bytes(good + b'{"seq": 7, "type": "turn_sta')
    w = LogWriter.reopen(load(path))
    w.append("turn_started", turn=3, input="again", inbox=[])
    w.close()
    data = path.read_bytes()
    assert data.startswith(good), "earlier lines changed"
    assert data.endswith(b"\n")
    events = load(path).events
    dropped = events[6]
    assert dropped["type"] == "torn_tail_dropped" and dropped["seq"] == 7
    assert dropped["offset"] == len(good)
    assert base64.b64decode(dropped["dropped"]) == b'{"seq": 7, "type": "turn_sta'
    assert events[7]["type"] == "turn_started" and events[7]["seq"] == 8


@pytest.mark.parametrize(
    "damage, line, problem",
    [
        (lambda lines: lines.__setitem__(3, b'{"seq": 3, "ty'), 4, "not a JSON object"),
        (lambda lines: lines.__setitem__(2, lines[2].replace(b'"seq":2', b'"seq":9')), 3, "seq 9 where 2"),
        (lambda lines: lines.__setitem__(0, b'{"format": "other"}'), 1, "not a contract-log v1 header"),
        (lambda lines: lines.insert(2, b""), 3, "not a JSON object"),
    ],
)
def test_damage_before_the_last_line_is_refused_naming_file_and_line(tmp_path, damage, line, problem):
    path = make_log(tmp_path)
    lines = path.read_bytes().split(b"\n")
    damage(lines)
    path.write_bytes(b"\n".join(lines))
    before = path.read_bytes()
    with pytest.raises(LogDamage) as err:
        load(path)
    assert err.value.line == line and problem in err.value.problem
    assert str(path) in str(err.value)
    assert path.read_bytes() == before


def _event_line(seq: int, text: str = "x") -> bytes:
    return b'{"seq":%d,"time":"t","mono_ns":1,"type":"note","text":"%s","inner":{"k":[1]}}' % (seq, text.encode())


def _reference_load(data: bytes) -> list[dict] | int:
    """What a line-by-line reader of contract-log v1 makes of a body: the events, or the
    number of the first damaged line (the loader's fast path must agree with it)."""
    lines = data.split(b"\n")
    body, tail = lines[1:-1], lines[-1]
    events = []
    for i, raw in enumerate(body):
        try:
            event = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            event = None
        if not isinstance(event, dict):
            if i == len(body) - 1 and not tail:
                break  # a terminated but unreadable last line is a torn tail
            return i + 2
        events.append(event)
    for i, event in enumerate(events, start=1):
        if event.get("seq") != i or not isinstance(event.get("type"), str):
            return i + 1
    return events


# Ways a line can deviate from what the writer writes; each keeps the seqs contiguous, so
# only the reading of lines can tell the good from the damaged.
LINE_KINDS = ["plain", "crlf", "padded", "blank", "spaces", "two_values", "two_values_spaced", "split", "garbage"]


def _body_of(kinds: list[str]) -> bytes:
    lines, seq = [], 0
    for kind in kinds:
        if kind in ("blank", "spaces", "garbage"):
            lines.append({"blank": b"", "spaces": b" \t ", "garbage": b"{nope"}[kind])
            continue
        seq += 1
        if kind == "two_values" or kind == "two_values_spaced":
            seq += 1
            lines.append(_event_line(seq - 1) + (b" " if kind == "two_values_spaced" else b"") + _event_line(seq))
        elif kind == "split":  # one object across two lines, split where a newline is only whitespace
            line = _event_line(seq)
            lines += [line[:-1], line[-1:]]
        else:
            line = _event_line(seq)
            lines.append({"plain": line, "crlf": line + b"\r", "padded": b" " + line + b"  "}[kind])
    header = json.dumps(HEADER, separators=(",", ":")).encode()
    return b"\n".join([header, *lines]) + b"\n"


@pytest.mark.slow(reason="hypothesis: many logs written and loaded")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(LINE_KINDS), max_size=8), torn=st.sampled_from([b"", b'{"seq": 99, "ty']))
def test_loading_agrees_with_a_line_by_line_reader(tmp_path, kinds, torn):
    """The fast path (a stream decoder over 64 KiB chunks) never accepts a log a
    line-by-line reading refuses, and reads the same events from every log it accepts:
    a blank line, two values on one line, one value over two lines, or both at once (so
    that the count of values still equals the count of lines) are damage at that line;
    CRLF and padded lines are read as the slow path reads them."""
    data = _body_of(kinds) + torn
    path = tmp_path / "s-prop.jsonl"
    path.write_bytes(data)
    expected = _reference_load(data)
    if isinstance(expected, int):
        with pytest.raises(LogDamage) as err:
            load(path)
        assert err.value.line == expected
    else:
        assert load(path).events == expected
    assert path.read_bytes() == data


def test_a_value_over_two_lines_with_two_values_on_another_is_damage_though_the_counts_agree(tmp_path):
    path = tmp_path / "s-prop.jsonl"
    path.write_bytes(_body_of(["plain", "split", "two_values", "plain"]))
    with pytest.raises(LogDamage) as err:
        load(path)
    assert err.value.line == 3 and "not a JSON object" in err.value.problem


def test_a_log_larger_than_a_chunk_replays_to_the_same_state_as_event_by_event(tmp_path):
    path = make_log(tmp_path, n_turns=1500)  # ~300 KB: several chunks of the fast path
    assert path.stat().st_size > 4 * CHUNK_BYTES
    loaded, state = load_session(path)
    assert loaded.events == [] and loaded.last_event["seq"] == 4500
    again = replay(load(path))
    assert state.history.messages() == again.history.messages()
    assert state.endings == again.endings and state.last_turn == again.last_turn == 1500


def _busy_log(tmp_path, n_turns=600, odd_turn=None, **damage):
    """Turns with a tagged bash call, queued input and an unknown event type at
    ``odd_turn``; ``damage`` replaces fields of turn ``n_turns // 2``'s tool_result."""
    path = tmp_path / "s-busy.jsonl"
    w = LogWriter.create(path, dict(HEADER, session_id="s-busy"))
    for t in range(1, n_turns + 1):
        if t > 1:
            w.append("inbox_delivered", item_id=f"q{t - 1}", turn=t)
        w.append("turn_started", turn=t, input=f"question {t}", inbox=[f"q{t - 1}"] if t > 1 else [])
        w.append("model_request", turn=t, step=1, request={"model": "m", "stream": True})
        call = {"id": f"c{t}", "name": "bash", "arguments": '{"command": "ls"}'}
        w.append("assistant_message", turn=t, step=1, text=f"running {t}", tool_calls=[call],
                 finish_reason="tool_calls", interrupted=False)
        w.append("tool_call", turn=t, step=1, call_id=f"c{t}", name="bash", arguments={"command": "ls"})
        w.append("tool_started", turn=t, call_id=f"c{t}", pid=1, pgid=1, tag=f"tag-{t}")
        if t == odd_turn:
            w.append("a_later_format_note", turn=t, text="not in v1")
        if t < n_turns:  # the last call is left running, its result never written
            result = dict(turn=t, call_id=f"c{t}", output=f"out {t}", exit_code=0, aborted=False)
            if t == n_turns // 2:
                result.update(damage)
                result = {k: v for k, v in result.items() if v is not None}
            w.append("tool_result", **result)
        w.append("inbox_queued", item_id=f"q{t}", text=f"then {t}")
        w.append("step_settled", turn=t, step=1)
        if t < n_turns:
            w.append("turn_ended", turn=t, reason="completed")
    w.close()
    assert path.stat().st_size > 4 * CHUNK_BYTES
    return path


@pytest.mark.parametrize("odd_turn", [None, 300])
def test_the_resume_reads_only_its_fields_and_builds_the_same_state_as_from_whole_events(tmp_path, odd_turn):
    """The resume decodes lines to the fields its handlers read (an unknown type sends its
    chunk through the dict check instead); the state is the one whole events build."""
    loaded, state = load_session(_busy_log(tmp_path, odd_turn=odd_turn))
    again = replay(load(loaded.path))
    assert state.history.messages() == again.history.messages()
    assert (state.endings, state.repaired, state.running_tags) == (again.endings, again.repaired, again.running_tags)
    assert state.running_tags == {"c600": "tag-600"} and state.repaired == {600}
    assert [(i.item_id, i.status) for i in state.pending_inbox()] == [("q600", "queued")]
    assert loaded.last_event == load(loaded.path).events[-1]


def test_an_event_lacking_what_the_state_needs_is_damage_at_its_line(tmp_path):
    path = _busy_log(tmp_path, output=None)
    line = next(i for i, raw in enumerate(path.read_bytes().split(b"\n"), start=1)
                if b'"call_id":"c300"' in raw and b"tool_result" in raw)
    with pytest.raises(LogDamage) as err:
        load_session(path)
    assert err.value.line == line and "a tool_result event the agent cannot use" in err.value.problem
    assert "output" in err.value.problem
    load(path)  # the log itself is whole: only the state cannot use that event


def test_a_turn_that_cannot_key_its_ending_is_damage_at_its_line_not_a_crash_at_repair(tmp_path):
    path = tmp_path / "s-test.jsonl"
    w = LogWriter.create(path, HEADER)
    w.append("turn_started", turn=[1], input="x", inbox=[])  # left open: the resume would repair it
    w.close()
    with pytest.raises(LogDamage) as err:
        load_session(path)
    assert err.value.line == 2 and "a turn_started event the agent cannot use" in err.value.problem


def test_resume_of_a_damaged_log_exits_2_and_leaves_it_untouched(tmp_path, capsys):
    path = make_log(tmp_path)
    lines = path.read_bytes().split(b"\n")
    lines[2] = b"{broken"
    path.write_bytes(b"\n".join(lines))
    before = path.read_bytes()
    scenario = tmp_path / "sc.toml"
    scenario.write_text('name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "hi"\n')
    code = main(["run", "--adapter", "inproc", "--scenario", str(scenario), "--sessions-dir", str(tmp_path),
                 "--resume", "s-test", "follow-up"])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{path}:3" in err and "damaged" in err
    assert path.read_bytes() == before


def test_resume_of_an_unknown_session_exits_2(tmp_path, capsys):
    scenario = tmp_path / "sc.toml"
    scenario.write_text('name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "hi"\n')
    code = main(["run", "--adapter", "inproc", "--scenario", str(scenario), "--sessions-dir", str(tmp_path),
                 "--resume", "s-nope", "q"])
    assert code == 2 and "no session 's-nope'" in capsys.readouterr().err
    assert list(tmp_path.glob("*.jsonl")) == []


def test_replay_repairs_an_open_turn_in_memory_only(tmp_path):
    path = make_log(tmp_path, n_turns=1)
    w = LogWriter.reopen(load(path))
    w.append("turn_started", turn=2, input="run it", inbox=[])
    w.append("assistant_message", turn=2, step=1, text="ok", finish_reason="tool_calls", interrupted=False,
             tool_calls=[{"id": "a", "name": "bash", "arguments": '{"command": "make"}'},
                         {"id": "b", "name": "bash", "arguments": '{"command": "ls"}'}])
    w.append("tool_call", turn=2, step=1, call_id="a", name="bash", arguments={"command": "make"})
    w.close()
    before = path.read_bytes()
    state = replay(load(path))
    assert path.read_bytes() == before
    assert state.endings[2] == "interrupted" and state.repaired == {2}
    assert state.open_turn is None
    messages = state.history.messages()
    tools = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert tools["a"].startswith("TOOL_OUTCOME_UNKNOWN") and "read-only or idempotent" in tools["a"]
    assert "verify" in tools["a"] and "ask" in tools["a"]
    assert tools["b"].startswith("TOOL_NOT_STARTED")
    assert [r["repair"] for r in state.history.repairs] == ["TOOL_OUTCOME_UNKNOWN", "TOOL_NOT_STARTED"]


def test_fork_copies_events_up_to_seq_and_names_its_parent(tmp_path):
    make_log(tmp_path, n_turns=2)
    new_id, path = fork(tmp_path, "s-test", 4)
    loaded = load(path)
    assert loaded.header["session_id"] == new_id == path.stem
    assert loaded.header["parent"] == {"session_id": "s-test", "seq": 4}
    original = load(tmp_path / "s-test.jsonl").events[:4]
    assert loaded.events == original
    with pytest.raises(ValueError, match="outside"):
        fork(tmp_path, "s-test", 99)


def test_fork_command_prints_the_new_session(tmp_path, capsys):
    make_log(tmp_path, n_turns=1)
    assert main(["fork", "s-test", "--at", "2", "--sessions-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    new_id = out.strip()
    assert err.startswith(f"refagent: session {new_id} ")
    assert len(load(tmp_path / f"{new_id}.jsonl").events) == 2


def test_header_never_holds_the_key_and_lines_are_json(tmp_path):
    path = make_log(tmp_path)
    for raw in path.read_bytes().splitlines():
        json.loads(raw)
    assert "api_key" not in load(path).header
