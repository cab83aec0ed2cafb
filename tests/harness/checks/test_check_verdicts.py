"""Every checker on hand-made runs: pass on a run that keeps the contract, fail with the
right evidence on each way of breaking it (one per failpoint that targets it), skipped when
the task did not exercise it."""

import json

import pytest

from .check_runs import (
    inbox_run,
    kill_at_next_request,
    kill_at_request,
    kill_in_tool,
    mid_file_refusal,
    stop_in_tool,
    stop_mid_stream,
    timeout_run,
    torn_tail_restart,
)
from harness.checks import run_check

MID_FILE_LOG = {"log": None, "log_error": "s-test.jsonl:3: unreadable line (not JSON)"}

# (check, run builder, faults, observation overrides, outcome, text the summary must hold)
CASES = [
    ("C1", stop_in_tool, (), {}, "pass", "each ended once"),
    ("C1", kill_in_tool, (), {}, "pass", "killed"),
    ("C1", kill_at_request, (), {}, "pass", "killed"),
    ("C1", stop_in_tool, ("double-settle",), {}, "fail", "turn 1 ended a second time (first at line 10)"),
    ("C1", stop_in_tool, ("no-settle",), {}, "fail", "turn 2 started while turn 1 was still open"),
    ("C2", kill_in_tool, (), {}, "pass", "left the file as it was"),
    ("C2", kill_in_tool, ("repair-writes-disk",), {}, "fail", "wrote its repair to the log"),
    ("C2", kill_in_tool, ("load-writes",), {}, "fail", "wrote its repair to the log"),
    ("C2", kill_in_tool, ("writes-on-load",), {}, "fail", "wrote its repair to the log"),
    ("C2", stop_in_tool, (), {}, "skipped", "never restarted"),
    ("C3", stop_in_tool, (), {}, "pass", "1 call(s) running at a Stop reported aborted; 1 stopped window tree(s) seen gone"),
    ("C3", timeout_run, (), {}, "pass", "1 call(s) running at a Stop reported aborted; 0 stopped window"),
    ("C3", stop_in_tool, ("tree-survives",), {}, "fail", "1 process(es) of window w1 outlived Stop: 503 (escapee)"),
    ("C3", stop_in_tool, ("slow-kill",), {}, "fail", "took 2.10 s to die after Stop"),
    ("C3", stop_in_tool, ("result-not-aborted",), {}, "fail", "its result says aborted=False"),
    ("C3", stop_in_tool, ("no-result",), {}, "fail", "has no tool_result"),
    ("C3", timeout_run, ("tree-survives",), {}, "fail", "outlived the turn that started them: 802 (term-ignorer)"),
    ("C3", timeout_run, ("not-aborted",), {}, "fail", "stop_requested (timeout)"),
    ("C3", stop_in_tool, ("tree-survives",), {"log": None}, "fail", "outlived Stop"),
    ("C3", stop_in_tool, (), {"log": None}, "unknown", "without a log reader"),
    ("C3", stop_mid_stream, (), {}, "skipped", "no tool ran"),
    ("C3", stop_in_tool, (), {"windows": ()}, "unknown", "no window observation shows its tree"),
    ("C4", kill_in_tool, (), {}, "pass", "balanced"),
    ("C4", kill_in_tool, ("no-repair",), {}, "fail", "request 2: message 3: tool call 'c1' has no tool result"),
    ("C4", kill_in_tool, ("drop-dangling-call",), {}, "fail", "tool call c1, issued before the kill, is missing"),
    ("C4", kill_in_tool, ("wrong-marker",), {}, "fail", "should be answered TOOL_OUTCOME_UNKNOWN…"),
    ("C4", kill_in_tool, ("late-tool-checkpoint",), {}, "fail", "c1 should be answered TOOL_OUTCOME_UNKNOWN"),
    ("C4", kill_in_tool, ("drop-dangling-call",), {"log": None}, "fail", "missing from the history"),
    ("C4", kill_in_tool, ("c1-finished",), {}, "pass", "balanced"),
    ("C4", kill_in_tool, ("c1-finished-but-marked",), {}, "fail",
     "tool call c1 finished before the kill, but is answered with a repair marker"),
    ("C4", stop_in_tool, (), {}, "skipped", "never killed"),
    ("C5", stop_mid_stream, (), {}, "pass", "kept and sent again"),
    ("C5", stop_in_tool, (), {}, "pass", "kept and sent again"),
    ("C5", stop_mid_stream, ("drop-text",), {}, "fail", "lost what was seen before Stop: 'The design has three layers: '"),
    ("C5", stop_mid_stream, ("no-flag",), {}, "fail", "not marked interrupted: true"),
    ("C5", stop_mid_stream, ("not-carried",), {}, "fail", "request 2 after the Stop does not carry the kept text"),
    ("C5", stop_mid_stream, ("continuation",), {}, "fail", "sent as a continuation"),
    ("C5", stop_in_tool, ("drop-text",), {}, "fail", "the text streamed before the tool ran was not kept"),
    ("C5", stop_mid_stream, (), {"log": None}, "pass", "no log reader"),
    ("C5", stop_mid_stream, ("not-carried",), {"log": None}, "fail", "does not carry the kept text"),
    ("C5", stop_mid_stream, ("not-exercised",), {}, "skipped", "no Stop arrived"),
    ("C6", inbox_run, (), {}, "pass", "2 queued item(s) delivered or canceled"),
    ("C6", inbox_run, ("no-cancel-record",), {}, "pass", "delivered or canceled"),
    ("C6", inbox_run, ("pending",), {}, "pass", "delivered or canceled"),
    ("C6", inbox_run, ("lose",), {}, "fail", "'Also look at the logs.' has no inbox_queued event"),
    ("C6", inbox_run, ("vanish",), {}, "fail", "inbox item q1 vanished: turn 2 started without delivering"),
    ("C6", inbox_run, ("cancel-unasked",), {}, "fail", "q2 was canceled though the user never withdrew it"),
    ("C6", inbox_run, ("canceled-but-sent",), {}, "fail", "q2 was canceled but still reached the model"),
    ("C6", inbox_run, ("unlisted",), {}, "fail", "marked delivered to turn 2, whose turn_started does not list it"),
    ("C6", inbox_run, ("not-sent",), {}, "fail", "q1 is marked delivered but its text reached no later model request"),
    ("C6", inbox_run, (), {"log": None}, "pass", "delivered or canceled"),
    ("C6", inbox_run, ("vanish",), {"log": None}, "fail", "1 queued input(s) never reached the model"),
    ("C6", stop_in_tool, (), {}, "skipped", "nothing was queued"),
    ("C7", kill_in_tool, (), {}, "pass", "continued the same session"),
    ("C7", torn_tail_restart, (), {}, "pass", "continued the same session"),
    ("C7", kill_in_tool, ("fork",), {}, "fail", "lacks the earlier user input 'Run the migration.': a blank fork"),
    ("C7", torn_tail_restart, ("rewrites-line",), {}, "fail", "line 2 was lost or changed across restart 1"),
    ("C7", mid_file_refusal, (), {}, "skipped", "never restarted on a readable session"),
    ("C8", stop_in_tool, (), {}, "pass", "1 headless exit code(s) matched"),
    ("C8", timeout_run, (), {}, "pass", "matched"),
    ("C8", mid_file_refusal, (), MID_FILE_LOG, "pass", "matched"),
    ("C8", stop_in_tool, ("exit-0",), {}, "fail", "(pid 4343) should exit 3 (it was stopped), not exit 0"),
    ("C8", timeout_run, ("exit-1",), {}, "fail", "should exit 3 (it timed out), not exit 1"),
    ("C8", timeout_run, ("overshoot",), {}, "fail", "exit 3.60 s after the 2.0 s timeout"),
    ("C8", timeout_run, ("early",), {}, "fail", "0.80 s before the 2.0 s timeout"),
    ("C8", stop_in_tool, ("error-settle",), {}, "fail", "exited 3 but its last turn settled error"),
    ("C8", kill_in_tool, (), {}, "skipped", "no headless run"),
    ("C9", stop_in_tool, (), {}, "pass", "nothing new started after 1 Stop"),
    ("C9", stop_mid_stream, (), {}, "pass", "nothing new started"),
    ("C9", timeout_run, (), {}, "pass", "nothing new started after 1 Stop"),
    ("C9", stop_in_tool, ("keep-going",), {}, "fail", "request 2 was sent"),
    ("C9", stop_in_tool, ("window-after-stop",), {}, "fail", "tool window w2 started"),
    ("C9", kill_in_tool, (), {}, "skipped", "no Stop"),
    ("C10", stop_in_tool, (), {}, "pass", "keeps the v1 format"),
    ("C10", torn_tail_restart, (), {}, "pass", "keeps the v1 format"),
    ("C10", mid_file_refusal, (), MID_FILE_LOG, "pass", "keeps the v1 format"),
    ("C10", torn_tail_restart, ("no-torn-record",), {}, "fail", "appended after a torn last line without"),
    ("C10", torn_tail_restart, ("wrong-offset",), {}, "fail", "cut at offset"),
    ("C10", torn_tail_restart, ("rewrites-line",), {}, "fail", "line 2 was lost or rewritten"),
    ("C10", mid_file_refusal, ("accepted",), MID_FILE_LOG, "fail", "damaged at line 3 exited 0, not 2"),
    ("C10", mid_file_refusal, ("unnamed",), MID_FILE_LOG, "fail", "does not name 3 and s-test.jsonl"),
    ("C10", mid_file_refusal, ("file-changed",), MID_FILE_LOG, "fail", "refusing the damaged log changed the file"),
    ("C10", stop_in_tool, (), {"log": None, "log_error": "s.jsonl:4: seq 5 where 4 was expected (sequence gap)"},
     "fail", "breaks the format: s.jsonl:4: seq 5 where 4"),
    ("C10", stop_in_tool, (), {"log": None}, "unknown", "no log reader"),
    ("C11", kill_at_request, (), {}, "pass", "1 kill(s) at checkpoints lost nothing"),
    ("C11", kill_in_tool, (), {}, "pass", "lost nothing"),
    ("C11", kill_at_next_request, (), {}, "pass", "lost nothing"),
    ("C11", kill_at_request, ("no-request-checkpoint",), {}, "fail", "holds no model_request for it"),
    ("C11", kill_in_tool, ("late-tool-checkpoint",), {}, "fail", "holds no tool_call for it"),
    ("C11", kill_at_next_request, ("no-step-settled",), {}, "fail", "step 1 of turn 1 has no step_settled"),
    ("C11", kill_at_next_request, ("no-result",), {}, "fail", "the result of tool call c1 is not on disk"),
    ("C11", stop_in_tool, (), {}, "skipped", "never killed"),
    ("C12", stop_mid_stream, (), {}, "pass", "settled as aborted/interrupted"),
    ("C12", stop_in_tool, (), {}, "pass", "settled"),
    ("C12", timeout_run, (), {}, "pass", "settled"),
    ("C12", stop_mid_stream, ("error-settle",), {}, "fail", "should settle aborted (user), not error"),
    ("C12", stop_in_tool, ("no-stop-requested",), {}, "fail", "has no stop_requested with source 'user'"),
    ("C12", stop_in_tool, ("exit-0",), {}, "fail", "should exit 3"),
    ("C12", stop_in_tool, (), {"log": None}, "pass", "exited 3"),
    ("C12", kill_in_tool, (), {}, "skipped", "no Stop"),
    ("A1", kill_in_tool, (), {}, "pass", "resumed"),
    ("A1", kill_in_tool, ("no-note",), {}, "fail", "lacks a note that the session resumed"),
    ("A1", stop_in_tool, (), {}, "skipped", "no model request followed a restart"),
    ("A2", kill_in_tool, (), {}, "pass", "are gone"),
    ("A2", kill_in_tool, ("tree-survives",), {}, "fail", "outlived the killed agent 4242 and its restart"),
    ("A2", stop_in_tool, (), {}, "skipped", "never killed while a tool ran"),
]


