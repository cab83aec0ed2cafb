"""The acp-replay reader: what a session/load replayed, as canonical events — turns cut
where the client's prompts end, tool calls on the assistant message they follow, a stopped
call's ``failed`` kept — and compared on the replayed updates alone."""

import json

import pytest

from harness.model import Snapshot
from harness.readers import READERS, LogDamaged

READER = READERS["acp-replay"]
SESSION = "s-1"


def replay(updates: list[dict], prompts: list[str]) -> Snapshot:
    header = {"acp_replay": 1, "sessionId": SESSION, "method": "session/load", "prompts": prompts}
    data = "".join(json.dumps(r) + "\n" for r in [header, *updates]).encode()
    return Snapshot(reader="acp-replay", path="acp-replay-1.jsonl", data=data, mono_ns=1)


def user(text: str) -> dict:
    return {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}


def agent(text: str) -> dict:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def call(call_id: str, status: str = "pending") -> dict:
    return {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": "bash", "status": status,
            "rawInput": {"command": "sleep 60"}}


def done(call_id: str, status: str) -> dict:
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status,
            "content": [{"type": "content", "content": {"type": "text", "text": "[aborted]"}}]}


KILLED_THEN_RESUMED = [user("Run the migration."), call("c1"), user("[resumed] "), user("What happened?"),
                       agent("Checking"), agent(" first."), call("c2"), done("c2", "failed")]


def test_a_turn_killed_before_any_answer_is_cut_where_its_prompt_ends():
    log = READER.parse(replay(KILLED_THEN_RESUMED, ["Run the migration.", "What happened?"]))
    starts = log.of_type("turn_started")
    assert [e.get("input") for e in starts] == ["Run the migration.", "[resumed] What happened?"]
    assert log.header.session_id == SESSION


def test_a_tool_call_sits_on_the_assistant_message_it_follows():
    log = READER.parse(replay(KILLED_THEN_RESUMED, ["Run the migration.", "What happened?"]))
    messages = log.of_type("assistant_message")
    assert [(m.turn, m.get("text"), [c["id"] for c in m.get("tool_calls")]) for m in messages] == [
        (1, "", ["c1"]), (2, "Checking first.", ["c2"])]
    assert [e.get("call_id") for e in log.of_type("tool_call")] == ["c1", "c2"]
    (result,) = log.of_type("tool_result")
    assert (result.get("call_id"), result.get("status"), result.get("is_error")) == ("c2", "failed", True)


def test_lost_compares_the_replayed_updates_not_the_clients_header():
    before = replay(KILLED_THEN_RESUMED[:2], ["Run the migration."])
    grown = replay([*KILLED_THEN_RESUMED[:2], user("More.")], ["Run the migration.", "More."])
    forgot = replay(KILLED_THEN_RESUMED[:1], ["Run the migration.", "More."])
    assert READER.lost(before, grown) is None and READER.changed(before, before) is None
    change = READER.lost(before, forgot)
    assert change is not None and change.line == 3


def test_a_file_without_the_replay_header_is_refused_naming_it():
    bad = Snapshot(reader="acp-replay", path="x.jsonl", data=b'{"sessionUpdate": "user_message_chunk"}\n', mono_ns=1)
    with pytest.raises(LogDamaged, match="x.jsonl:1: the first line is not an ACP replay header"):
        READER.parse(bad)


def test_a_result_for_a_call_never_seen_finishing_live_is_the_loads_repair_not_kept_history():
    snap = replay(KILLED_THEN_RESUMED, ["Run the migration.", "What happened?"])
    header, rest = snap.data.split(b"\n", 1)
    record = json.loads(header)
    record["finished_live"] = []  # the agent was killed while c2 ran: the client never saw it finish
    log = READER.parse(Snapshot(reader="acp-replay", path=snap.path, data=json.dumps(record).encode() + b"\n" + rest,
                                mono_ns=1))
    assert log.of_type("tool_result") == [] and [e.get("call_id") for e in log.of_type("tool_call")] == ["c1", "c2"]


def test_a_repair_replayed_after_more_history_is_not_a_loss():
    repaired = done("c1", "failed")
    first = replay([user("Run the migration."), call("c1"), repaired], ["Run the migration."])
    later = replay([user("Run the migration."), call("c1"), user("Next."), agent("Done."), repaired],
                   ["Run the migration.", "Next."])
    assert READER.lost(first, later) is None


def test_the_replays_own_rules_a_call_announced_once_and_updates_of_announced_calls_only():
    from harness.readers.acp_replay import AcpReplayReader

    reader = AcpReplayReader()
    header = {"acp_replay": 1, "sessionId": "s1", "prompts": ["go"], "finished_live": ["c1", "c9"]}
    updates = [{"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "go"}},
               {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash", "status": "pending"},
               {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"},
               {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash", "status": "pending"},
               {"sessionUpdate": "tool_call_update", "toolCallId": "c9", "status": "failed"}]
    data = b"\n".join(json.dumps(r).encode() for r in [header, *updates]) + b"\n"
    log = reader.parse(Snapshot(reader=reader.name, path="replay.jsonl", data=data, mono_ns=0))
    assert [p.line for p in reader.format_problems(log)] == [5, 6]
