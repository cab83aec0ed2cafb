"""The step vocabulary is two tables — the task's schema (harness.tasks.steps) and the run's
executors (harness.run.steps) — and they must name the same kinds, each bounded by a budget
a profile has."""

import dataclasses

from harness.profiles import Budgets
from harness.run.steps import EXECUTORS
from harness.tasks.steps import STEPS


def test_every_kind_of_step_has_one_executor_and_every_executor_a_schema():
    assert list(EXECUTORS) == list(STEPS)


def test_every_step_is_bounded_by_a_budget_the_profile_declares():
    budgets = {f.name for f in dataclasses.fields(Budgets)}
    assert {kind.name: kind.budget for kind in STEPS.values() if kind.budget not in budgets} == {}


def test_loading_the_schema_loads_no_part_of_the_run():
    import subprocess
    import sys

    code = "import sys, harness.tasks; print(sorted(m for m in sys.modules if m.startswith(('harness.run', 'harness.drivers'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_kind_of_step_in_the_task_schema_has_its_checks_and_budget():
    import typing

    from harness.tasks.schema import AnyStep

    assert [kind.table for kind in STEPS.values()] == list(typing.get_args(AnyStep))
