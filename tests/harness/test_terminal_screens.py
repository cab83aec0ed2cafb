"""A terminal run's evidence keeps the rendered screen as each of the driver's waits ended and
as the run ended — bounded, and with the run's key masked — so a terminal profile that fails
shows what the harness saw."""

import asyncio
import json
from pathlib import Path

import pytest

from harness.drivers.screen import Screen, ScreenLog
from harness.profiles import load_profile, parse_profile
from harness.run.planning import WorkItem
from harness.run.runner import run_item
from harness.tasks import load_task
from tests.harness.test_profile_problems import SCENARIO, TASK


@pytest.fixture
def one_turn(tmp_path) -> WorkItem:
    folder = tmp_path / "one-turn"
    folder.mkdir()
    (folder / "task.toml").write_text(TASK)
    (folder / "scenario.toml").write_text(SCENARIO)
    return WorkItem(load_task(folder), "terminal", "http", 1)


def test_a_terminal_run_keeps_the_screen_as_each_wait_ended_and_at_its_end(one_turn):
    tui = load_profile(Path(__file__).with_name("fake_tui.toml"))
    result = asyncio.run(run_item(tui, one_turn)).result
    screens = result.evidence["screens"]
    assert [s["at"] for s in screens] == ["saw the prompt", "saw the typed text", "saw the turn's end",
                                          "the run's end, before quitting"]
    turn_end = "\n".join(screens[2]["lines"])
    assert "hello" in turn_end and "Done" in turn_end  # the input and the line that ended its turn
    assert [s["n"] for s in screens] == [1, 2, 3, 4]


def test_a_terminal_profile_that_fails_shows_the_screen_it_failed_on_with_the_key_masked(one_turn):
    # An "agent" that shows its key and a prompt other than the profile's, closes its terminal
    # and exits a moment later (as a process does that tidies up after its output).
    wrong = parse_profile({
        "name": "wrong-prompt", "env": {"AGENT_KEY": "{api_key}"},
        "interactive": {"command": ["{python}", "-c", "import os, time; print('key: ' + os.environ['AGENT_KEY']); "
                                                      "print('ready >', flush=True); [os.close(fd) for fd in (0, 1, 2)]; "
                                                      "time.sleep(0.5)"],
                        "prompt_regex": "(?m)^you> ", "turn_ended_regex": "turn ended"},
    }, "wrong-prompt.toml")
    result = asyncio.run(run_item(wrong, one_turn)).result
    assert result.evidence["agent_failure"]["exit"]["returncode"] == 0, result.reason  # the agent's, not the harness's
    screens = result.evidence["screens"]
    assert screens[0]["at"] == "the output ended before the prompt"
    assert screens[0]["lines"] == ["key: [redacted]", "ready >"]
    assert "sk-stopbench-" not in json.dumps(result.to_json())


def test_only_the_last_screens_are_kept_numbered_from_the_first():
    screen = Screen(20, 4)
    log = ScreenLog(keep=2)
    for n in range(3):
        screen.feed(f"line {n}\r\n".encode())
        log.take(f"wait {n}", screen)
    assert log.to_json() == [{"n": 2, "at": "wait 1", "lines": ["line 0", "line 1"]},
                             {"n": 3, "at": "wait 2", "lines": ["line 0", "line 1", "line 2"]}]