@pytest.mark.parametrize(
    "check, build, faults, overrides, outcome, says", CASES,
    ids=[f"{c[0]}-{c[1].__name__}-{'+'.join(c[2]) or 'clean'}{'-' + '-'.join(c[3]) if c[3] else ''}" for c in CASES],
)
def test_verdict(check, build, faults, overrides, outcome, says):
    obs = build(*faults).observation(**overrides)
    result = run_check(check, obs)
    assert result.outcome.value == outcome, json.dumps(result.to_json(), indent=1)
    assert says in result.evidence.summary, result.evidence.summary
    if outcome == "fail":
        assert result.evidence.items, "a failure must carry evidence items"


def test_every_checker_has_a_passing_and_a_failing_case():
    outcomes = {(c[0], c[4]) for c in CASES}
    from harness.checks import REGISTRY

    for check_id in REGISTRY:
        if check_id == "C13":
            continue  # test_no_secret_leaks.py
        assert (check_id, "pass") in outcomes and (check_id, "fail") in outcomes, check_id
        assert (check_id, "skipped") in outcomes or check_id in ("C1", "C10"), check_id  # see test_check_registry


def test_failure_evidence_points_at_the_fault():
    """Beyond the summary, the items name the log line, request, call or PID to re-check by hand."""
    items = run_check("C1", stop_in_tool("double-settle").observation()).evidence.items
    assert [(i["line"], i["type"], i["turn"]) for i in items] == [(11, "turn_ended", 1)]

    items = run_check("C3", stop_in_tool("tree-survives").observation()).evidence.items
    assert items[0]["window"] == "w1" and items[0]["survivors"] == [{"pid": 503, "role": "escapee"}]
    assert items[0]["tree"] == [501, 502, 503]

    items = run_check("C4", kill_in_tool("drop-dangling-call").observation()).evidence.items
    assert {(i["request"], i["call_id"]) for i in items} == {(2, "c1"), (2, "c2")}
    assert items[0]["messages"][-1] == "user: What happened to the migration?"

    items = run_check("C5", stop_mid_stream("no-flag").observation()).evidence.items
    assert items[0]["line"] == 5 and items[0]["type"] == "assistant_message"
    assert '"interrupted": false' in items[0]["excerpt"]

    items = run_check("C9", stop_in_tool("keep-going").observation()).evidence.items
    assert items[0]["request"] == 2 and items[0]["messages"][-1] == "tool: aborted for=c1"

    items = run_check("C11", kill_at_request("no-request-checkpoint").observation()).evidence.items
    assert items[0]["request"] == 1 and "holds no model_request" in items[0]["note"]

    items = run_check("C2", kill_in_tool("writes-on-load").observation()).evidence.items
    assert items[0]["type"] == "tool_result" and "only a repair on load would write" in items[0]["note"]

    items = run_check("C8", timeout_run("overshoot").observation()).evidence.items
    assert items[0]["returncode"] == 3 and items[0]["overshoot_ms"] == 3600.0
