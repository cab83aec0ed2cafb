"""C14 judges every interruption that ends a running tool — a Stop, a timeout, a CI watchdog
— not only kills: a call whose window ran is never answered as if it never ran, was
rejected, or was the user's refusal."""

from __future__ import annotations

import pytest

from harness.checks import run_check
from harness.model import Outcome, WindowObservation
from tests.harness.checks.observations import RunBuilder, call, msg, with_conventions

from .check_runs import _answered_turn, _first_request

ABORTED = "[aborted by Stop: the command's whole process tree was killed]"
# What Claude Code's -p mode sends and writes after a Stop in a running tool.
REFUSED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
           "edit, the new_string was NOT written to the file). STOP what you are doing.")


def stopped_in_tool(answer: str, *, logged: str | None = None, rejected: bool = False, source: str = "user",
                    follow_up: bool = True) -> RunBuilder:
    """Stop (or a timeout) while window w1 runs call c1; the log closes c1 with ``logged`` (the
    answer, unless given), the next request answers it ``answer``."""
    run = RunBuilder()
    history, n1 = _first_request(run, "Run the migration.")
    c1 = call("c1", "python -m fake_server.window --id w1")
    run.records.response(n1, text="Running it now.", tool_calls=[c1])
    run.records.stream(n1, ["Running it now."])
    run.log.event("assistant_message", turn=1, step=1, text="Running it now.", tool_calls=[c1],
                  finish_reason="tool_calls", interrupted=False)
    run.log.event("tool_call", turn=1, step=1, call_id="c1", name="bash", arguments={"command": "w1"})
    run.log.event("tool_started", turn=1, call_id="c1", pid=501, pgid=501)
    run.records.window("w1", [501])
    stop = run.stop("tool", window="w1", source=source, how="signal:SIGINT" if source == "user" else "watchdog")
    run.log.event("stop_requested", turn=1, source=source)
    extra = {"rejected": True} if rejected else {}
    run.log.event("tool_result", turn=1, call_id="c1", output=logged if logged is not None else answer,
                  exit_code=None, aborted=not rejected, **extra)
    run.log.event("step_settled", turn=1, step=1)
    run.log.event("turn_ended", turn=1, reason="aborted" if source == "user" else "interrupted",
                  **({"source": source} if source == "user" else {}))
    run.windows.append(WindowObservation("w1", ({"pid": 501, "role": "node"},), stop_ns=stop.mono_ns,
                                         gone_ns=stop.mono_ns + 40_000_000))
    if follow_up:
        _answered_turn(run, 2, history + [msg("assistant", "Running it now.", [c1]),
                                          msg("tool", answer, tool_call_id="c1")], "What happened?", "Stopped.")
    return run


def test_a_stopped_call_answered_with_what_happened_passes_on_both_halves():
    verdict = run_check("C14", stopped_in_tool(ABORTED).observation())
    assert verdict.outcome is Outcome.PASS, verdict.evidence
    assert verdict.decided_by is not None and verdict.decided_by.value == "both"


@pytest.mark.parametrize("answer", [REFUSED, "Command not run: cancelled.", "TOOL_NOT_STARTED: never ran."])
def test_a_stopped_call_answered_as_never_run_or_refused_fails(answer):
    verdict = run_check("C14", stopped_in_tool(answer, logged=ABORTED).observation(black_box=True))
    assert verdict.outcome is Outcome.FAIL, verdict.evidence
    assert "window w1" in verdict.evidence.summary and "c1" in verdict.evidence.summary


def test_a_stopped_call_logged_as_the_users_refusal_fails_on_the_log():
    verdict = run_check("C14", stopped_in_tool(ABORTED, logged="User rejected tool use", rejected=True,
                                               follow_up=False).observation())
    assert verdict.outcome is Outcome.FAIL, verdict.evidence
    assert verdict.decided_by is not None and verdict.decided_by.value == "log"
    assert "refus" in verdict.evidence.summary


def test_a_timeout_that_ended_a_tool_is_judged_too():
    run = stopped_in_tool("TOOL_NOT_STARTED: the command did not run", source="timeout", follow_up=True)
    verdict = run_check("C14", run.observation())
    assert verdict.outcome is Outcome.FAIL, verdict.evidence
    assert "timeout" in verdict.evidence.summary


def test_with_nothing_to_read_a_stopped_call_is_unknown_never_a_pass():
    verdict = run_check("C14", stopped_in_tool(ABORTED, follow_up=False).observation(black_box=True))
    assert verdict.outcome is Outcome.UNKNOWN, verdict.evidence
    assert verdict.needs_reader


# What Codex 0.171.0 answers and writes for a call a Stop (SIGINT) ended in window w1.
CODEX_STOPPED = "Wall time: 0.1 seconds\naborted by user"


def test_codex_answer_to_a_stopped_call_passes_under_its_profile():
    """Its profile declares "aborted" as its outcome-unknown wording: an aborted answer to a
    call that ran is what the contract asks after a Stop."""
    from harness.profiles import load_profile

    profile = load_profile("codex")
    obs = with_conventions(stopped_in_tool(CODEX_STOPPED).observation(),
                           repair_outcome_unknown=profile.repair_outcome_unknown,
                           repair_not_started=profile.repair_not_started)
    verdict = run_check("C14", obs)
    assert verdict.outcome is Outcome.PASS, verdict.evidence


def test_one_declared_wording_for_both_classes_is_an_aborted_answer_after_a_stop():
    """A profile that declares one wording for both repairs makes every such answer match both;
    after a Stop it still only says the call was cut off, which passes (the one wording fails
    C14 where a kill leaves both classes to tell apart)."""
    obs = with_conventions(stopped_in_tool("aborted").observation(), repair_outcome_unknown="aborted",
                           repair_not_started="aborted")
    verdict = run_check("C14", obs)
    assert verdict.outcome is Outcome.PASS, verdict.evidence
    both = with_conventions(stopped_in_tool("aborted: TOOL_NOT_STARTED").observation(),
                            repair_outcome_unknown="aborted", repair_not_started="aborted")
    assert run_check("C14", both).outcome is Outcome.FAIL


def test_opencode_repair_of_a_call_killed_while_it_ran_is_judged_under_its_profile():
    """opencode 1.18.33 resumed after a SIGKILL in window w1 answers the call
    '[Tool execution was interrupted]': its profile declares that as its outcome-unknown
    wording, so C14 decides (pass) instead of leaving the run undecided."""
    from harness.model import Conventions
    from harness.profiles import load_profile

    run = RunBuilder()
    c1 = call("call_7ab6b9000001", "python -m fake_server.window --id w1")
    run.user("Run the migration.")
    n1 = run.records.request([msg("user", "Run the migration.")])
    run.records.response(n1, text="Running the migration.", tool_calls=[c1])
    run.records.window("w1", [27042, 27046])
    run.kill("window-opened")
    run.restart()
    run.user("The agent crashed. What happened to the migration?")
    run.records.request([msg("user", "Run the migration."), msg("assistant", "Running the migration.", [c1]),
                         msg("tool", "[Tool execution was interrupted]", tool_call_id=c1["id"]),
                         msg("user", "The agent crashed. What happened to the migration?")])
    profile = load_profile("opencode")
    run.conventions = Conventions(repair_outcome_unknown=profile.repair_outcome_unknown,
                                  repair_not_started=profile.repair_not_started)
    verdict = run_check("C14", run.observation(black_box=True))
    assert verdict.outcome is Outcome.PASS, verdict.evidence
