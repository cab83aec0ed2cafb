"""The gptme reader on conversations recorded from gptme 0.35.1 (tests/fixtures/agents/gptme-0.35.1/).

Recorded with ``stopbench agents record gptme all``: every answer of the scenario closes with
a call of gptme's ``complete`` tool, the only way its non-interactive mode ends a turn.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.model import Capability
from harness.readers import READERS, LogDamaged, get_reader
from harness.readers.base import CannotDamage
from harness.readers.gptme import split_calls

from .store_testkit import parse as parse_store
from .store_testkit import signature

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents" / "gptme-0.35.1"
PROMPT = "Run the check command in the shell and tell me what it printed."
FOLLOW_UP = "follow-up: the last turn was cut off. What happened?"
EXPECTED = {
    ("completed", "final"): "T1 A1 C1 R1 A1 C1 R1 E1",
    # A kill while the tool runs leaves only the user's message: gptme writes the assistant
    # message that made the call after the call returns.
    ("kill-tool", "killed"): "T1",
    ("kill-tool", "resumed"): "T1 T2 A2 C2 R2 E2",
    ("kill-stream", "killed"): "T1",
    ("kill-stream", "resumed"): "T1 T2 A2 C2 R2 E2",
    # A Stop in the tool writes "Interrupted by user" as its result and asks the model again.
    ("stop-tool", "stopped"): "T1 A1 C1 R1 A1 C1 R1 E1",
    ("stop-tool", "resumed"): "T1 A1 C1 R1 A1 C1 R1 E1 T2 A2 C2 R2 E2",
}
READER = get_reader("gptme")


def store_copy(case: str, phase: str, tmp_path: Path) -> str:
    found = sorted((FIXTURES / case / phase).rglob("conversation.jsonl"))
    assert len(found) == 1, found
    target = tmp_path / found[0].parent.name / "conversation.jsonl"  # the folder is the conversation's name
    target.parent.mkdir(parents=True)
    shutil.copyfile(found[0], target)
    return str(target)


def parse(path: str):
    return parse_store("gptme", path)



def test_registered_with_honest_declarations():
    reader = READERS["gptme"]
    assert reader.agent_versions == "gptme 0.35.x"
    assert reader.damage_kinds == {"torn-tail", "mid-file"}
    # It writes no Stop request, model request, tool start or turn end other than `complete`.
    for missing in (Capability.TURN_ENDS, Capability.STOP_REQUESTS, Capability.REQUESTS, Capability.TOOL_STARTS,
                    Capability.STEP_SETTLEMENTS, Capability.INBOX):
        assert missing not in reader.capabilities
    assert {Capability.TOOL_ABORTS, Capability.APPEND_ONLY, Capability.MONO_TIMES} <= reader.capabilities


@pytest.mark.parametrize("key", sorted(EXPECTED), ids="-".join)
def test_events_of_every_recording(key, tmp_path):
    log = parse(store_copy(*key, tmp_path))
    assert signature(log) == EXPECTED[key]
    assert [e.seq for e in log.events] == list(range(1, len(log.events) + 1))
    assert log.torn_tail is None and READER.format_problems(log) == []
    assert log.header.raw["version"] == "0.35.1" and log.header.model in (None, "local/fake-model")
    assert log.header.cwd == "/tmp/sbrec/gptme/work"
    sid = json.loads((FIXTURES / key[0] / "case.json").read_text())["session_id"]
    assert log.header.session_id == sid  # the conversation's folder, named by --name
    starts = log.of_type("turn_started")
    assert starts[0].get("input") in (PROMPT, "Explain, at length, what this folder is for.")
    assert all(e.mono_ns is not None for e in log.events)


def test_completed_turn_content(tmp_path):
    log = parse(store_copy("completed", "final", tmp_path))
    shell, finish = log.of_type("tool_call")
    results = log.of_type("tool_result")
    assert [r.get("call_id") for r in results] == [shell.get("call_id"), finish.get("call_id")]
    assert shell.get("name") == "shell" and shell.get("arguments") == {"command": "echo stopbench-hello"}
    assert "stopbench-hello" in results[0].get("output") and results[0].get("aborted") is False
    assert finish.get("name") == "complete"
    messages = log.of_type("assistant_message")
    assert [m.get("text") for m in messages] == ["I will run the check.", "The command printed stopbench-hello. Done."]
    assert messages[0].get("tool_calls")[0]["id"] == shell.get("call_id")
    assert [e.get("reason") for e in log.of_type("turn_ended")] == ["completed"]


def test_a_stopped_call_is_aborted_and_the_turn_goes_on(tmp_path):
    log = parse(store_copy("stop-tool", "stopped", tmp_path))
    stopped, finished = log.of_type("tool_result")
    assert stopped.get("aborted") is True and stopped.get("output") == "Interrupted by user"
    assert finished.get("name") == "complete" and finished.get("aborted") is False
    # gptme asked the model again after the Stop, inside the same turn
    assert [m.turn for m in log.of_type("assistant_message")] == [1, 1]


def test_a_resume_after_a_kill_starts_a_new_turn_on_the_same_conversation(tmp_path):
    for case in ("kill-tool", "kill-stream"):
        log = parse(store_copy(case, "resumed", tmp_path / case))
        assert [t.get("input") for t in log.of_type("turn_started")][1] == FOLLOW_UP
        assert log.of_type("tool_call")[0].get("name") == "complete"  # the killed call was never written


@pytest.mark.parametrize("case,first", [("kill-tool", "killed"), ("kill-stream", "killed"), ("stop-tool", "stopped")])
def test_resume_keeps_every_durable_record(case, first, tmp_path):
    before = READER.snapshot(store_copy(case, first, tmp_path / "before"))
    after = READER.snapshot(store_copy(case, "resumed", tmp_path / "after"))
    assert READER.lost(before, after) is None
    assert READER.changed(before, after) is not None and READER.changed(before, before) is None


def test_split_calls_reads_gptme_tool_syntax():
    text, calls = split_calls('Looking.\n@shell(call_1): {"command": "ls {a}"}\n@complete(call_2): {}')
    assert text == "Looking.\n"
    assert [(c["id"], c["name"], c["args"]) for c in calls] == [("call_1", "shell", {"command": "ls {a}"}),
                                                                ("call_2", "complete", {})]
    cut_text, cut = split_calls('Looking.\n@shell(call_1): {"command": "l')  # cut off while streaming
    assert cut == [] and cut_text.endswith('"l')


def test_text_cut_by_a_stop_is_interrupted(tmp_path):
    path = store_copy("completed", "final", tmp_path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"role": "user", "content": "Write the report.", "timestamp": "2026-12-01T14:00:00"}) + "\n")
        f.write(json.dumps({"role": "assistant", "content": "Here is the rep... ^C Interrupted",
                            "timestamp": "2026-12-01T14:00:01"}) + "\n")
    message = parse(path).of_type("assistant_message")[-1]
    assert message.get("interrupted") is True and message.get("text") == "Here is the rep"


def test_nudges_are_not_turns(tmp_path):
    path = store_copy("completed", "final", tmp_path)
    with open(path, "a", encoding="utf-8") as f:
        for role, content in (("user", "Go on."), ("assistant", "Thinking."),
                              ("user", "<system>No tool call detected in last message. Did you mean to finish?"
                                       "</system>"), ("assistant", "Done.")):
            f.write(json.dumps({"role": role, "content": content}) + "\n")
    log = parse(path)
    assert [t.get("input") for t in log.of_type("turn_started")] == [PROMPT, "Go on."]
    assert [m.get("nudge") for m in log.of_type("assistant_message")][-2:] == [False, True]


def test_torn_tail_and_mid_file_damage(tmp_path):
    path = store_copy("completed", "final", tmp_path / "torn")
    intact = parse(path)
    damage = READER.damage(path, "torn-tail")
    torn = parse(path)
    assert torn.torn_tail == READER.torn_fragment and signature(torn) == signature(intact)
    assert damage.line == Path(path).read_bytes().count(b"\n") + 1
    with pytest.raises(CannotDamage):
        READER.damage(path, "torn-tail")
    path = store_copy("completed", "final", tmp_path / "mid")
    damage = READER.damage(path, "mid-file")
    with pytest.raises(LogDamaged) as caught:
        parse(path)
    assert caught.value.line == damage.line and f"{path}:{damage.line}:" in str(caught.value)


def test_unknown_version_and_bad_messages_are_refused(tmp_path):
    path = store_copy("completed", "final", tmp_path / "v")
    data = Path(path).read_bytes()
    Path(path).write_bytes(data.replace(b"You are gptme v0.35.1", b"You are gptme v0.99.0", 1))
    with pytest.raises(LogDamaged, match=r":1: conversation written by gptme 0\.99\.0; .*gptme 0\.35\.x"):
        parse(path)
    path = store_copy("completed", "final", tmp_path / "r")
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"role": "tool", "content": "x"}) + "\n")
    with pytest.raises(LogDamaged, match="role 'tool'"):
        parse(path)


def test_a_result_for_no_earlier_call_breaks_its_rules(tmp_path):
    path = store_copy("completed", "final", tmp_path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"role": "system", "content": "late", "call_id": "call_nowhere"}) + "\n")
    problems = READER.format_problems(parse(path))
    assert [p.note for p in problems] == ["tool result for call_nowhere answers no earlier call"]
