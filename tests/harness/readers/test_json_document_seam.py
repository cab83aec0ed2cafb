"""The reader seam, proved with a second format: a json-document store (rewritten whole,
not append-only, recording much less than contract-v1) is judged by its own reader's rules
with no checker knowing it — its passing runs pass, its violating runs fail the right check,
and what it cannot record is ``unknown`` naming the capability, never a false fail."""

import dataclasses
import json

import pytest

from harness.checks import run_check
from harness.model import Capability, Outcome, Snapshot
from harness.readers import CannotDamage, LogDamaged
from tests.harness.checks.observations import RunBuilder, call, msg

from .json_document_reader import DocumentStore, JsonDocumentReader

SYSTEM = msg("system", "You are a coding agent.")
READER = JsonDocumentReader()


def doc_run() -> tuple[RunBuilder, DocumentStore]:
    store = DocumentStore()
    return RunBuilder(reader=READER, store=store, log_path="sessions/s-doc.json"), store


def kill_and_resume(*faults: str) -> RunBuilder:
    """Turn 1's request arrives and the agent is SIGKILLed; it restarts on the same document
    and answers a follow-up in turn 2."""
    run, store = doc_run()
    clock = run.clock
    run.user("Build the project.")
    if "late-write" not in faults:  # the document holds the turn and its input before the request
        turn = store.start(clock.tick())
        store.say(turn, "user", "Build the project.", clock.tick())
    history = [SYSTEM, msg("user", "Build the project.")]
    n1 = run.records.request(history)
    run.kill("request-received", request=n1)
    loaded = store.to_bytes()
    if "reload-rewrites" in faults:  # loading "repairs" turn 1 by writing its end into the document
        doc = json.loads(loaded)
        doc["turns"][0].update(ended=clock.tick(), outcome="interrupted")
        loaded = json.dumps(doc, indent=1).encode()
    run.restart(after_load=loaded)
    if "reload-rewrites" in faults:
        store.doc = json.loads(loaded)
    if "late-write" in faults:
        store.start(clock.tick())  # the agent records the turn only now, from its own memory
    run.user("Carry on.")
    turn = store.start(clock.tick())
    store.say(turn, "user", "Carry on.", clock.tick())
    kept = [] if "late-write" in faults else history[1:]
    n2 = run.records.request([SYSTEM, *kept, msg("user", "Carry on.")])
    run.records.response(n2, text="Building.")
    store.say(turn, "assistant", "Building.", clock.tick())
    if "forgets" in faults:  # rewritten from memory that lost the first message
        store.doc["messages"] = [m for m in store.doc["messages"] if m["text"] != "Build the project."]
    if "two-ends" in faults:  # the turn's end recorded as another entry for the same turn
        store.doc["turns"].append({"started": store.doc["turns"][-1]["started"], "ended": clock.tick(),
                                   "outcome": "completed"})
    if "no-text" in faults:
        del store.doc["messages"][-1]["text"]
    store.end(turn, "completed", clock.tick())
    run.kill("after-turn")  # not a checkpoint: a capture of the store as it now is
    return run


def test_the_reader_is_honest_about_what_its_store_records():
    assert READER.capabilities == {Capability.TURN_ENDS, Capability.MONO_TIMES, Capability.FORMAT_RULES}
    assert Capability.APPEND_ONLY not in READER.capabilities
    with pytest.raises(CannotDamage):
        READER.damage("s.json", "torn-tail")
    with pytest.raises(LogDamaged, match="not a JSON document"):
        READER.parse(Snapshot(reader=READER.name, path="s.json", data=b"{\"id\": ", mono_ns=1))


def test_canonical_events_of_a_document():
    log = kill_and_resume().observation().log
    assert [(e.type, e.turn, e.where) for e in log.events] == [
        ("turn_started", 1, "turns[0]"), ("turn_started", 2, "turns[1]"), ("assistant_message", 2, "messages[2]"),
        ("turn_ended", 2, "turns[1]")]
    assert log.events[0].get("input") == "Build the project." and log.header.session_id == "s-doc"


@pytest.mark.parametrize("check_id, decided", [("C1", "log"), ("C2", "log"), ("C7", "both"), ("C10", "log"),
                                               ("C11", "both")])
def test_a_run_that_keeps_the_contract_passes(check_id, decided):
    result = run_check(check_id, kill_and_resume().observation())
    assert result.outcome is Outcome.PASS, result.to_json()
    assert result.decided_by.value == decided


