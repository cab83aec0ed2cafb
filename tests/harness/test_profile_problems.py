"""What a profile gets wrong is reported as a profile problem, never as the agent's failure:
here, a terminal pattern that never matches an agent that is alive and answering."""

import asyncio
import dataclasses
from pathlib import Path

from harness.contract import Verdict
from harness.model import Outcome, RunStatus, task_verdict
from harness.profiles import load_profile
from harness.run.planning import WorkItem
from harness.run.runner import run_item
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


def task_folder(tmp_path: Path, task: str) -> Path:
    """A task folder holding ``task`` (named after its name) and the one-turn scenario."""
    folder = tmp_path / task.split('"')[1]
    folder.mkdir()
    (folder / "task.toml").write_text(task)
    (folder / "scenario.toml").write_text(SCENARIO)
    return folder


def test_a_turn_end_pattern_that_never_matches_a_live_answering_agent_is_the_profiles_problem(tmp_path):
    folder = task_folder(tmp_path, TASK)
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


QUEUE_TASK = '''name = "queue-one"
description = "A message typed while a turn runs, queued."
drivers = ["terminal"]

[checks]
mandatory = ["C6"]

[[steps]]
do = "send"
text = "hang on"

[[steps]]
do = "queue"
text = "Also look at the logs."
'''


def test_a_queued_acknowledgement_the_profile_does_not_recognise_is_the_profiles_problem_not_a_c6_pass(tmp_path):
    """A release that changed its queued-message indicator: the item shows as queued on
    screen, the profile's pattern never matches it. The run is the profile's problem, naming
    the pattern, with the screen; C6 is not judged on a queue step that never saw its
    acknowledgement, and the run's profile fit says what did not fit."""
    folder = task_folder(tmp_path, QUEUE_TASK)
    tui = load_profile(Path(__file__).with_name("fake_tui.toml"))
    assert tui.interactive is not None
    changed = dataclasses.replace(
        tui, interactive=dataclasses.replace(tui.interactive, queued_regex=r"(?m)^  queued: \S"),
        budgets=dataclasses.replace(tui.budgets, turn=1.5))
    result = asyncio.run(run_item(changed, WorkItem(load_task(folder), "terminal", "http", 1))).result
    assert result.status is RunStatus.PROFILE_PROBLEM, (result.status, result.reason)
    assert "waited for the queued acknowledgement, but the pattern '(?m)^  queued: \\\\S' never matched" in (
        result.reason or "")
    assert "  > Also look at the logs." in result.evidence["screen"]  # how this version shows the queued item
    c6 = {c.check: c for c in result.checks}["C6"]
    assert c6.outcome is not Outcome.PASS and "not judged" in c6.evidence.summary
    fit = result.evidence["profile_fit"]
    assert fit["fits"] == "no" and fit["misfits"] == ["the queued acknowledgement"], fit
    queued = next(e for e in fit["expectations"] if e["what"] == "the queued acknowledgement")
    assert queued["matched"] is False and queued["pattern"] == r"(?m)^  queued: \S"
    assert "  > Also look at the logs." in queued["screen"]
    prompt = next(e for e in fit["expectations"] if e["what"] == "the prompt")
    assert prompt["matched"] is True and prompt["seen"] == "on the rendered screen"


HEADLESS_TASK = TASK.replace('drivers = ["terminal"]', 'drivers = ["subprocess"]').replace(
    'text = "hello"', """text = '{"type": "session", "id": "s1", "version": 99}'""")


def test_a_store_of_a_version_the_reader_does_not_know_is_a_profile_misfit(tmp_path):
    """The agent writes its store in a format version its reader was not written for (here
    the stand-in's session file, read as pi's, begins with a version-99 header): the run's
    profile fit says the reader does not know it, with the reader's refusal."""
    folder = task_folder(tmp_path, HEADLESS_TASK)
    fake = dataclasses.replace(load_profile(Path(__file__).with_name("fake_agent.toml")), log_reader="pi")
    result = asyncio.run(run_item(fake, WorkItem(load_task(folder), "subprocess", "http", 1))).result
    assert result.status is RunStatus.RAN, (result.status, result.reason)
    fit = result.evidence["profile_fit"]
    assert fit["fits"] == "no" and fit["misfits"] == ["the reader knows the store's version"], fit
    store = next(e for e in fit["expectations"] if e["what"] == "the reader knows the store's version")
    assert store["matched"] is False and store["pattern"] == "pi"
    assert "session format version 99; this reader was written for" in store["seen"]
