"""The OpenHands reader on conversation folders recorded from OpenHands CLI 1.16.0
(tests/fixtures/agents/openhands-1.16.0/, ``stopbench agents record openhands all``): every
answer of the scenario calls OpenHands' ``finish`` tool; its requests are not streamed, so the
kill-stream case has no stream to cut and records a completed plain answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.model import Capability
from harness.readers import READERS, LogDamaged, get_reader
from harness.readers.base import CannotDamage

from .store_testkit import parse as parse_store
from .store_testkit import signature

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents" / "openhands-1.16.0"
PROMPT = "Run the check command in the shell and tell me what it printed."
FOLLOW_UP = "follow-up: the last turn was cut off. What happened?"
EXPECTED = {
    ("completed", "final"): "T1 A1 C1 R1 A1 C1 R1 E1",
    ("kill-stream", "final"): "T1 A1 E1",  # a plain answer ends OpenHands' run
    ("kill-tool", "killed"): "T1 A1 C1",
    # The resume ran the killed call again, then sent a request with the follow-up between the
    # call and its result, which the fake server refused (strict): the run ended in error.
    ("kill-tool", "resumed"): "T1 A1 C1 T2 R2 E2",
    # SIGINT while the call ran: nothing written, and the process still ran 30 s later
    # (SIGKILLed); the resume did as after a kill.
    ("stop-tool", "stopped"): "T1 A1 C1",
    ("stop-tool", "resumed"): "T1 A1 C1 T2 R2 E2",
}
READER = get_reader("openhands")


def store_copy(case: str, phase: str, tmp_path: Path) -> str:
    found = sorted((FIXTURES / case / phase).glob(".openhands/conversations/*"))
    assert len(found) == 1, found
    target = tmp_path / found[0].name
    shutil.copytree(found[0], target)
    return str(target)


def parse(path: str):
    return parse_store("openhands", path)



def test_registered_with_honest_declarations():
    reader = READERS["openhands"]
    assert reader.agent_versions == "OpenHands CLI 1.16.x (SDK 1.21.x)"
    assert reader.damage_kinds == {"torn-tail", "mid-file"}
    # A Stop or a kill writes nothing: no aborted result, no turn end; nothing is streamed.
    for missing in (Capability.TURN_ENDS, Capability.TOOL_ABORTS, Capability.INTERRUPTED_TEXT, Capability.REQUESTS,
                    Capability.TOOL_STARTS, Capability.STEP_SETTLEMENTS, Capability.INBOX):
        assert missing not in reader.capabilities
    assert {Capability.APPEND_ONLY, Capability.MONO_TIMES, Capability.FORMAT_RULES} <= reader.capabilities


@pytest.mark.parametrize("key", sorted(EXPECTED), ids="-".join)
def test_events_of_every_recording(key, tmp_path):
    path = store_copy(*key, tmp_path)
    log = parse(path)
    assert signature(log) == EXPECTED[key]
    assert [e.seq for e in log.events] == list(range(1, len(log.events) + 1))
    assert log.torn_tail is None and READER.format_problems(log) == []
    sid = json.loads((FIXTURES / key[0] / "case.json").read_text())["session_id"]
    assert log.header.session_id == sid == Path(path).name
    assert log.header.cwd == "/tmp/sbrec/openhands/work" and log.header.model == "openai/fake-model"
    assert log.header.raw["tool_concurrency_limit"] == 1
    assert log.events[0].get("input") in (PROMPT, "Explain, at length, what this folder is for.")
    assert all(e.mono_ns is not None and e.where and e.where.startswith("event ") for e in log.events)


def test_completed_turn_content(tmp_path):
    log = parse(store_copy("completed", "final", tmp_path))
    terminal, finish = log.of_type("tool_call")
    results = log.of_type("tool_result")
    assert [r.get("call_id") for r in results] == [terminal.get("call_id"), finish.get("call_id")]
    assert terminal.get("name") == "terminal" and terminal.get("arguments")["command"] == "echo stopbench-hello"
    assert "stopbench-hello" in results[0].get("output") and results[0].get("exit_code") == 0
    assert results[0].get("native_kind") == "TerminalObservation" and results[0].get("aborted") is False
    assert finish.get("name") == "finish"
    messages = log.of_type("assistant_message")
    assert [m.get("text") for m in messages] == ["I will run the check.", "The command printed stopbench-hello. Done."]
    assert [e.get("reason") for e in log.of_type("turn_ended")] == ["completed"]
    assert log.header.raw["execution_status"] == "finished"


def test_a_resume_after_a_kill_runs_the_call_again_and_ends_in_error(tmp_path):
    log = parse(store_copy("kill-tool", "resumed", tmp_path))
    call, result = log.of_type("tool_call")[0], log.of_type("tool_result")[0]
    assert (call.turn, result.turn) == (1, 2) and result.get("call_id") == call.get("call_id")
    assert log.of_type("turn_started")[1].get("input") == FOLLOW_UP
    end = log.of_type("turn_ended")[0]
    assert end.get("reason") == "error" and "tool_call_id" in end.get("error")


@pytest.mark.parametrize("case,first", [("kill-tool", "killed"), ("stop-tool", "stopped")])
def test_resume_keeps_every_event(case, first, tmp_path):
    before = READER.snapshot(store_copy(case, first, tmp_path / "before"))
    after = READER.snapshot(store_copy(case, "resumed", tmp_path / "after"))
    assert READER.lost(before, after) is None
    assert READER.changed(before, after) is not None and READER.changed(before, before) is None


def test_lost_names_a_rewritten_or_vanished_event(tmp_path):
    path = store_copy("completed", "final", tmp_path)
    before = READER.snapshot(path)
    events = sorted(Path(path, "events").glob("event-*.json"))
    events[2].write_text(events[2].read_text().replace("I will run the check.", "I will run the tests."))
    change = READER.lost(before, READER.snapshot(path))
    assert change is not None and change.where == f"event file {events[2].name}" and "rewritten" in change.detail
    events[3].unlink()
    change = READER.lost(before, READER.snapshot(path))
    assert change is not None and events[2].name in change.where  # the first difference is named


def test_a_cut_off_last_event_is_a_torn_tail(tmp_path):
    path = store_copy("kill-tool", "killed", tmp_path)
    intact = parse(path)
    damage = READER.damage(path, "torn-tail")
    torn = parse(path)
    assert torn.torn_tail == READER.torn_fragment and signature(torn) == signature(intact)
    assert damage.where.startswith("event 3 (event-00003-")
    with pytest.raises(CannotDamage):
        READER.damage(path, "torn-tail")
    before = READER.snapshot(path)
    Path(path, "events", damage.where.split("(")[1].rstrip(")")).unlink()  # the cut event replaced…
    assert READER.lost(before, READER.snapshot(path)) is None  # …loses nothing that was complete


def test_a_damaged_or_missing_event_is_refused_naming_it(tmp_path):
    path = store_copy("completed", "final", tmp_path / "mid")
    damage = READER.damage(path, "mid-file")
    with pytest.raises(LogDamaged) as caught:
        parse(path)
    assert caught.value.line == damage.line and f"event {damage.line}" in str(caught.value)
    path = store_copy("completed", "final", tmp_path / "gap")
    sorted(Path(path, "events").glob("event-*.json"))[2].unlink()
    with pytest.raises(LogDamaged, match="event 2 is missing"):
        parse(path)


def test_an_unknown_event_kind_is_refused_naming_the_versions(tmp_path):
    path = store_copy("completed", "final", tmp_path)
    last = sorted(Path(path, "events").glob("event-*.json"))[-1]
    last.write_text(last.read_text().replace('"kind":"ObservationEvent"', '"kind":"FutureEvent"'))
    with pytest.raises(LogDamaged, match=r"unknown event kind 'FutureEvent' \(this reader is for OpenHands CLI 1\.16"):
        parse(path)


def test_an_observation_for_no_action_breaks_its_rules(tmp_path):
    path = store_copy("completed", "final", tmp_path)
    last = sorted(Path(path, "events").glob("event-*.json"))[-1]
    record = json.loads(last.read_text())
    record["tool_call_id"] = "call_nowhere"
    last.write_text(json.dumps(record))
    notes = [p.note for p in READER.format_problems(parse(path))]
    assert notes == ["observation for call_nowhere answers no earlier action"]


def test_no_key_in_any_recording():
    for path in FIXTURES.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"sk-stopbench-" not in data.replace(b"sk-stopbench-REDACTED", b""), path
