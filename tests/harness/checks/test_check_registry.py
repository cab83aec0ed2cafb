"""The registry, the safe wrapper, and what log checks say when there is no readable log."""

import dataclasses

import pytest

from .check_runs import kill_in_tool, stop_in_tool
from harness.checks import REGISTRY, get_check, run_check, run_checks
from harness.checks.base import CheckSpec
from harness.checks.testing import Clock, LogBuilder, RunBuilder
from harness.model import Observation, Outcome, Tier

NAMES = {
    "C1": "turn_ends_exactly_once", "C2": "reload_repairs_in_memory_only", "C3": "pending_tool_calls_close",
    "C4": "next_request_is_balanced", "C5": "partial_work_is_kept", "C6": "inbox_items_never_vanish",
    "C7": "resume_continues_the_session", "C8": "exit_codes_tell_the_truth", "C9": "stop_means_stop",
    "C10": "log_format_holds", "C11": "checkpoints_are_durable", "C12": "own_cancel_is_not_an_error",
    "C13": "no_secret_leaks", "A1": "resume_note_is_sent", "A2": "tools_die_with_the_agent",
}
LOG_ONLY = ["C1", "C2", "C10"]


def test_registry_maps_every_contract_item_to_its_named_checker():
    assert {k: s.name for k, s in REGISTRY.items()} == NAMES
    assert list(REGISTRY)[:13] == [f"C{i}" for i in range(1, 14)]
    assert {k for k, s in REGISTRY.items() if s.observes == "B"} == {"C8", "C9", "C13", "A2"}
    assert {k for k, s in REGISTRY.items() if s.observes == "L"} == set(LOG_ONLY)
    assert REGISTRY["A1"].tier is Tier.ADVISORY and REGISTRY["C4"].tier is Tier.MANDATORY
    assert get_check("stop_means_stop") is REGISTRY["C9"]
    assert all(s.fn.__doc__ for s in REGISTRY.values())
    with pytest.raises(KeyError, match="unknown check 'C99'"):
        get_check("C99")


def test_wrapper_stamps_name_and_the_task_tier():
    result = run_check("C9", stop_in_tool().observation(), tier=Tier.INFORMATIONAL)
    assert (result.check, result.name, result.tier, result.outcome) == (
        "C9", "stop_means_stop", Tier.INFORMATIONAL, Outcome.PASS)
    results = run_checks(stop_in_tool().observation(), {"C1": Tier.MANDATORY, "A2": Tier.ADVISORY})
    assert [(r.check, r.tier) for r in results] == [("C1", Tier.MANDATORY), ("A2", Tier.ADVISORY)]
    assert len(run_checks(stop_in_tool().observation())) == len(REGISTRY)


def test_a_checker_that_raises_is_unknown_never_pass():
    def broken(obs: Observation):
        raise RuntimeError("evidence is inconsistent")

    spec = CheckSpec("C9", "stop_means_stop", "B", Tier.MANDATORY, broken)
    result = run_check(spec, stop_in_tool().observation())
    assert result.outcome is Outcome.UNKNOWN
    assert result.evidence.summary == "checker stop_means_stop raised RuntimeError: evidence is inconsistent"
    assert "in broken" in result.evidence.items[0]["traceback"][-1]


def test_a_real_checker_on_malformed_records_is_unknown():
    obs = stop_in_tool().observation()
    bad = dataclasses.replace(obs, records=obs.records + ({"kind": "request", "request": 9},))  # no mono_ns
    result = run_check("C9", bad)
    assert result.outcome is Outcome.UNKNOWN and "KeyError" in result.evidence.summary


def test_a_checker_returning_something_else_is_unknown():
    spec = CheckSpec("C1", "turn_ends_exactly_once", "L", Tier.MANDATORY, lambda obs: "pass")
    assert run_check(spec, stop_in_tool().observation()).outcome is Outcome.UNKNOWN


@pytest.mark.parametrize("check", LOG_ONLY + ["C11"])
def test_log_checks_without_a_reader_are_unknown(check):
    result = run_check(check, kill_in_tool().observation(log=None))
    assert result.outcome is Outcome.UNKNOWN and "no log reader" in result.evidence.summary


@pytest.mark.parametrize("check", ["C1", "C2", "C3"])
def test_log_checks_fail_with_the_readers_message(check):
    error = "/s/s-test.jsonl:4: unreadable line (not JSON: Expecting value)"
    result = run_check(check, kill_in_tool().observation(log=None, log_error=error))
    assert result.outcome is Outcome.FAIL
    assert error in result.evidence.summary


def test_log_deliberately_damaged_mid_file_is_not_held_against_other_checks():
    run = kill_in_tool()
    obs = run.observation(log=None, log_error="s.jsonl:3: unreadable line",
                          restarts=(dataclasses.replace(run.restarts[0], damage="mid-file"),))
    result = run_check("C1", obs)
    assert result.outcome is Outcome.SKIPPED and "judged by C10" in result.evidence.summary


