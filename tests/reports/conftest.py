"""Fixtures of the report tests: the synthetic runs of ``report_builders``."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from report_builders import CANARY, TASKS, build_black_box_run, build_run

from harness.model import RunResult


@pytest.fixture
def make_run() -> Callable[..., RunResult]:
    return build_run


@pytest.fixture
def canary() -> str:
    return CANARY


@pytest.fixture
def run() -> RunResult:
    """The broken reference run, with the failpoint targets a ``--mutants`` run records."""
    plain = build_run()
    mutation = {"mutants": {"skip-tree-kill": {"targets": ["C3"]}, "drop-partial-text": {"targets": ["C5"]}}}
    return RunResult({**plain.run, "mutation": mutation}, plain.tasks, plain.latencies)


@pytest.fixture
def rival() -> RunResult:
    """A second agent: conformant, slower on L3, measured on http only."""
    items = [(t, "http", r) for t in TASKS for r in range(2)]
    return build_run(items, agent="other-agent", repeat=2, broken=False, timing_seed=5, scale=1.5)


@pytest.fixture
def black_box() -> RunResult:
    return build_black_box_run()
