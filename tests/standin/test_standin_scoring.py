"""stopbench judging an agent nobody here wrote: the stand-in agent, scored black-box
through its profile. Clean, it is conformant (black-box) on every task that applies, with
no task error; each fault switch makes it not conformant, caught by the check it breaks,
with evidence. Its conventions are judged fairly: truthful Unix exit codes are non-strict,
not failures; a session it names only at exit is the profile's problem, not the agent's."""

import asyncio
import dataclasses
from pathlib import Path

import pytest

from harness.contract import Verdict
from harness.model import Outcome, RunStatus, combine_verdicts, task_verdict
from harness.profiles import load_profile
from harness.run.planning import WorkItem, plan
from harness.run.runner import run_item
from harness.tasks import TASKS_DIR, load_all, load_task

PROFILE = Path(__file__).with_name("standin.toml")

# fault switch, task, the check that must fail
FAULTS = [
    ("orphan-tools", "interrupt-cancel", "C3"),
    ("wrong-exit-codes", "http-stream-cancel", "C8"),
    ("key-leak", "exit-codes", "C13"),
    ("drop-dangling", "interrupt-restart", "C4"),
    ("same-repair-wording", "interrupt-restart", "C14"),
    ("unanswered-dangling", "interrupt-restart", "C4"),
    ("lose-partial", "interrupt-cancel", "C5"),
    ("request-after-stop", "http-stream-cancel", "C9"),
    ("blank-fork", "interrupt-restart", "C7"),
]


@pytest.fixture(scope="module")
def profile():
    return load_profile(PROFILE)


@pytest.mark.slow(reason="every task run of the stand-in agent")
def test_clean_it_is_conformant_black_box_on_every_task_that_applies(profile):
    items = plan(profile, load_all())
    results = [asyncio.run(run_item(profile, item)).result for item in items]
    ran = [r for r in results if r.status is RunStatus.RAN]
    assert ran and not [r for r in results if r.status is RunStatus.ERRORED]
    not_ok = {r.task: [(c.check, c.outcome.value, c.evidence.summary) for c in r.checks
                       if c.outcome in (Outcome.FAIL, Outcome.UNKNOWN) and not c.needs_reader]
              for r in ran if not task_verdict(r).ok}
    assert not not_ok, not_ok
    assert combine_verdicts([task_verdict(r) for r in ran]) is Verdict.CONFORMANT_BLACK_BOX
    not_run = {r.task for r in results if r.status is RunStatus.NOT_RUN}
    assert "interrupt-cancel[terminal]" in not_run and "log-torn-tail[subprocess]" in not_run


@pytest.mark.slow(reason="a task run of the stand-in agent per fault")
@pytest.mark.parametrize("fault, task, check", FAULTS, ids=[f[0] for f in FAULTS])
def test_each_fault_is_caught_by_the_check_it_breaks(profile, fault, task, check):
    work = WorkItem(load_task(TASKS_DIR / task), "subprocess", "http", 1, mutant=fault)
    result = asyncio.run(run_item(profile, work)).result
    assert result.status is RunStatus.RAN, result.reason
    verdicts = {c.check: c for c in result.checks}
    assert verdicts[check].outcome is Outcome.FAIL, f"{fault} survived {check}: {verdicts[check].evidence}"
    assert verdicts[check].evidence.summary and verdicts[check].evidence.items
    assert task_verdict(result) is Verdict.NOT_CONFORMANT



def counted_failures(result) -> list[str]:
    """The mandatory checks that failed on a fact of their own (consequences excluded)."""
    return [c.check for c in result.checks if c.counts_as_failure and c.tier.value == "mandatory"]


def run_task(profile, task: str, mutant: str | None = None):
    work = WorkItem(load_task(TASKS_DIR / task), "subprocess", "http", 1, mutant=mutant)
    return asyncio.run(run_item(profile, work)).result


UNIX_EXIT_CODES = {"completed": 0, "error": 1, "max_tokens": 1, "aborted": 130, "interrupted": 124}


@pytest.mark.parametrize("task", ["http-stream-cancel", "exit-codes", "interrupt-timeout"])
def test_truthful_unix_exit_codes_are_non_strict_not_a_failure(profile, task):
    unix = dataclasses.replace(profile, env={**profile.env, "STANDIN_EXIT_CODES": "unix"}, exit_codes=UNIX_EXIT_CODES)
    result = run_task(unix, task)
    assert result.status is RunStatus.RAN, result.reason
    c8 = {c.check: c for c in result.checks}["C8"]
    assert c8.outcome is Outcome.PASS and c8.non_strict, c8.evidence
    assert not counted_failures(result), [(c.check, c.evidence.summary) for c in result.checks]
    assert task_verdict(result) is Verdict.CONFORMANT_NON_STRICT


def test_exit_0_after_stop_fails_c8_and_nothing_else_counts_for_that_exit(profile):
    result = run_task(profile, "http-stream-cancel", mutant="wrong-exit-codes")
    assert result.status is RunStatus.RAN, result.reason
    assert counted_failures(result) == ["C8"], [(c.check, c.evidence.summary) for c in result.checks]
    followers = [c for c in result.checks if c.outcome is Outcome.FAIL and c.check != "C8"]
    assert all(c.consequence_of == "C8" for c in followers)