def test_turn_left_open_without_a_kill_fails():
    run = RunBuilder()
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    result = run_check("C1", run.observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == "turn 1 never ended, and the agent was not killed while it ran"
    assert result.evidence.items[0]["line"] == 2


@pytest.mark.parametrize("fields, problem", [
    ({"reason": "cancelled"}, "turn 1 ended with reason 'cancelled', not one of"),
    ({"reason": "aborted", "source": "timeout"}, "turn 1 aborted with source 'timeout', not one of"),
])
def test_turn_end_reason_must_come_from_the_closed_set(fields, problem):
    run = RunBuilder()
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    run.log.event("turn_ended", turn=1, **fields)
    result = run_check("C1", run.observation())
    assert result.outcome is Outcome.FAIL and result.evidence.summary.startswith(problem)


def test_turn_ended_for_a_turn_never_started_fails():
    run = RunBuilder()
    run.log.event("turn_ended", turn=3, reason="completed")
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    run.log.event("turn_ended", turn=1, reason="completed")
    result = run_check("C1", run.observation())
    assert result.outcome is Outcome.FAIL and "turn_ended for turn 3, which is not the open turn" in result.evidence.summary


def test_empty_session_skips_c1():
    assert run_check("C1", RunBuilder().observation()).outcome is Outcome.SKIPPED


def test_event_fields_are_checked_by_c10():
    run = RunBuilder(log=LogBuilder(Clock()))
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    run.log.event("turn_ended", turn="1", reason="completed")
    result = run_check("C10", run.observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == "turn_ended.turn is str, not int"
    assert result.evidence.items[0]["line"] == 3


def test_kill_log_that_is_damaged_fails_c11():
    run = kill_in_tool()
    obs = run.observation(kills=(dataclasses.replace(run.kills[0], log_bytes=b"garbage\n{}\n"),))
    result = run_check("C11", obs)
    assert result.outcome is Outcome.FAIL and "the log left by the kill is damaged" in result.evidence.summary


def test_kill_without_captured_log_is_not_a_pass():
    run = kill_in_tool()
    obs = run.observation(kills=(dataclasses.replace(run.kills[0], log_bytes=None),))
    result = run_check("C11", obs)
    assert result.outcome is Outcome.SKIPPED and "not captured" in result.evidence.items[0]["note"]


def test_passing_results_carry_evidence_too():
    for check in ("C1", "C3", "C5", "C8", "C9", "C12"):
        result = run_check(check, stop_in_tool().observation())
        assert result.outcome is Outcome.PASS, (check, result.evidence.summary)
        assert result.evidence.items, check


def test_append_onto_a_torn_line_fails_c10():
    from harness.readers import read_contract_v1

    run = RunBuilder()
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    run.log.event("turn_ended", turn=1, reason="completed")
    torn = b'{"seq": 3, "type": "turn_sta'
    run.restart(damage="torn-tail", bytes_before=run.log.to_bytes(torn=torn))
    # one event written onto the torn bytes: the file still reads, ending in a longer torn line
    final = read_contract_v1(run.log.to_bytes(torn=torn + b'{"seq": 3, "type": "turn_started"}\n'))
    result = run_check("C10", run.observation(log=final))
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == "restart 1 appended onto the torn last line instead of cutting it"


def test_stop_in_a_tool_whose_step_streamed_no_text_skips_c5():
    obs = stop_in_tool().observation()
    silent = tuple({**r, "text": ""} if r["kind"] == "response" and r["request"] == 1 else r for r in obs.records)
    result = run_check("C5", dataclasses.replace(obs, records=silent))
    assert result.outcome is Outcome.SKIPPED and "no assistant text" in result.evidence.summary


def test_tree_gone_without_a_time_of_death_is_unknown_for_c3_and_fine_for_a2():
    obs = stop_in_tool().observation()
    untimed = dataclasses.replace(obs, windows=tuple(dataclasses.replace(w, gone_ns=None) for w in obs.windows))
    result = run_check("C3", untimed)
    assert result.outcome is Outcome.UNKNOWN and "when it died after Stop was not observed" in result.evidence.summary
    killed = kill_in_tool().observation()
    untimed = dataclasses.replace(killed, windows=tuple(dataclasses.replace(w, gone_ns=None) for w in killed.windows))
    result = run_check("A2", untimed)
    assert result.outcome is Outcome.PASS and result.evidence.items[0]["died"] == "by the end of the task"


def test_earlier_lines_rewritten_byte_for_byte_fail_c10_even_with_the_same_meaning():
    import json as json_module

    run = RunBuilder()
    run.log.event("turn_started", turn=1, input="hi", inbox=[])
    run.log.event("turn_ended", turn=1, reason="completed")
    run.restart()
    run.log.lines[1] = json_module.dumps(json_module.loads(run.log.lines[1]), separators=(",", ":")).encode()
    run.log.event("turn_started", turn=2, input="again", inbox=[])
    run.log.event("turn_ended", turn=2, reason="completed")
    run.restart()
    result = run_check("C10", run.observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == ("the log before restart 2 no longer starts with the lines written before "
                                       "restart 1: line 2 differs at byte 195")
