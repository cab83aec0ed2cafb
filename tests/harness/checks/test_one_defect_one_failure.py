"""One defect, one failure: every failure names the fact it rests on, and a later check that
fails only on a fact an earlier one failed on is shown as its consequence, not counted again."""

import dataclasses

from harness.checks import run_checks
from harness.contract import Verdict
from harness.model import CheckResult, Outcome, verdict_of

from .check_runs import headless_runs, kill_in_tool, stop_in_tool


def by_check(results: tuple[CheckResult, ...]) -> dict[str, CheckResult]:
    return {r.check: r for r in results}


def failures(results: tuple[CheckResult, ...]) -> list[str]:
    return [r.check for r in results if r.counts_as_failure]


def test_an_exit_0_after_stop_fails_c8_and_c12_only_follows_from_it():
    """The subprocess driver reads the exit code as a settlement: exit 0 reads "completed", which
    C12 sees as a Stop that settled wrongly. The fact is one exit, so C8 owns it."""
    run = stop_in_tool("exit-0")
    run.settlements[0] = dataclasses.replace(run.settlements[0], reason="completed", source=None, how="exit 0",
                                             pid=4343)
    results = by_check(run_checks(run.observation(black_box=True)))
    assert results["C8"].counts_as_failure
    assert results["C12"].outcome is Outcome.FAIL and results["C12"].consequence_of == "C8"
    assert results["C12"].facts == results["C8"].facts == ("the run process (pid 4343) exited 0",)
    assert results["A3"].consequence_of == "C8"
    assert failures(tuple(results.values())) == ["C8"]


def test_a_failed_resume_is_c7s_and_its_truthful_error_exit_follows_from_it():
    results = by_check(run_checks(kill_in_tool("unresumable").observation()))
    assert results["C7"].counts_as_failure
    assert results["C8"].outcome is Outcome.FAIL and results["C8"].consequence_of == "C7"


def test_a_refused_store_is_one_failure_whichever_log_checks_meet_it():
    run = stop_in_tool()
    run.log.lines[3] = b'{"seq": 3, "type": "tool_call", broken'
    results = run_checks(run.observation())
    refused = [r for r in results if r.outcome is Outcome.FAIL]
    assert len(refused) > 1, [(r.check, r.evidence.summary) for r in results]
    assert len(failures(results)) == 1
    first = failures(results)[0]
    assert all(r.consequence_of == first for r in refused if r.check != first)


def test_a_failure_on_a_fact_of_its_own_still_counts():
    """A check failing on an exit and on something else is a failure in its own right."""
    run = stop_in_tool("exit-0", "tree-survives")
    results = by_check(run_checks(run.observation()))
    assert results["C8"].counts_as_failure and results["C3"].counts_as_failure


def test_a_non_strict_pass_makes_the_verdict_non_strict_and_a_lie_does_not():
    truthful = run_checks(headless_runs("declared-130").observation())
    assert by_check(truthful)["C8"].non_strict
    decided = [r for r in truthful if r.outcome is not Outcome.UNKNOWN]  # a hand-made run leaves some undecided
    assert verdict_of(decided) is Verdict.CONFORMANT_NON_STRICT and Verdict.CONFORMANT_NON_STRICT.ok
    lying = run_checks(headless_runs("declared-130", "stopped-exit-0").observation())
    assert verdict_of(lying) is Verdict.NOT_CONFORMANT
    assert [r.check for r in lying if r.outcome is Outcome.FAIL and r.tier.value == "mandatory"] == ["C8"]


def test_results_json_keeps_consequences_and_non_strict_passes_and_old_results_load():
    results = run_checks(kill_in_tool("unresumable").observation()) + run_checks(
        headless_runs("exit-130").observation())
    for r in results:
        assert CheckResult.from_json(r.to_json()) == r
    old = {k: v for k, v in results[0].to_json().items() if k not in ("consequence_of", "non_strict")}
    loaded = CheckResult.from_json(old)
    assert loaded.consequence_of is None and not loaded.non_strict


def test_an_agent_that_says_it_failed_to_resume_is_judged_on_telling_an_error():
    """Exit 1 after a refused resume is a truthful error under a convention that tells errors
    apart (non-strict), and C7's failure, not C8's, under the contract's 2."""
    from harness.model import Conventions

    unix = Conventions(exit_codes={"completed": 0, "error": 1, "aborted": 130, "interrupted": 124})
    results = by_check(run_checks(kill_in_tool("unresumable").observation(conventions=unix)))
    assert results["C8"].outcome is Outcome.PASS and results["C8"].non_strict
    assert results["C7"].counts_as_failure
    contract = by_check(run_checks(kill_in_tool("unresumable").observation()))["C8"]
    assert "should exit 2 (the agent failed the run), not exit 1" in contract.evidence.summary


def test_a_call_dropped_after_a_kill_is_c4s_and_c7_c11_follow_from_it():
    """Claude Code resumed after a kill in w1 sends request 2 without the killed call: C4 fails on
    the dropped call; C7 and C11, which find the same call missing from the same request, follow."""
    run = kill_in_tool("drop-dangling-call")
    results = by_check(run_checks(run.observation()))
    assert results["C4"].counts_as_failure, results["C4"].evidence
    dropped = [f for f in results["C4"].facts if "does not carry tool call" in f]
    assert dropped, results["C4"].evidence
    for check in ("C7", "C11"):
        if results[check].outcome is Outcome.FAIL:
            assert results[check].consequence_of == "C4", (check, results[check].evidence)
    assert any(results[c].outcome is Outcome.FAIL for c in ("C7", "C11"))


