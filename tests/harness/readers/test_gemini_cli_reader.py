"""The Gemini CLI reader on small stores shaped like 0.61.0's: records replaced by id keep their
place, checkpoints and rewinds replay the way the agent reloads, a cancelled call is aborted,
and a record the reader does not know is refused naming its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.readers import LogDamaged, get_reader

HEADER = {"sessionId": "5e55e55e-0000-4000-8000-000000000001", "projectHash": "ab12", "startTime":
          "2026-12-01T10:00:00.000Z", "lastUpdated": "2026-12-01T10:00:00.000Z", "kind": "main"}
CONTEXT = {"id": "ctx", "timestamp": "2026-12-01T10:00:00.000Z", "type": "user", "content": [{"text": (
    "<session_context>\nThis is the Gemini CLI.\n- **Workspace Directories:**\n  - /tmp/somewhere/work\n"
    "</session_context>")}]}


def user(mid: str, text: str) -> dict:
    return {"id": mid, "timestamp": "2026-12-01T10:00:01.000Z", "type": "user", "content": [{"text": text}]}


def model(mid: str, text: str, *calls: dict) -> dict:
    record = {"id": mid, "timestamp": "2026-12-01T10:00:02.000Z", "type": "gemini", "content": text,
              "thoughts": [], "model": "stopbench-1"}
    return {**record, "toolCalls": list(calls)} if calls else record


def call(cid: str, status: str, output: str | None = None, error: str | None = None) -> dict:
    response = {"output": output} if output is not None else {"error": error}
    return {"id": cid, "name": "run_shell_command", "args": {"command": "sleep 30"}, "status": status,
            "timestamp": "2026-12-01T10:00:03.000Z",
            "result": [{"functionResponse": {"id": cid, "name": "run_shell_command", "response": response}}]}


def results(mid: str, *calls: dict) -> dict:
    return {"id": mid, "timestamp": "2026-12-01T10:00:04.000Z", "type": "user",
            "content": [c["result"][0] for c in calls]}


def store(tmp_path: Path, *records: dict) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "session-2026-12-01T10-00-5e55e55e.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def parse(path: str):
    reader = get_reader("gemini-cli")
    assert reader is not None
    return reader.parse(reader.snapshot(path))


def events(log) -> list[tuple[str, int | None, int]]:
    return [(e.type, e.turn, e.line) for e in log.events]


def test_a_message_written_again_with_its_calls_keeps_its_place_and_first_line(tmp_path):
    done = call("run_shell_command__c1", "success", output="hi")
    path = store(tmp_path, HEADER, {"$set": {"messages": [CONTEXT]}}, user("u1", "Say hi."),
                 model("m1", "Running it."), {"$set": {"lastUpdated": "2026-12-01T10:00:02.000Z"}},
                 model("m1", "Running it.", done), results("r1", done), model("m2", "It said hi."))
    log = parse(path)
    assert events(log) == [("turn_started", 1, 3), ("assistant_message", 1, 4), ("tool_call", 1, 4),
                           ("tool_result", 1, 7), ("assistant_message", 1, 8)]
    result = log.of_type("tool_result")[0]
    # the id the agent sends the model: the stored one without its "<name>__" prefix
    assert (result.get("call_id"), result.get("native_id"), result.get("output"), result.get("aborted")) == (
        "c1", "run_shell_command__c1", "hi", False)
    assert log.of_type("assistant_message")[0].get("tool_calls")[0]["id"] == "c1"
    assert log.header.session_id == HEADER["sessionId"] and log.header.cwd == "/tmp/somewhere/work"
    assert log.header.model == "stopbench-1" and log.of_type("turn_started")[0].mono_ns is not None
    assert get_reader("gemini-cli").format_problems(log) == []


def test_a_cancelled_call_kept_only_beside_the_message_is_an_aborted_result(tmp_path):
    cancelled = call("run_shell_command__c1", "cancelled", error="[Operation Cancelled] Reason: User cancelled.")
    log = parse(store(tmp_path, HEADER, user("u1", "Run it."), model("m1", "Running.", cancelled)))
    [result] = log.of_type("tool_result")
    assert result.get("aborted") is True and result.get("status") == "cancelled"
    assert result.get("output").startswith("[Operation Cancelled]") and result.get("is_error") is True


def test_a_resume_checkpoint_and_a_rewind_replay_as_the_agent_reloads(tmp_path):
    path = store(tmp_path, HEADER, {"$set": {"messages": [CONTEXT]}}, user("u1", "First."), model("m1", "One."),
                 HEADER, {"$set": {"messages": [CONTEXT]}},                       # a resume starts afresh …
                 {"$set": {"messages": [CONTEXT, user("u1", "First."), model("m1", "One.")]}},  # … and restores
                 user("u2", "Second."), model("m2", "Two."), {"$rewindTo": "m2"}, model("m3", "Two, again."))
    log = parse(path)
    assert [(e.type, e.turn, e.get("text") or e.get("input")) for e in log.events] == [
        ("turn_started", 1, "First."), ("assistant_message", 1, "One."), ("turn_started", 2, "Second."),
        ("assistant_message", 2, "Two, again.")]
    assert [e.line for e in log.events] == [3, 4, 8, 11]     # where each message first appeared


def test_a_function_response_answering_no_call_breaks_the_format_rule(tmp_path):
    stray = call("run_shell_command__gone", "success", output="x")
    log = parse(store(tmp_path, HEADER, user("u1", "Go."), model("m1", "Hm."), results("r1", stray)))
    [problem] = get_reader("gemini-cli").format_problems(log)
    assert "gone answers no earlier call" in problem.note and problem.line == 4


@pytest.mark.parametrize("records, line, words", [
    ([{"id": "u1", "type": "user"}], 1, "the first line is not a session header"),
    ([HEADER, {"kind": "checkpoint"}], 2, "unknown record (keys kind; this reader is for Gemini CLI 0.61.x)"),
    ([HEADER, {**user("u1", "x"), "type": "assistant"}], 2, "message u1 has unknown type 'assistant'"),
    ([HEADER, model("m1", "x", {"name": "run_shell_command"})], 2, "message m1 has a tool call without id or name"),
])
def test_a_record_it_does_not_know_is_refused_naming_the_line(tmp_path, records, line, words):
    path = store(tmp_path, *records)
    with pytest.raises(LogDamaged) as caught:
        parse(path)
    assert caught.value.line == line and words in str(caught.value) and path in str(caught.value)


def test_the_profiles_glob_finds_the_session_the_run_wrote(tmp_path):
    """The store is found where the profile says (``[session] log_glob``), by the driver's one
    discovery: of several sessions under the run's HOME, the one written last."""
    import os

    from harness.drivers import AgentContext
    from harness.drivers.sessions import find_log
    from harness.profiles import load_profile

    profile = load_profile("gemini-cli")
    ctx = AgentContext(profile=profile, adapter="http", values={"home": str(tmp_path)}, env={},
                       sessions_dir=tmp_path / "sessions", cwd=tmp_path / "work")
    assert find_log(ctx, HEADER["sessionId"]) is None
    chats = tmp_path / ".gemini" / "tmp" / "work" / "chats"
    chats.mkdir(parents=True)
    for n, sid in enumerate(("0ther000", "5e55e55e")):
        path = chats / f"session-2026-12-01T10-00-{sid}.jsonl"
        path.write_text(json.dumps(HEADER) + "\n", encoding="utf-8")
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))
    assert find_log(ctx, HEADER["sessionId"]).endswith("-5e55e55e.jsonl")