def test_a_turn_with_two_ends_fails_c1():
    result = run_check("C1", kill_and_resume("two-ends").observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary.startswith("turn 2 ended a second time")
    assert result.evidence.items[0]["where"] == "turns[2]"


def test_a_reload_that_rewrote_the_document_fails_c2_via_changed():
    result = run_check("C2", kill_and_resume("reload-rewrites").observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary.startswith("loading changed the store at restart 1: turn 1:")
    assert result.evidence.items[0]["where"] == "turn 1"


def test_a_rewrite_that_loses_an_earlier_message_fails_c10_and_c7_via_lost():
    obs = kill_and_resume("forgets").observation()
    c10 = run_check("C10", obs)
    assert c10.outcome is Outcome.FAIL
    assert c10.evidence.summary.startswith("the store after kill 2 lost what it held after kill 1: message 1: user "
                                           "'m1'")
    c7 = run_check("C7", obs)
    assert c7.outcome is Outcome.FAIL and c7.decided_by.value == "log"
    assert "lost what it held before restart 1: message 1" in c7.evidence.summary


def test_the_documents_own_format_rules_decide_c10():
    result = run_check("C10", kill_and_resume("no-text").observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == "messages[2] has no string text"


def test_a_checkpoint_not_durable_at_the_kill_fails_c11_by_both_halves():
    result = run_check("C11", kill_and_resume("late-write").observation())
    assert result.outcome is Outcome.FAIL and result.decided_by.value == "both"
    notes = [i["note"] for i in result.evidence.items]
    assert any("does not hold its user message 'Build the project.'" in n for n in notes)
    assert any("lacks the user's message 'Build the project.'" in n for n in notes)


def test_what_the_store_cannot_record_is_unknown_or_left_to_the_black_box_half():
    """A Stop mid-stream: the document has no interrupted flag, no Stop requests and no abort
    sources. C5 is decided black-box and says why the log did not judge; C12 judges the turn's
    end by its reason alone."""
    run, store = doc_run()
    clock = run.clock
    run.user("Explain the design.")
    turn = store.start(clock.tick())
    store.say(turn, "user", "Explain the design.", clock.tick())
    n1 = run.records.request([SYSTEM, msg("user", "Explain the design.")])
    run.records.response(n1, text="The design has three layers.")
    run.records.stream(n1, ["The design ", "has three layers."], complete=False)
    run.stop("stream", request=n1, chunks_seen=1)
    store.say(turn, "assistant", "The design ", clock.tick())
    store.end(turn, "aborted", clock.tick())
    run.user("Go on.")
    turn = store.start(clock.tick())
    store.say(turn, "user", "Go on.", clock.tick())
    run.records.request([SYSTEM, msg("user", "Explain the design."), msg("assistant", "The design "),
                         msg("user", "Go on.")])
    store.end(turn, "completed", clock.tick())
    obs = run.observation()
    c5 = run_check("C5", obs)
    assert c5.outcome is Outcome.PASS and c5.decided_by.value == "black-box"
    assert {"log_half": "not judged", "why": "the json-document store does not record interrupted-text"} \
        in c5.evidence.items
    c12 = run_check("C12", obs)  # no abort source in this store: judged on the reason, not failed for the source
    assert c12.outcome is Outcome.PASS and c12.decided_by.value == "log"
    assert run_check("C1", obs).outcome is Outcome.PASS


def test_a_black_box_question_on_this_store_is_unknown_naming_the_capability():
    """C3's log half needs tool starts and aborted flags, which this store does not record."""
    run, store = doc_run()
    clock = run.clock
    run.user("Run it.")
    turn = store.start(clock.tick())
    store.say(turn, "user", "Run it.", clock.tick())
    n1 = run.records.request([SYSTEM, msg("user", "Run it.")])
    c1 = call("c1", "python -m fake_server.window --id w1")
    run.records.response(n1, tool_calls=[c1])
    store.say(turn, "assistant", "", clock.tick(), tool_calls=[c1])
    run.records.window("w1", [10, 11])
    stop = run.stop("tool", window="w1")
    run.windows.append(dataclasses.replace(_window(), stop_ns=stop.mono_ns, gone_ns=stop.mono_ns + 1_000_000))
    store.end(turn, "aborted", clock.tick())
    result = run_check("C3", run.observation())
    assert result.outcome is Outcome.UNKNOWN and result.needs_reader
    assert "the json-document store does not record tool-starts, tool-aborts" in result.evidence.summary


def _window():
    from harness.model import WindowObservation

    return WindowObservation("w1", ({"pid": 10}, {"pid": 11}), stop_ns=None, gone_ns=None)