def test_a_session_named_only_at_exit_under_resume_by_id_is_a_profile_problem(profile):
    at_exit = dataclasses.replace(profile, env={**profile.env, "STANDIN_SESSION_NOTICE": "exit"})
    result = run_task(at_exit, "interrupt-restart")
    assert result.status is RunStatus.PROFILE_PROBLEM, (result.status, result.reason)
    assert "cannot resume: the profile gives no way to name the session after a kill" in (result.reason or "")
    fit = result.evidence["profile_fit"]
    assert fit["fits"] == "no" and fit["misfits"] == ["the session id"], fit
    assert not [c for c in result.checks if c.outcome is Outcome.FAIL]
    assert task_verdict(result) is Verdict.INCOMPLETE


def test_a_stop_reaches_an_agent_that_relaunched_itself_as_a_terminal_would(profile):
    """The outer process ignores SIGINT and forwards nothing; Stop reaches the whole process
    group, as a terminal's Ctrl-C does, so the inner agent is the one judged."""
    relaunched = dataclasses.replace(profile, env={**profile.env, "STANDIN_RELAUNCH": "child"})
    result = run_task(relaunched, "http-stream-cancel")
    assert result.status is RunStatus.RAN, result.reason
    assert not counted_failures(result), [(c.check, c.evidence.summary) for c in result.checks]
    assert task_verdict(result) is Verdict.CONFORMANT_BLACK_BOX


def test_a_stop_that_never_reached_the_process_streaming_says_so_and_the_profile_does_not_fit(profile):
    """The agent relaunched itself in a session of its own: the Stop says it missed the
    streaming process, and the run's profile fit says the signalled process is not the one
    holding the model connection, with the holders (pid, group, command)."""
    relaunched = dataclasses.replace(profile, env={**profile.env, "STANDIN_RELAUNCH": "session"},
                                     budgets=dataclasses.replace(profile.budgets, settle=3.0))
    result = run_task(relaunched, "http-stream-cancel")
    stops = [m.label for m in result.timeline if m.kind == "stop"]
    assert any("the process holding the model connection" in label and "did not get it" in label
               for label in stops), stops
    fit = result.evidence["profile_fit"]
    assert fit["fits"] == "no" and fit["misfits"] == ["the signalled process holds the model connection"], fit
    holder = next(e for e in fit["expectations"] if e["what"] == "the signalled process holds the model connection")
    assert holder["matched"] is False and "did not get it" in holder["seen"]
    assert holder["holders"] and all(h["group"] != holder["signalled_group"] for h in holder["holders"])
    assert "standin_agent.py" in holder["holders"][0]["command"]


def test_a_stop_that_reached_the_process_streaming_fits(profile):
    """Relaunched as a child in the same process group: the signalled group holds the model
    connection, the session rule named the session; the profile fits."""
    relaunched = dataclasses.replace(profile, env={**profile.env, "STANDIN_RELAUNCH": "child"})
    fit = run_task(relaunched, "http-stream-cancel").evidence["profile_fit"]
    assert fit["fits"] == "yes", fit
    assert {e["what"] for e in fit["expectations"]} == {"the signalled process holds the model connection",
                                                        "the session id"}


def test_dying_of_the_stop_signal_is_truthful_about_being_stopped(profile):
    """SIGINT left to its default action: death by SIGINT (exit -2) says "stopped" — C8 passes
    non-strictly, C12 sees a stop, not an error. What dying does lose, the text streamed so
    far, is C5's failure: the one defect, counted once."""
    dies = dataclasses.replace(profile, env={**profile.env, "STANDIN_ON_STOP": "die"})
    result = run_task(dies, "http-stream-cancel")
    assert result.status is RunStatus.RAN, result.reason
    checks = {c.check: c for c in result.checks}
    assert checks["C8"].non_strict and "died by SIGINT" in checks["C8"].evidence.summary
    assert checks["C12"].outcome is Outcome.PASS, checks["C12"].evidence
    assert counted_failures(result) == ["C5"], [(c.check, c.evidence.summary) for c in result.checks]


def test_who_holds_the_model_connection_is_looked_up_before_the_stop_not_while_it_is_timed(profile, monkeypatch):
    """The lookup reads the kernel's tables in a thread: run after the Stop it shared the
    harness's loop with the latency being timed (L2 read 2.4 ms more, `stopbench calibrate`).
    Whom a Stop reaches does not change with it, so it is done just before."""
    import time

    from harness.drivers import headless

    looked_up: list[int] = []

    def holders(pid, port):
        found = real(pid, port)
        looked_up.append(time.monotonic_ns())
        return found

    real = headless.connection_holders
    monkeypatch.setattr(headless, "connection_holders", holders)
    work = WorkItem(load_task(TASKS_DIR / "http-stream-cancel"), "subprocess", "http", 1)
    outcome = asyncio.run(run_item(profile, work))
    (stop,) = [s for s in outcome.observation.stops if s.phase == "stream"]
    assert looked_up and looked_up[0] < stop.mono_ns
    fit = outcome.result.evidence["profile_fit"]
    assert fit["fits"] == "yes", fit
