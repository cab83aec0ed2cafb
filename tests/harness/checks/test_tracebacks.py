"""Where a checker or the harness failed is said with each file's folder: ``cli.py`` alone
could be any of several."""

from __future__ import annotations

import pytest

from harness.checks.base import CheckSpec, run_check
from harness.contract import Observes
from harness.model import Outcome, Tier
from harness.model.sharding import ShardError, parse_shard
from harness.model.tracebacks import frame_lines

from .check_runs import stop_in_tool


def test_a_crashing_checkers_traceback_names_each_file_with_its_folder():
    def broken(obs):
        raise RuntimeError("evidence is inconsistent")

    spec = CheckSpec("C9", "stop_means_stop", Observes.BLACK_BOX, Tier.MANDATORY, broken)
    result = run_check(spec, stop_in_tool().observation())
    assert result.outcome is Outcome.UNKNOWN
    first, last = result.evidence.items[0]["traceback"][0], result.evidence.items[0]["traceback"][-1]
    assert first.startswith("harness/checks/base.py:") and " in run_check: " in first
    assert last.startswith("tests/harness/checks/test_tracebacks.py:")
    assert last.endswith(' in broken: raise RuntimeError("evidence is inconsistent")')


def test_a_harness_frame_is_named_from_the_packages_folder():
    with pytest.raises(ShardError) as info:
        parse_shard("nine")
    assert frame_lines(info.value)[-1].startswith("harness/model/sharding.py:")
    assert " in parse_shard" in frame_lines(info.value)[-1]


def test_a_file_outside_the_project_keeps_its_whole_path():
    with pytest.raises(ZeroDivisionError) as info:
        exec(compile("1 / 0", "/elsewhere/tool/cli.py", "exec"))
    assert frame_lines(info.value, last=1) == ["/elsewhere/tool/cli.py:1 in <module>"]
