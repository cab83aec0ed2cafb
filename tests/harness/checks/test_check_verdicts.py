"""Every checker on hand-made runs: pass on a run that keeps the contract, fail with the
right evidence on each way of breaking it (one per failpoint that targets it), skipped or
unknown when the task did not exercise it — and, for a check with two halves, which half
decided."""

import dataclasses
import json

import pytest

from harness.checks import REGISTRY, run_check
from harness.contract import Observes
from harness.model import Capability
from tests.harness.checks.observations import RunBuilder

from .check_runs import (
    headless_runs,
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

BB = {"black_box": True}

# (check, run builder, faults, observation overrides, outcome, decided by, text the summary must hold)
CASES = [
    ("C1", stop_in_tool, (), {}, "pass", "log", "each ended once"),
    ("C1", kill_in_tool, (), {}, "pass", "log", "killed"),
    ("C1", kill_at_request, (), {}, "pass", "log", "killed"),
    ("C1", stop_in_tool, ("double-settle",), {}, "fail", "log", "turn 1 ended a second time (first at line 10)"),
    ("C1", stop_in_tool, ("no-settle",), {}, "fail", "log", "turn 2 started while turn 1 was still open"),
    ("C1", stop_in_tool, (), BB, "unknown", None, "no log reader"),
    # A process that died of its Stop signal left its turn open honestly; one that exited did not.
    ("C1", headless_runs, ("died-by-sigint",), {}, "pass", "log", "was open when the agent was killed"),
    ("C1", headless_runs, ("exit-130-open",), {}, "fail", "log", "turn 3 never ended, and the agent was not killed"),
    ("C1", mid_file_refusal, (), {}, "skipped", None, "judged by C10"),
    ("C2", kill_in_tool, (), {}, "pass", "log", "left the store as it was"),
    ("C2", kill_in_tool, ("unseen-load",), {}, "pass", "log", "left the store as it was"),
    ("C2", kill_in_tool, ("repair-writes-disk",), {}, "fail", "log", "which only a repair on load would write"),
    ("C2", kill_in_tool, ("load-writes",), {}, "fail", "log", "loading changed the store at restart 1: line 7"),
    ("C2", kill_in_tool, ("writes-on-load",), {}, "fail", "log", "which only a repair on load would write"),
    ("C2", kill_in_tool, (), BB, "unknown", None, "no log reader"),
    ("C2", stop_in_tool, (), {}, "skipped", None, "never restarted"),
    ("C3", stop_in_tool, (), {}, "pass", "both", "1 stopped window tree(s) seen gone, 1 stopped call(s) answered"),
    ("C3", stop_in_tool, (), BB, "pass", "black-box", "1 stopped window tree(s) seen gone, 1 stopped call(s) answered"),
    ("C3", timeout_run, (), {}, "pass", "log", "1 call(s) running at a Stop reported aborted in the log"),
    ("C3", stop_in_tool, ("tree-survives",), {}, "fail", "black-box", "1 process(es) of window w1 outlived Stop: 503"),
    ("C3", stop_in_tool, ("slow-kill",), {}, "fail", "black-box", "took 2.10 s to die after Stop"),
    ("C3", stop_in_tool, ("result-not-aborted",), {}, "fail", "log", "its result says aborted=False"),
    ("C3", stop_in_tool, ("no-result",), {}, "fail", "log", "has no tool_result"),
    ("C3", stop_in_tool, ("result-not-sent",), BB, "fail", "black-box", "carries no result for call c1"),
    ("C3", timeout_run, ("tree-survives",), {}, "fail", "black-box", "outlived the turn that started them: 802"),
    ("C3", timeout_run, ("not-aborted",), {}, "fail", "log", "stop_requested (timeout)"),
    ("C3", stop_in_tool, ("tree-survives",), BB, "fail", "black-box", "outlived Stop"),
    ("C3", stop_in_tool, ("no-follow-up",), BB, "unknown", None, "no model request followed the Stop"),
    ("C3", stop_in_tool, ("no-follow-up",), {}, "pass", "both", "reported aborted"),
    ("C3", stop_in_tool, ("no-window",), {}, "unknown", None, "no bash window opened"),
    ("C3", stop_mid_stream, (), {}, "skipped", None, "no tool ran"),
    ("C3", stop_in_tool, (), {"windows": ()}, "unknown", None, "no window observation shows its tree"),
    ("C4", kill_in_tool, (), {}, "pass", "both", "balanced"),
    ("C4", kill_in_tool, (), BB, "pass", "black-box", "balanced"),
    ("C4", kill_in_tool, ("no-repair",), {}, "fail", "black-box", "the server refused request 2, the first after"),
    ("C4", kill_in_tool, ("refused-and-quit",), {}, "fail", "black-box", "the run ended because the server refused"),
    ("C4", kill_in_tool, ("drop-dangling-call",), {}, "fail", "black-box", "tool call c1, known at kill 1"),
    ("C4", kill_in_tool, ("drop-dangling-call",), BB, "fail", "black-box", "missing from the history"),
    ("C4", kill_in_tool, ("wrong-marker",), {}, "pass", "both", "balanced"),
    ("C4", kill_in_tool, ("same-wording",), {}, "pass", "both", "balanced"),
    ("C4", kill_in_tool, ("declared-wording",), {}, "pass", "both", "balanced"),
    ("C4", kill_in_tool, ("c1-finished",), {}, "pass", "both", "balanced"),
    ("C4", kill_in_tool, ("second-kill",), {}, "pass", "both", "each of 2 kill(s) was balanced"),
    ("C4", kill_at_next_request, (), {}, "unknown", None, "no model request followed kill 1"),
    ("C4", stop_in_tool, (), {}, "skipped", None, "never killed"),
    ("C5", stop_mid_stream, (), {}, "pass", "both", "kept and sent again"),
    ("C5", stop_in_tool, (), {}, "pass", "both", "kept and sent again"),
    ("C5", stop_mid_stream, ("marker",), {}, "pass", "both", "kept and sent again"),
    ("C5", stop_mid_stream, ("marker",), BB, "pass", "black-box", "kept and sent again"),
    ("C5", stop_mid_stream, ("invented",), BB, "fail", "black-box", "adds 'andafourthlayer', which the model never"),
    ("C5", stop_mid_stream, ("drop-text",), {}, "fail", "both", "does not carry the kept text 'The design has three"),
    ("C5", stop_mid_stream, ("no-flag",), {}, "fail", "log", "not marked interrupted: true"),
    ("C5", stop_mid_stream, ("not-carried",), {}, "fail", "black-box", "request 2 after the Stop does not carry"),
    ("C5", stop_mid_stream, ("continuation",), {}, "fail", "black-box", "sent as a continuation"),
    ("C5", stop_in_tool, ("drop-text",), {}, "fail", "both", "does not carry the kept text 'Running it now.'"),
    ("C5", stop_mid_stream, (), BB, "pass", "black-box", "kept and sent again"),
    ("C5", stop_mid_stream, ("not-carried",), BB, "fail", "black-box", "does not carry the kept text"),
    ("C5", stop_mid_stream, ("no-follow-up",), {}, "unknown", None, "no model request followed Stop"),
    ("C5", stop_mid_stream, ("unseen",), {}, "unknown", None, "what the agent received before Stop"),
    ("C5", stop_mid_stream, ("not-exercised",), {}, "skipped", None, "no Stop arrived"),
    ("C6", inbox_run, (), {}, "pass", "both", "2 queued item(s) delivered or canceled"),
    ("C6", inbox_run, ("no-cancel-record",), {}, "pass", "both", "delivered or canceled"),
    ("C6", inbox_run, ("pending",), {}, "pass", "log", "delivered or canceled"),
    ("C6", inbox_run, ("pending",), BB, "unknown", None, "not delivered yet"),
    ("C6", inbox_run, ("lose",), {}, "fail", "log", "'Also look at the logs.' has no inbox_queued event"),
    ("C6", inbox_run, ("vanish",), {}, "fail", "log", "q1 vanished: turn 2 started without delivering"),
    ("C6", inbox_run, ("cancel-unasked",), {}, "fail", "log", "q2 was canceled though the user never withdrew it"),
    ("C6", inbox_run, ("canceled-but-sent",), {}, "fail", "black-box", "q2 was canceled but still reached the model"),
    ("C6", inbox_run, ("unlisted",), {}, "fail", "log", "marked delivered to turn 2, whose turn_started does not"),
    ("C6", inbox_run, ("not-sent",), {}, "fail", "log", "is marked delivered but its text reached no later"),
    ("C6", inbox_run, (), BB, "pass", "black-box", "delivered or canceled"),
    ("C6", inbox_run, ("vanish",), BB, "fail", "black-box", "1 queued input(s) never reached the model"),
    ("C6", stop_in_tool, (), {}, "skipped", None, "nothing was queued"),
    ("C7", kill_in_tool, (), {}, "pass", "both", "continued the same session"),
    ("C7", kill_in_tool, (), BB, "pass", "black-box", "continued the same session"),
    ("C7", torn_tail_restart, (), {}, "pass", "both", "continued the same session"),
    ("C7", kill_at_request, (), {}, "pass", "both", "continued the same session"),
    ("C7", kill_at_request, ("lost-message",), BB, "fail", "black-box", "lacks the earlier user input"),
    ("C7", kill_in_tool, ("fork",), {}, "fail", "both", "lacks the earlier user input 'Run the migration.': a blank"),
    ("C7", kill_in_tool, ("unresumable",), {}, "fail", "black-box", "did not resume the session: the agent exited 1"),
    ("C7", kill_in_tool, ("unresumable",), BB, "fail", "black-box", "did not resume"),
    ("C7", kill_in_tool, ("lost-history",), {}, "fail", "log", "the store at the end lost what it held before restart 1: line 3"),
    ("C7", torn_tail_restart, ("rewrites-line",), {}, "fail", "log", "the store at the end lost what it held before restart 1: line 2"),
    ("C7", mid_file_refusal, (), {}, "skipped", None, "never restarted on a readable session"),
    ("C8", stop_in_tool, (), {}, "pass", "black-box", "1 headless exit code(s) matched"),
    ("C8", timeout_run, (), {}, "pass", "black-box", "matched"),
    ("C8", mid_file_refusal, (), {}, "pass", "black-box", "matched"),
    ("C8", headless_runs, (), {}, "pass", "black-box", "3 headless exit code(s) matched"),
    ("C8", headless_runs, ("max-tokens",), {}, "pass", "black-box", "3 headless exit code(s) matched"),
    ("C8", headless_runs, ("max-tokens",), BB, "fail", "black-box", "(pid 5001) should exit 0"),
    ("C8", headless_runs, ("exit-130",), {}, "pass", "black-box", "1 non-strictly: exit 130 (128 + SIGINT)"),
    ("C8", headless_runs, ("died-by-sigint",), {}, "pass", "black-box", "non-strictly: died by SIGINT"),
    ("C8", headless_runs, ("declared-130",), {}, "pass", "black-box", "2 non-strictly: exit 1, the agent's declared"),
    ("C8", headless_runs, ("declared-130", "stopped-exit-0"), {}, "fail", "black-box", "not exit 0, which says it "
     "completed"),
    ("C8", headless_runs, ("declared-1-for-both",), {}, "fail", "black-box", "cannot count instead: it exits 1 both "
     "on an error and on a Stop"),
    ("C8", stop_in_tool, ("exit-0",), {}, "fail", "black-box", "(pid 4343) should exit 3 (it was stopped), not exit"),
    ("C8", timeout_run, ("exit-1",), {}, "fail", "black-box", "should exit 3 (it timed out), not exit 1"),
    ("C8", timeout_run, ("overshoot",), {}, "fail", "black-box", "exit 3.60 s after the 2.0 s timeout"),
    ("C8", timeout_run, ("early",), {}, "fail", "black-box", "0.80 s before the 2.0 s timeout"),
    ("C8", stop_in_tool, ("error-settle",), {}, "fail", "black-box", "exited 3 but its last turn settled error"),
    ("C8", kill_in_tool, (), {}, "skipped", None, "no headless run"),
    ("C9", stop_in_tool, (), {}, "pass", "black-box", "nothing new started after 1 Stop"),
    ("C9", stop_mid_stream, (), {}, "pass", "black-box", "nothing new started"),
    ("C9", timeout_run, (), {}, "pass", "black-box", "nothing new started after 1 Stop"),
    ("C9", stop_in_tool, ("keep-going",), {}, "fail", "black-box", "request 2 was sent"),
    ("C9", stop_in_tool, ("window-after-stop",), {}, "fail", "black-box", "tool window w2 started"),
    ("C9", kill_in_tool, (), {}, "skipped", None, "no Stop"),
    ("C10", stop_in_tool, (), {}, "pass", "log", "keeps its format"),
    ("C10", torn_tail_restart, (), {}, "pass", "log", "keeps its format"),
    ("C10", kill_in_tool, (), {}, "pass", "log", "keeps its format"),
    ("C10", mid_file_refusal, (), {}, "pass", "both", "keeps its format"),
    ("C10", torn_tail_restart, ("no-torn-record",), {}, "fail", "log", "appended after a torn last line without"),
    ("C10", torn_tail_restart, ("wrong-offset",), {}, "fail", "log", "cut at offset"),
    ("C10", torn_tail_restart, ("rewrites-line",), {}, "fail", "log", "the store at the end lost what it held before restart 1: line 2"),
    ("C10", kill_in_tool, ("lost-history",), {}, "fail", "log", "the store at the end lost what it held after kill 1: line 3"),
    ("C10", mid_file_refusal, ("accepted",), {}, "fail", "black-box", "damaged at line 3 exited 0, not 2"),
    ("C10", mid_file_refusal, ("unnamed",), {}, "fail", "black-box", "does not name 3 and s-test.jsonl"),
    ("C10", mid_file_refusal, ("file-changed",), {}, "fail", "log", "refusing the damaged log changed the store"),
    ("C10", mid_file_refusal, ("unseen",), {}, "unknown", None, "whether it was left untouched is not known"),
    ("C10", stop_in_tool, (), {"log": None, "log_error": "s.jsonl:4: seq 5 where 4 was expected (sequence gap)"},
     "fail", "log", "breaks the format: s.jsonl:4: seq 5 where 4"),
    ("C10", stop_in_tool, (), BB, "unknown", None, "no log reader"),
    ("C11", kill_at_request, (), {}, "pass", "both", "1 kill(s) at checkpoints lost nothing"),
    ("C11", kill_at_request, (), BB, "pass", "black-box", "lost nothing"),
    ("C11", kill_at_request, ("no-restart",), {}, "pass", "log", "lost nothing"),
    ("C11", kill_at_request, ("no-restart",), BB, "unknown", None, "no restart followed by a request"),
    ("C11", kill_in_tool, (), {}, "pass", "both", "lost nothing"),
    ("C11", kill_in_tool, ("no-capture",), {}, "pass", "black-box", "lost nothing"),
    ("C11", kill_at_next_request, (), {}, "pass", "log", "lost nothing"),
    ("C11", kill_at_request, ("no-request-checkpoint",), {}, "fail", "log", "holds no model_request for it"),
    ("C11", kill_at_request, ("lost-message",), BB, "fail", "black-box", "lacks the user's message 'Build the"),
    # The agent's own wrapping of the user's words (aider's edit rules) need not be durable: the words must.
    ("C11", kill_at_request, ("wrapped-message",), BB, "pass", "black-box", "lost nothing"),
    ("C11", kill_in_tool, ("late-tool-checkpoint",), {}, "fail", "log", "holds no tool_call for it"),
    ("C11", kill_in_tool, ("drop-dangling-call",), BB, "fail", "black-box", "lacks tool call c1, durable since window"),
    ("C11", kill_at_next_request, ("no-step-settled",), {}, "fail", "log", "step 1 of turn 1 has no step_settled"),
    ("C11", kill_at_next_request, ("no-result",), {}, "fail", "log", "the result of tool call c1 is not in the store"),
    ("C11", stop_in_tool, (), {}, "skipped", None, "never killed"),
    ("C12", stop_mid_stream, (), {}, "pass", "log", "settled as aborted/interrupted"),
    ("C12", stop_in_tool, (), {}, "pass", "both", "settled"),
    ("C12", stop_in_tool, (), BB, "pass", "black-box", "settled"),
    ("C12", timeout_run, (), {}, "pass", "both", "settled"),
    ("C12", stop_mid_stream, ("error-settle",), {}, "fail", "log", "should settle aborted (user), not error"),
    ("C12", stop_in_tool, ("error-settle",), BB, "fail", "black-box", "not error as the driver saw it"),
    ("C12", stop_in_tool, ("no-stop-requested",), {}, "fail", "log", "has no stop_requested with source 'user'"),
    ("C12", stop_in_tool, ("exit-0",), {}, "pass", "both", "settled"),  # the exit code is C8's, counted once
    ("C12", stop_mid_stream, (), BB, "unknown", None, "was not seen"),
    ("C12", kill_in_tool, (), {}, "skipped", None, "no Stop"),
    ("C12", headless_runs, ("died-by-sigint",), BB, "pass", "black-box", "settled as aborted"),
    ("C14", kill_in_tool, (), {}, "pass", "both", "2 tool call(s) known at 1 kill(s) answered"),
    ("C14", kill_in_tool, (), BB, "unknown", None, "whether it had started is not known"),
    ("C14", kill_in_tool, ("declared-wording",), {}, "pass", "both", "answered with what was known"),
    ("C14", kill_in_tool, ("same-wording",), {}, "fail", "log", "answered alike, '[Tool execution was interrupted]'"),
    ("C14", kill_in_tool, ("same-wording",), BB, "unknown", None, "is answered '[Tool execution was interrupted]'"),
    ("C14", kill_in_tool, ("declared-same-wording",), {}, "fail", "both", "declares one wording for both"),
    ("C14", kill_in_tool, ("wrong-marker",), {}, "unknown", None, "declares no wording of its own"),
    ("C14", kill_in_tool, ("claims-never-ran",), BB, "fail", "black-box", "had started (window w1 opened before the"),
    ("C14", kill_in_tool, ("late-tool-checkpoint",), {}, "fail", "both", "had started"),
    ("C14", kill_in_tool, ("c1-finished",), {}, "pass", "log", "answered with what was known"),
    ("C14", kill_in_tool, ("c1-finished-but-marked",), {}, "fail", "log", "finished before the kill"),
    ("C14", kill_in_tool, ("no-repair",), {}, "unknown", None, "C4 judges it"),
    ("C14", kill_in_tool, ("second-kill",), {}, "pass", "both", "4 tool call(s) known at 2 kill(s) answered"),
    # A repair the first restart wrote to disk, sent again after a second kill (Claude Code 2.1.332).
    ("C14", kill_in_tool, ("repair-writes-disk", "second-kill"), {}, "pass", "both",
     "4 tool call(s) known at 2 kill(s) answered"),
    ("C14", kill_in_tool, ("second-kill-rewrites-repair",), {}, "fail", "black-box",
     "tool call c2 was answered 'TOOL_NOT_STARTED: never ran.' before the kill (carried in request 3), but is now"),
    ("C14", kill_at_request, (), {}, "skipped", None, "no tool call"),
    ("C14", stop_in_tool, (), {}, "pass", "both", "1 tool call(s) ended by a Stop or timeout answered as having run"),
    ("C14", stop_mid_stream, (), {}, "skipped", None, "never killed, and no Stop or timeout ended a running tool"),
    ("A1", kill_in_tool, (), {}, "pass", "both", "resumed"),
    ("A1", kill_in_tool, ("no-note",), {}, "fail", "black-box", "lacks a note that the session resumed"),
    ("A1", stop_in_tool, (), {}, "skipped", None, "no model request followed a restart"),
    ("A2", kill_in_tool, (), {}, "pass", "black-box", "are gone"),
    ("A2", kill_in_tool, ("tree-survives",), {}, "fail", "black-box", "outlived the killed agent 4242 and its restart"),
    ("A2", stop_in_tool, (), {}, "skipped", None, "never killed while a tool ran"),
    ("A3", headless_runs, (), {}, "pass", "black-box", "under the contract's convention"),
    ("A3", headless_runs, ("exit-130",), {}, "pass", "black-box", "under the contract's convention"),
    ("A3", headless_runs, ("declared-130",), {}, "pass", "black-box", "under the agent's declared convention"),
    ("A3", headless_runs, ("stopped-exit-0",), {}, "fail", "black-box", "it was stopped, but exited 0"),
    ("A3", headless_runs, ("error-exit-0",), {}, "fail", "black-box", "its turn was expected to fail, but it exited 0"),
    ("A3", kill_in_tool, (), {}, "skipped", None, "no stopped run"),
]


@pytest.mark.parametrize(
    "check, build, faults, overrides, outcome, decided, says", CASES,
    ids=[f"{c[0]}-{c[1].__name__}-{'+'.join(c[2]) or 'clean'}{'-' + '-'.join(c[3]) if c[3] else ''}" for c in CASES],
)
def test_verdict(check, build, faults, overrides, outcome, decided, says):
    obs = build(*faults).observation(**overrides)
    result = run_check(check, obs)
    assert result.outcome.value == outcome, json.dumps(result.to_json(), indent=1)
    assert says in result.evidence.summary, result.evidence.summary
    assert (result.decided_by.value if result.decided_by else None) == decided, result.to_json()
    if outcome in ("fail", "pass"):
        assert result.evidence.items, "a verdict must carry evidence items"


def test_every_checker_has_a_passing_and_a_failing_case():
    outcomes = {(c[0], c[4]) for c in CASES}
    for check_id in REGISTRY:
        if check_id == "C13":
            continue  # test_no_secret_leaks.py
        assert (check_id, "pass") in outcomes and (check_id, "fail") in outcomes, check_id
        assert {(check_id, "skipped"), (check_id, "unknown")} & outcomes, check_id


def test_every_two_halved_check_is_decided_by_its_black_box_half_without_a_reader():
    """A B+L check has a case where, with no reader at all, its black-box half decides."""
    black_box = {c[0] for c in CASES if c[3].get("black_box") and c[4] in ("pass", "fail") and c[5] == "black-box"}
    halved = {k for k, s in REGISTRY.items() if s.observes is Observes.BOTH and not s.tier.value == "advisory"}
    assert halved - black_box == set()


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

    items = run_check("C4", kill_in_tool("no-repair").observation()).evidence.items
    assert "did not have response messages: c1, c2" in items[0]["error"] and items[0]["status"] == 400

    items = run_check("C5", stop_mid_stream("no-flag").observation()).evidence.items
    assert items[0]["line"] == 5 and items[0]["type"] == "assistant_message"
    assert '"interrupted": false' in items[0]["excerpt"]

    items = run_check("C7", kill_in_tool("unresumable").observation()).evidence.items
    assert items[0]["returncode"] == 1 and "No conversation found" in items[0]["stderr_tail"]
    assert items[0]["awaited"] == "request 2" and items[0]["records"]

    items = run_check("C9", stop_in_tool("keep-going").observation()).evidence.items
    assert items[0]["request"] == 2 and items[0]["messages"][-1] == "tool: aborted for=c1"

    items = run_check("C11", kill_at_request("no-request-checkpoint").observation()).evidence.items
    assert items[0]["request"] == 1 and "holds no model_request" in items[0]["note"]

    items = run_check("C2", kill_in_tool("writes-on-load").observation()).evidence.items
    assert items[0]["type"] == "tool_result" and "only a repair on load would write" in items[0]["note"]

    items = run_check("C8", timeout_run("overshoot").observation()).evidence.items
    assert items[0]["returncode"] == 3 and items[0]["overshoot_ms"] == 3600.0

    items = run_check("C12", stop_in_tool().observation(black_box=True)).evidence.items
    settled = [i for i in items if "settlement" in i]
    assert settled == [{"settlement": "screen: [turn ended: aborted (user)]", "reason": "aborted", "source": "user",
                        "stop": "signal:SIGINT"}]
    assert {"log_half": "not judged", "why": "no log reader for this agent, so its log cannot be read"} in items

    items = run_check("C14", kill_in_tool("same-wording").observation()).evidence.items
    assert (items[0]["call_id"], items[0]["known"], items[0]["other"]["call_id"], items[0]["other"]["known"]) == (
        "c1", "started", "c2", "not started")


def test_one_exit_code_is_failed_once():
    """A stopped run that exits 0 fails C8; C12 does not fail again for that exit code."""
    obs = stop_in_tool("exit-0").observation(black_box=True)
    assert run_check("C8", obs).outcome.value == "fail"
    c12 = run_check("C12", obs)
    assert c12.outcome.value == "pass" and c12.decided_by.value == "black-box"  # the driver saw aborted (user)
    no_settlement = stop_in_tool("exit-0").observation(black_box=True, settlements=())
    c12 = run_check("C12", no_settlement)
    assert c12.outcome.value == "unknown"
    assert any("C8's to judge" in str(i.get("note")) for i in c12.evidence.items)


def test_the_repair_in_the_agents_declared_wording():
    """Balanced in the agent's own declared wording: C4 passes, C14 judges the declared wording."""
    obs = kill_in_tool("declared-wording").observation()
    assert run_check("C4", obs).outcome.value == "pass"
    c14 = run_check("C14", obs)
    assert c14.outcome.value == "pass"
    assert {(i["call_id"], i["says"]) for i in c14.evidence.items if "says" in i} == {
        ("c1", "outcome unknown"), ("c2", "not started")}
    swapped = kill_in_tool("declared-wording").observation()
    swapped = type(swapped)(**{**swapped.__dict__, "conventions": type(swapped.conventions)(
        repair_outcome_unknown="[not started", repair_not_started="[outcome unknown")})
    c14 = run_check("C14", swapped)
    assert c14.outcome.value == "fail" and "but its result says not started" in c14.evidence.summary


def test_undeclared_wording_for_one_class_is_unknown_and_not_for_want_of_a_reader():
    result = run_check("C14", kill_in_tool("wrong-marker").observation())
    assert result.outcome.value == "unknown" and not result.needs_reader
    assert "'TOOL_FAILED: interrupted'" in result.evidence.summary


def test_a_restart_on_a_damaged_log_that_ran_on_is_said_so():
    """Claude Code's TUI restarted on a log damaged mid-file showed its prompt and ran on until
    the harness ended it: the failure says so, not "exited None"."""
    run = mid_file_refusal()
    run.exits[-1] = dataclasses.replace(run.exits[-1], returncode=None, signal=9)
    verdict = run_check("C10", run.observation())
    assert verdict.outcome.value == "fail"
    assert "None" not in verdict.evidence.summary
    assert "never exited on its own" in verdict.evidence.summary, verdict.evidence.summary


class _Untimed:
    """A reader as it is, but for a store that records no monotonic times (opencode's)."""

    def __init__(self, reader):
        self._reader = reader
        self.capabilities = reader.capabilities - {Capability.MONO_TIMES}

    def __getattr__(self, name):
        return getattr(self._reader, name)


def test_a_turn_open_in_the_store_the_kill_left_was_killed_while_open_without_mono_times():
    """opencode's store has no monotonic times; a turn the capture right after the SIGKILL shows
    started and not ended was open when the agent died: C1 passes on that, not unknown."""
    obs = kill_in_tool().observation()
    untimed = dataclasses.replace(obs, log_format=_Untimed(obs.log_format))
    verdict = run_check("C1", untimed)
    assert verdict.outcome.value == "pass", verdict.evidence
    never_killed = stop_in_tool("no-settle").observation()
    untimed_never_killed = dataclasses.replace(never_killed, log_format=_Untimed(never_killed.log_format))
    assert run_check("C1", untimed_never_killed).outcome.value == "fail"


def test_opencode_exit_codes_under_its_profile_tell_the_outcomes_apart():
    """opencode 1.18.33 exits 0 when completed, 1 on a provider error and dies of SIGINT on a
    Stop: its error exit is its own truthful code (C8 non-strict), not a failure for want of a
    declared Stop code."""
    from harness.model import Conventions
    from harness.profiles import load_profile

    run = headless_runs("declared-1-for-both", "died-by-sigint")
    run.conventions = Conventions(exit_codes=dict(load_profile("opencode").exit_codes))
    verdict = run_check("C8", run.observation())
    assert verdict.outcome.value == "pass", verdict.evidence
    assert verdict.non_strict


def test_a_turn_whose_process_died_of_the_stop_signal_was_open_then_without_mono_times():
    """opencode dies of SIGINT on a Stop and its store has no monotonic times: the stopped
    turn, the last its process received, was open when the process died — C1 passes."""
    obs = headless_runs("died-by-sigint").observation()
    untimed = dataclasses.replace(obs, log_format=_Untimed(obs.log_format))
    verdict = run_check("C1", untimed)
    assert verdict.outcome.value == "pass", verdict.evidence
    # A turn left open while its process went on to the next input is no crash record.
    lived_on = stop_in_tool("no-settle")
    lived_on.exit("completed", None, started_ns=lived_on.inputs[0].mono_ns - 1, signal=9)
    obs = lived_on.observation()
    assert run_check("C1", dataclasses.replace(obs, log_format=_Untimed(obs.log_format))).outcome.value != "pass"


def test_a_refusal_with_the_agents_own_error_code_passes_c10_non_strictly():
    """opencode refuses with exit 1, its declared error code (0 / 1 / death by SIGINT): C10 takes
    it as C8 does, non-strictly, and still fails a convention that cannot tell a Stop apart."""
    from harness.model import Conventions

    run = mid_file_refusal()
    run.exits[-1] = dataclasses.replace(run.exits[-1], returncode=1)
    run.conventions = Conventions(exit_codes={"completed": 0, "error": 1, "aborted": 130, "interrupted": 130})
    verdict = run_check("C10", run.observation())
    assert verdict.outcome.value == "pass" and verdict.non_strict, verdict.evidence
    run.conventions = Conventions(exit_codes={"completed": 0, "error": 1, "aborted": 1, "interrupted": 1})
    assert run_check("C10", run.observation()).outcome.value == "fail"


def test_a_refusal_with_the_contracts_own_code_passes_c10_strictly_whatever_is_declared():
    """Exit 2 is the contract's code for a refusal: an agent that also declares 2 for an error
    (the reference agent does) passes strictly, never non-strictly."""
    from harness.model import Conventions

    run = mid_file_refusal()
    assert run.exits[-1].returncode == 2
    run.conventions = Conventions(exit_codes={"completed": 0, "error": 2, "aborted": 3, "interrupted": 3})
    verdict = run_check("C10", run.observation())
    assert verdict.outcome.value == "pass" and not verdict.non_strict, verdict.evidence


def test_a_run_that_ended_before_its_watchdog_is_not_judged_as_timed_out():
    """A headless run given CI's watchdog that exits 0 before the watchdog falls due was never
    timed out: exit 0 tells its completed turn truthfully (C8, A3); that it never reached the
    task's window is the run's agent failure, not an exit-code lie. The watchdog that did reach a
    running turn is judged as before."""
    def watchdog_run(exercised: bool) -> RunBuilder:
        run = RunBuilder()
        run.user("Run the long job.")
        started = run.clock.tick()
        ended = None if exercised else run.clock.tick()  # exited before the watchdog fell due
        run.stop("other", exercised=exercised, source="timeout", how="watchdog:SIGTERM", by="watchdog")
        run.exit("timeout", 0, started_ns=started, ended_ns=ended or run.clock.tick())
        return run

    early = watchdog_run(exercised=False).observation(black_box=True)
    c8 = run_check("C8", early)
    assert c8.outcome.value == "pass", c8.evidence
    assert "ended before its Stop or timeout" in c8.evidence.items[0]["note"]
    assert run_check("A3", early).outcome.value != "fail"
    timed_out = run_check("C8", watchdog_run(exercised=True).observation(black_box=True))
    assert timed_out.outcome.value == "fail" and "should exit 3 (it timed out), not exit 0" in timed_out.evidence.summary
