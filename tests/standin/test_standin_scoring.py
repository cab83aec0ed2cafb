"""stopbench judging an agent nobody here wrote: the stand-in agent, scored black-box
through its profile. Clean, it is conformant (black-box) on every task that applies, with
no task error; each fault switch makes it not conformant, caught by the check it breaks,
with evidence."""

import asyncio
from pathlib import Path

import pytest

from harness.contract import Verdict
from harness.model import Outcome, RunStatus, combine_verdicts, task_verdict
from harness.planning import WorkItem, plan
from harness.profiles import load_profile
from harness.runner import run_item
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

