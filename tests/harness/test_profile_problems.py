"""What a profile gets wrong is reported as a profile problem, never as the agent's failure:
here, a terminal pattern that never matches an agent that is alive and answering."""

import asyncio
import dataclasses
from pathlib import Path

from harness.contract import Verdict
from harness.model import Outcome, RunStatus, task_verdict
from harness.planning import WorkItem
from harness.profiles import load_profile
from harness.runner import run_item
from harness.tasks import load_task

TASK = '''name = "one-turn"
description = "One turn in a terminal, settled."
drivers = ["terminal"]

[checks]
mandatory = ["C1"]

[[steps]]
do = "send"
text = "hello"

[[steps]]
do = "settle"
'''
SCENARIO = '''name = "one-turn"

[[responses]]
[[responses.frames]]
text = "Hello."
'''


def test_a_turn_end_pattern_that_never_matches_a_live_answering_agent_is_the_profiles_problem(tmp_path):
    folder = tmp_path / "one-turn"
    folder.mkdir()
    (folder / "task.toml").write_text(TASK)
    (folder / "scenario.toml").write_text(SCENARIO)
    tui = load_profile(Path(__file__).with_name("fake_tui.toml"))
    assert tui.interactive is not None
    wrong = dataclasses.replace(
        tui, interactive=dataclasses.replace(tui.interactive, turn_ended_regex="(?m)^(?P<completed>Finished)$"),
        budgets=dataclasses.replace(tui.budgets, settle=1.5))
    result = asyncio.run(run_item(wrong, WorkItem(load_task(folder), "terminal", "http", 1))).result
    assert result.status is RunStatus.PROFILE_PROBLEM, (result.status, result.reason)
    assert "the pattern '(?m)^(?P<completed>Finished)$' never matched while the agent was alive and answering" in (
        result.reason or "")
    assert "Done" in result.evidence["screen"]  # what the agent showed instead
    gave_up = [s for s in result.evidence["screens"] if s["at"] == "stopped waiting for the turn's end"]
    assert gave_up and "Done" in gave_up[0]["lines"]  # the screen as the step's budget ran out
    assert not [c for c in result.checks if c.outcome is Outcome.FAIL]
    assert task_verdict(result) is Verdict.INCOMPLETE
