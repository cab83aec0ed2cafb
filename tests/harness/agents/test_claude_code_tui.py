"""Claude Code's built-in [interactive] section: parsed, its commands and HOME file rendered,
and its screen patterns read by the terminal driver off screens recorded from Claude Code's
full-screen UI, releases 2.1.197 and 2.1.332 (tests/fixtures/agents/claude-code-<version>/screens/:
the rendered 200×40 screen at each moment, paths and port scrubbed; the key never shows on screen)."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from harness.drivers.base import AgentContext
from harness.drivers.pseudo_terminal import COLUMNS, LINES
from harness.drivers.screen import Screen
from harness.drivers.terminal import TerminalDriver
from harness.model.history import History
from harness.profiles import fill, load_profile
from harness.run.planning import not_applicable
from harness.tasks import TASKS_DIR, load_task

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents"
PROFILE = load_profile("claude-code")
VALUES = {"agent_bin": "/cache/claude", "model": "stopbench-1", "session_uuid": str(uuid.uuid4()),
          "cwd": "/tmp/stopbench-x/work", "home": "/tmp/stopbench-x/home", "api_key": "sk-stopbench-REDACTED"}

# release: {screen: (the turn's input, at the prompt, busy, how the turn has ended (None: not yet), queued items)}
CASES = {"2.1.197": {
    "idle": (None, True, False, None, 0),
    "typed": ("Run the long job.", False, False, None, 0),  # in the box, not yet submitted
    "tool-running": ("Run the long job.", False, True, None, 0),
    "interrupted-tool": ("Run the long job.", True, False, "aborted", 0),
    "streaming": ("Write the report instead.", False, True, None, 0),  # the Stop above it is the last turn's
    "interrupted-stream": ("Write the report instead.", True, False, "aborted", 0),
    "completed": ("Follow-up: summarise where we are.", True, False, "completed", 0),
    "queue-typing": ("Run the checks.", False, True, None, 0),  # the hint under the box goes while typing
    "queued": ("Run the checks.", False, True, None, 2),
    # Stop delivers the queued items at once, as a turn of their own.
    "queue-delivered-on-stop": ("Run the checks.", True, False, "aborted", 0),
}, "2.1.332": {
    "idle": (None, True, False, None, 0),
    "typed": ("Run the checks.", False, False, None, 0),
    "tool-running": ("Run the checks.", False, True, None, 0),
    "queue-typing": ("Run the checks.", False, True, None, 0),
    # Queued items are flush left like a sent input, with one "⎿  Queued" line under the last.
    "queued": ("Run the checks.", False, True, None, 1),
    "queued-two": ("Run the checks.", False, True, None, 2),
    # Stop delivers both items as a turn of their own, which completed below the Stop's line.
    "queue-delivered-on-stop": ("Run the checks.", True, False, "aborted", 0),
}}
SCREENS = [(release, name) for release, cases in CASES.items() for name in sorted(cases)]


def driver_on(name: str, turn_input: str | None, release: str = "2.1.197") -> TerminalDriver:
    """A terminal driver for Claude Code whose screen shows the recorded one, in a turn begun
    with ``turn_input`` (no process: the screen is fed as the terminal would have drawn it)."""
    ctx = AgentContext(profile=PROFILE, adapter="http", values=dict(VALUES), env={},
                       sessions_dir=Path("/nonexistent"), cwd=Path(VALUES["cwd"]))
    driver = TerminalDriver(ctx, History())
    driver._view = Screen(COLUMNS, LINES)
    text = (FIXTURES / f"claude-code-{release}" / "screens" / f"{name}.txt").read_text()
    driver._view.feed(text.rstrip("\n").replace("\n", "\r\n").encode())
    if turn_input is not None:
        driver._input_mark = turn_input
        driver._running = driver._busy_seen = True
    return driver


def test_the_interactive_section_drives_the_full_screen_ui():
    spec = PROFILE.interactive
    assert spec is not None and spec.match_on == "screen" and "terminal" in PROFILE.drivers()
    assert spec.stop_keys == ("esc",) and spec.quit_keys == ("ctrl-d", "ctrl-d") and not spec.cancel_command
    first, resumed = spec.render(VALUES), spec.render(VALUES, resume=True)
    assert first == ["/cache/claude", "--dangerously-skip-permissions", "--model", "stopbench-1",
                     "--session-id", VALUES["session_uuid"]]
    assert resumed[-2:] == ["--resume", VALUES["session_uuid"]]
    assert PROFILE.session.chosen and not spec.needs_session_id


def test_the_key_travels_as_a_token_in_the_environment_and_home_starts_at_the_prompt():
    assert PROFILE.env["ANTHROPIC_AUTH_TOKEN"] == "{api_key}" and "ANTHROPIC_API_KEY" not in PROFILE.env
    (claude_json,) = PROFILE.files
    assert fill(claude_json["path"], VALUES) == "/tmp/stopbench-x/home/.claude.json"
    written = json.loads(fill(claude_json["content"], VALUES))
    assert written["hasCompletedOnboarding"] and written["bypassPermissionsModeAccepted"]
    assert written["projects"] == {VALUES["cwd"]: {"hasTrustDialogAccepted": True}}
    assert "{api_key}" not in claude_json["content"]


@pytest.mark.parametrize(("release", "name"), SCREENS, ids=[f"{r}-{n}" for r, n in SCREENS])
async def test_the_screen_patterns_read_each_recorded_screen(release, name):
    turn_input, at_prompt, busy, ended, queued = CASES[release][name]
    driver = driver_on(name, turn_input, release)
    spec = PROFILE.interactive
    assert spec is not None
    assert driver._at_prompt() is at_prompt
    assert driver._view.shows(spec.busy_regex) is busy
    assert len(re.findall(spec.queued_regex, driver._view.text())) == queued
    if turn_input is None:
        return
    assert driver.turn_running() is (ended is None)
    if ended is not None:
        settlement = await driver.settle()
        assert settlement.reason == ended and settlement.how.startswith("screen: ")


def test_text_seen_at_a_stop_is_the_screen_below_the_turns_input():
    driver = driver_on("interrupted-stream", "Write the report instead.")
    seen = driver.text_since_input()
    assert "Here is the report, section by section" in seen and "I will run the long job" not in seen


def test_the_inbox_task_is_not_run_for_want_of_a_withdrawal():
    reason = not_applicable(PROFILE, load_task(TASKS_DIR / "inbox"), "terminal")
    assert reason is not None and "cancel_command" in reason
    assert not_applicable(PROFILE, load_task(TASKS_DIR / "inbox-after-crash"), "terminal") is None


def test_a_turn_whose_input_scrolled_off_ends_by_the_busy_indicator():
    gone = "a long turn's input, scrolled off"
    assert driver_on("tool-running", gone).turn_running()
    ended = driver_on("idle", gone)._turn_end()
    assert ended is not None and ended[0] == "busy indicator gone"
