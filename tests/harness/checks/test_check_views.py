"""The record views the checkers share: history balance, window-to-call mapping, refusals."""

from harness.checks.views import (
    balance_problems,
    message,
    parsed,
    refused,
    refused_records,
    requests,
    sent_messages,
    unbalanced,
    window_call,
)
from tests.harness.checks.observations import RunBuilder, call, msg


def history(*raw):
    return [message(m) for m in raw]


def test_balanced_history_has_no_problems():
    c1, c2 = call("c1"), call("c2")
    msgs = history(msg("user", "go"), msg("assistant", "", [c1, c2]), msg("tool", "a", tool_call_id="c2"),
                   msg("tool", "b", tool_call_id="c1"), msg("user", "next"))
    assert balance_problems(msgs) == []


def test_unanswered_orphaned_and_late_results_are_named():
    c1 = call("c1")
    assert balance_problems(history(msg("assistant", "", [c1]), msg("user", "hi"))) == [
        "message 1: tool call 'c1' has no tool result"]
    assert balance_problems(history(msg("user", "hi"), msg("tool", "x", tool_call_id="c9"))) == [
        "message 2: tool result for 'c9', which no preceding assistant message left open"]
    late = history(msg("assistant", "", [c1]), msg("user", "hi"), msg("tool", "x", tool_call_id="c1"))
    assert balance_problems(late) == ["message 1: tool call 'c1' has no tool result",
                                      "message 3: tool result for 'c1', which no preceding assistant message left open"]
    twice = history(msg("assistant", "", [c1]), msg("tool", "x", tool_call_id="c1"),
                    msg("tool", "y", tool_call_id="c1"))
    assert balance_problems(twice) == [
        "message 3: tool result for 'c1', which no preceding assistant message left open"]


def test_window_maps_to_the_call_that_names_it():
    run = RunBuilder()
    n = run.records.request([msg("user", "go")])
    run.records.response(n, tool_calls=[call("c1", "ls"), call("c2", "python -m fake_server.window --id w1-b"),
                                        call("c3", "python -m fake_server.window --id w1")])
    run.records.window("w1", [10])
    assert window_call(run.observation(), "w1") == (1, "c3")
    assert window_call(run.observation(), "w7") == (None, None)


def test_a_request_refused_as_unbalanced_is_told_from_other_refusals():
    run = RunBuilder()
    run.records.request([msg("user", "go")], status=400, error="The following tool_call_ids did not have response "
                        "messages: c1")
    run.records.request([msg("user", "go")], status=429, error="Rate limited by the scenario.", parsed=True)
    first, second = requests(run.observation())
    assert (refused(first), unbalanced(first), parsed(first), sent_messages(first)) == (True, True, False, ())
    assert (refused(second), unbalanced(second), parsed(second)) == (True, False, True)
    assert [r.request for r in refused_records(run.records.records)] == [1, 2]
