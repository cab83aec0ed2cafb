"""`stopbench agents doctor` names what is wrong with a profile: a command that cannot start,
session rules that find nothing — and shows a working one's command, exit and store."""

from dataclasses import replace

import pytest

from harness.agents.doctor import doctor
from harness.profiles import SessionSpec, load_profile, parse_profile


@pytest.mark.slow(reason="a turn of the stand-in agent")
def test_a_working_profile_shows_its_command_exit_requests_and_store():
    code, lines = doctor(load_profile("reference"))
    text = "\n".join(lines)
    assert code == 0, text
    assert "command: " in text and "refagent run" in text and "exit 0" in text
    assert "fake server: 2 request(s)" in text and "session store: /" in text
    assert "sk-stopbench-" not in text  # the run's key never shows


def test_a_wrong_binary_is_named_with_its_command():
    reference = load_profile("reference")
    broken = replace(reference, headless=replace(reference.headless, command=("/nonexistent/refagent",
                                                                              *reference.headless.command[1:])))
    code, lines = doctor(broken)
    assert code == 1
    assert "errored" in lines[0] and "could not be started" in lines[0] and "/nonexistent/refagent" in lines[0]


def test_session_rules_that_find_nothing_say_which_and_why():
    reference = load_profile("reference")
    broken = replace(reference, session=SessionSpec(stderr_regex=r"no such line (?P<id>\S+)",
                                                    log_glob="{sessions_dir}/*.nothing"))
    code, lines = doctor(broken)
    text = "\n".join(lines)
    assert code == 1
    assert "stderr_regex 'no such line (?P<id>\\\\S+)' matched nothing on stderr" in text
    assert "log_glob '{sessions_dir}/*.nothing' matched no file" in text


def test_the_key_on_the_command_line_is_warned_about():
    profile = parse_profile({"name": "keyed", "headless": {"command": ["/nonexistent/agent", "--key={api_key}",
                                                                       "{prompt}"]}}, "keyed.toml")
    code, lines = doctor(profile)
    assert code == 1
    assert lines[1].startswith("warning: headless.command: {api_key} puts the key on the command line")