def test_a_resume_rewriting_earlier_messages_changes_none_of_their_events(tmp_path):
    """A resume's checkpoint writes the earlier messages again with its own time and without
    their model: the events keep the first time and what the copy left out."""
    earlier = store(tmp_path / "a", HEADER, user("u1", "First."), model("m1", "One."))
    restored = [{**user("u1", "First."), "timestamp": "2026-12-01T11:00:00.000Z"},
                {"id": "m1", "timestamp": "2026-12-01T11:00:00.000Z", "type": "gemini", "content": [{"text": "One."}]}]
    later = store(tmp_path / "b", HEADER, user("u1", "First."), model("m1", "One."), HEADER,
                  {"$set": {"messages": [CONTEXT]}}, {"$set": {"messages": [CONTEXT, *restored]}})
    before, after = parse(earlier), parse(later)
    assert [(e.type, e.line, dict(e.data)) for e in after.events] == [(e.type, e.line, dict(e.data))
                                                                      for e in before.events]
    assert after.of_type("assistant_message")[0].get("model") == "stopbench-1"


def test_a_checkpoint_that_reuses_a_model_messages_id_for_its_results_replaces_that_message(tmp_path):
    """Seen after a kill between a tool's end and the next answer: the restore gives the
    function responses the model message's id, so the reloaded conversation loses the call."""
    done = call("run_shell_command__c1", "success", output="listed")
    calls_in_content = {"id": "m1", "timestamp": "2026-12-01T11:00:00.000Z", "type": "gemini", "content": [
        {"text": "Listing."}, {"functionCall": {"id": "run_shell_command__c1", "name": "run_shell_command", "args": {}}}]}
    only_model = parse(store(tmp_path / "a", HEADER, user("u1", "List."), {"$set": {"messages": [calls_in_content]}}))
    assert [(e.type, e.get("call_id")) for e in only_model.events] == [("assistant_message", None), ("tool_call", "c1")]
    assert only_model.of_type("assistant_message")[0].get("tool_calls")[0]["id"] == "c1"
    clash = {**results("m1", done), "id": "m1"}
    log = parse(store(tmp_path / "b", HEADER, user("u1", "List."), model("m1", "Listing.", done), results("r1", done),
                      {"$set": {"messages": [user("u1", "List."), calls_in_content, clash, results("r1", done)]}}))
    assert [(e.type, e.line) for e in log.events] == [("turn_started", 2), ("tool_result", 3), ("tool_result", 4)]
