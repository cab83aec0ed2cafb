"""Every check can say no: a fast subset of the reference agent's failpoints, each run on
the quickest task variant that exercises it, must fail the check it targets — with evidence.
The full matrix (every failpoint through every task) is ``stopbench run --mutants``."""

import asyncio

import pytest

from harness.model import Outcome, task_verdict
from harness.profiles import load_profile
from harness.run.mutants import list_failpoints
from harness.run.planning import WorkItem
from harness.run.runner import run_item
from harness.tasks import TASKS_DIR, load_task

# failpoint, task, driver, adapter, the check that must fail
MATRIX = [
    ("exit-0-on-stop", "http-stream-cancel", "subprocess", "http", "C8"),
    ("stream-error-as-error", "http-stream-cancel", "subprocess", "http", "C12"),
    ("keep-going-after-stop", "http-stream-cancel", "subprocess", "http", "C9"),
    ("drop-partial-text", "http-stream-cancel", "subprocess", "http", "C5"),
    ("no-tree-kill", "interrupt-timeout", "subprocess", "http", "C3"),
    ("double-settle", "http-stream-cancel", "subprocess", "http", "C1"),
    ("leak-api-key", "exit-codes", "subprocess", "http", "C13"),
    ("no-repair", "log-torn-tail", "subprocess", "http", "C4"),
    ("append-after-torn-line", "log-torn-tail", "subprocess", "http", "C10"),
    ("lose-inbox", "inbox-after-crash", "terminal", "inproc", "C6"),
]


@pytest.fixture(scope="module")
def profile():
    return load_profile("reference")


def test_the_matrix_names_real_failpoints_with_their_targets(profile):
    failpoints = list_failpoints(profile)
    for name, *_, check in MATRIX:
        assert check in failpoints[name], f"{name} targets {failpoints[name]}, not {check}"


@pytest.mark.slow(reason="a task run of each mutant of the reference agent")
@pytest.mark.parametrize("failpoint, task, driver, adapter, check", MATRIX, ids=[m[0] for m in MATRIX])
def test_mutant_fails_the_check_it_targets(profile, failpoint, task, driver, adapter, check):
    work = WorkItem(load_task(TASKS_DIR / task), driver, adapter, 1, mutant=failpoint)
    result = asyncio.run(run_item(profile, work)).result
    verdicts = {c.check: c for c in result.checks}
    assert verdicts[check].outcome is Outcome.FAIL, f"{failpoint} survived {check}: {verdicts[check].evidence}"
    assert verdicts[check].evidence.summary and verdicts[check].evidence.items
    assert result.mutant == failpoint and not task_verdict(result).ok
