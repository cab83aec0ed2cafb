"""The record views the checkers share: history balance and window-to-call mapping."""

from harness.checks.testing import RunBuilder, call, msg
from harness.checks.views import balance_problems, window_call


def test_balanced_history_has_no_problems():
    c1, c2 = call("c1"), call("c2")
    history = [msg("user", "go"), msg("assistant", "", [c1, c2]), msg("tool", "a", tool_call_id="c2"),
               msg("tool", "b", tool_call_id="c1"), msg("user", "next")]
    assert balance_problems(history) == []


def test_unanswered_orphaned_and_late_results_are_named():
    c1 = call("c1")
    assert balance_problems([msg("assistant", "", [c1]), msg("user", "hi")]) == [
        "message 1: tool call 'c1' has no tool result"]
    assert balance_problems([msg("user", "hi"), msg("tool", "x", tool_call_id="c9")]) == [
        "message 2: tool result for 'c9', which no preceding assistant message left open"]
    late = [msg("assistant", "", [c1]), msg("user", "hi"), msg("tool", "x", tool_call_id="c1")]
    assert balance_problems(late) == ["message 1: tool call 'c1' has no tool result",
                                      "message 3: tool result for 'c1', which no preceding assistant message left open"]
    twice = [msg("assistant", "", [c1]), msg("tool", "x", tool_call_id="c1"), msg("tool", "y", tool_call_id="c1")]
    assert balance_problems(twice) == ["message 3: tool result for 'c1', which no preceding assistant message left open"]


def test_window_maps_to_the_call_that_names_it():
    run = RunBuilder()
    n = run.records.request([msg("user", "go")])
    run.records.response(n, tool_calls=[call("c1", "ls"), call("c2", "python -m fake_server.window --id w1-b"),
                                        call("c3", "python -m fake_server.window --id w1")])
    run.records.window("w1", [10])
    assert window_call(run.observation(), "w1") == (1, "c3")
    assert window_call(run.observation(), "w7") == (None, None)