def test_a_resume_refused_for_want_of_a_store_is_one_failure():
    """Claude Code -p killed as request 1 arrived had written no session: C11 fails on the
    missing store, and the restart's "No conversation found" (C7, and C8 on its exit 1) rests on
    that same store as much as on the exit — one defect, counted once."""
    from .check_runs import kill_at_request

    run = kill_at_request("no-restart")
    run.kills[0] = dataclasses.replace(run.kills[0], log=run.capture("after kill 1", None))
    run.restart(before=None, after_load=None)
    run.user("You were killed. Try again.")
    gone = run.exit("completed", 1, role="resume",
                    stderr_tail="No conversation found with session ID: 6f34501c-c966-4a33-9d5e-0bc9dca36952\n")
    run.fail("request 3", "the agent exited 1 before request 3", after_restart=True, exit=gone)
    results = by_check(run_checks(run.observation()))
    assert results["C11"].outcome is Outcome.FAIL, results["C11"].evidence
    assert results["C7"].outcome is Outcome.FAIL, results["C7"].evidence
    assert failures(tuple(results.values())) == ["C7"], [(r.check, r.facts) for r in results.values()
                                                         if r.outcome is Outcome.FAIL]
    assert results["C11"].consequence_of == "C7"


def test_a_resume_refused_on_an_empty_store_is_one_failure():
    """Qwen Code killed as request 1 arrived had created its chat file and written nothing in it
    (0 bytes); the restart's "No saved session found" rests on that empty store, which C11 fails."""
    from harness.readers import READERS
    from tests.harness.checks.observations import RunBuilder, msg

    class Empty:
        def to_bytes(self) -> bytes:
            return b""

    run = RunBuilder(reader=READERS["qwen-code"], store=Empty(), log_path="chats/1c16bc39.jsonl")
    run.user("Build the project.")
    n1 = run.records.request([msg("user", "Build the project.")])
    run.kill("request-received", request=n1)
    run.restart()
    run.user("You were killed. Try again.")
    gone = run.exit("completed", 1, role="resume",
                    stderr_tail="No saved session found with ID 1c16bc39-3bab-434c-9d9e-122c9c0e7b87.\n")
    run.fail("request 3", "the agent exited 1 before request 3", after_restart=True, exit=gone)
    results = by_check(run_checks(run.observation()))
    assert results["C11"].outcome is Outcome.FAIL, results["C11"].evidence
    assert results["C7"].outcome is Outcome.FAIL, results["C7"].evidence
    assert results["C11"].consequence_of == "C7", [(r.check, r.facts) for r in results.values()
                                                   if r.outcome is Outcome.FAIL]


def test_a_run_that_never_exited_after_the_watchdog_is_c8s_failure_alone():
    """opencode SIGTERMed by CI's watchdog while its background npm install ran never exited;
    the harness ended it after the settle budget. The open turn is the record of that end, not a
    turn left open by a process never killed: C8 fails ("never exited"), C1 does not."""
    from tests.harness.checks.observations import RunBuilder, call, msg

    run = RunBuilder()
    started = run.clock.tick()
    run.user("Run the long job.")
    run.log.event("turn_started", turn=1, input="Run the long job.", inbox=[])
    n1 = run.records.request([msg("user", "Run the long job.")])
    c1 = call("c1", "python -m fake_server.window --id w1")
    run.records.response(n1, tool_calls=[c1])
    run.log.event("assistant_message", turn=1, step=1, text="", tool_calls=[c1], finish_reason="tool_calls",
                  interrupted=False)
    run.records.window("w1", [801, 802])
    run.stop("tool", window="w1", source="timeout", how="watchdog:SIGTERM")
    run.fail("the turn's settlement", "the agent did not get there within the 60 s budget of 'settle' steps",
             kind="settle", step="step 3 (settle)")
    run.exit("killed", None, signal=9, started_ns=started)
    results = by_check(run_checks(run.observation(driver="subprocess")))
    assert results["C8"].counts_as_failure, results["C8"].evidence
    assert results["C1"].outcome is not Outcome.FAIL, results["C1"].evidence


def test_a_blank_resume_after_a_kill_that_left_nothing_on_disk_is_one_failure():
    """llm writes a turn only once it has ended: killed as request 1 arrived, it left nothing, and
    its resume is a blank conversation. C7's blank fork and C11's missing message both rest on the
    kill having left nothing of the session on disk: one defect, counted once."""
    from tests.harness.checks.observations import msg

    from .check_runs import kill_at_request

    run = kill_at_request("no-restart")
    run.kills[0] = dataclasses.replace(run.kills[0], log=run.capture("after kill 1", None))
    run.restart(before=None, after_load=None)
    run.user("You were killed. Try again.")
    run.records.request([msg("user", "You were killed. Try again.")])
    results = by_check(run_checks(run.observation()))
    assert results["C7"].outcome is Outcome.FAIL, results["C7"].evidence
    assert results["C11"].outcome is Outcome.FAIL, results["C11"].evidence
    mandatory = [c for c in failures(tuple(results.values())) if c.startswith("C")]
    assert mandatory == ["C7"], [(r.check, r.facts, r.evidence.summary) for r in results.values()
                                 if r.outcome is Outcome.FAIL]
    assert results["C11"].consequence_of == "C7"
