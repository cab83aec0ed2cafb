"""`stopbench agents doctor` names what is wrong with a profile: a command that cannot start,
session rules that find nothing, a session id told only at exit — and shows a working one's
command, exit, model requests (probes apart), session id and how it was found, store, and a
terminal's screen at each wait."""

from dataclasses import replace
from pathlib import Path

import pytest

from harness.agents.doctor import doctor
from harness.profiles import SessionSpec, load_profile, parse_profile

STANDIN = Path(__file__).parents[2] / "standin" / "standin.toml"
FAKE_TUI = Path(__file__).parents[1] / "fake_tui.toml"
# Asks the fake server for paths it does not serve, as CLIs probe at start-up, then becomes the agent.
PROBER = """import os, sys, urllib.error, urllib.request
for n in range(25):
    try:
        urllib.request.urlopen(f"{sys.argv[1]}/probe/{n % 5}")
    except urllib.error.HTTPError:
        pass
os.execv(sys.argv[2], sys.argv[2:])
"""


@pytest.mark.slow(reason="a turn of the stand-in agent")
def test_a_working_profile_shows_its_command_exit_requests_and_store():
    code, lines = doctor(load_profile("reference"))
    text = "\n".join(lines)
    assert code == 0, text
    assert "command: " in text and "refagent run" in text and "exit 0" in text
    assert "model requests: 2" in text and "session store: /" in text
    assert "found by session.stderr_regex on stderr" in text
    assert "resume after a kill: resumed session" in text
    assert "sk-stopbench-" not in text  # the run's key never shows


def test_a_wrong_binary_is_named_with_its_command():
    reference = load_profile("reference")
    broken = replace(reference, headless=replace(reference.headless, command=("/nonexistent/refagent",
                                                                              *reference.headless.command[1:])))
    code, lines = doctor(broken)
    headless = next(line for line in lines if line.startswith("headless"))
    assert code == 1
    assert "errored" in headless and "could not be started" in headless and "/nonexistent/refagent" in headless


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


def test_model_requests_are_shown_and_probes_counted_apart(tmp_path):
    standin = load_profile(STANDIN)
    (tmp_path / "prober.py").write_text(PROBER)
    probing = replace(standin, headless=replace(standin.headless, command=(
        "{python}", str(tmp_path / "prober.py"), "{base_url}", *standin.headless.command)))
    code, lines = doctor(probing)
    text = "\n".join(lines)
    assert code == 0, text
    assert "  model requests: 2\n    request 1: chat /v1/chat/completions → 200\n" in text
    assert "probes: 25 request(s) to paths the fake server does not serve" in text
    assert "GET /v1/probe/0 ×5" in text and "request 3" not in text


def test_a_black_box_profile_without_a_store_passes_and_says_what_stays_unknown():
    standin = load_profile(STANDIN)
    no_store = replace(standin, session=replace(standin.session, log_glob=None))
    code, lines = doctor(no_store)
    text = "\n".join(lines)
    assert code == 0, text
    assert 'black-box (log_reader = "none"): checks needing a reader will be unknown' in text
    assert "session store: not found, and not needed (black-box)" in text


def test_a_session_id_told_only_at_exit_is_warned_about_before_a_run():
    standin = load_profile(STANDIN)
    at_exit = replace(standin, env={**standin.env, "STANDIN_SESSION_NOTICE": "exit"})
    code, lines = doctor(at_exit)
    text = "\n".join(lines)
    assert code == 1
    assert "session id: " in text and "found by session.stderr_regex on stderr" in text  # after a whole turn: found
    assert "warning: the session id shows only as the agent exits" in text
    assert "cannot resume: the profile gives no way to name the session after a kill" in text


def test_the_interactive_mode_is_played_and_its_screen_shown_at_each_wait():
    code, lines = doctor(load_profile(FAKE_TUI))
    text = "\n".join(lines)
    assert "interactive (terminal driver): ran" in text
    waits = [line.strip() for line in lines if line.startswith("  screen #")]
    assert waits[:3] == ["screen #1, saw the prompt:", "screen #2, saw the typed text:", "screen #3, saw the turn's end:"]
    assert "    | Done" in lines[lines.index("  screen #3, saw the turn's end:"):]
    assert "found by session.stderr_regex on the terminal" in text
    # The stand-in UI answers by itself: an agent that never asks the model is not ready to be scored.
    assert code == 1 and "model requests: 0 — the agent never reached the fake server" in text


# Sends one chat request whose only tool is no shell tool (no known command field): in the doctor's
# scenario, which calls the shell, the fake server answers it as a side request.
TOOLLESS = """import json, os, sys, urllib.request
tool = {"name": "execute", "parameters": {"type": "object", "properties": {"line": {"type": "string"}}}}
body = {"model": "m", "messages": [{"role": "user", "content": sys.argv[2]}],
        "tools": [{"type": "function", "function": tool}]}
request = urllib.request.Request(sys.argv[1] + "/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["KEY"]})
print(urllib.request.urlopen(request).read().decode())
"""


@pytest.mark.slow(reason="a doctor turn of an agent script")
def test_an_agent_answered_only_by_side_requests_is_not_told_it_never_reached_the_server(tmp_path):
    (tmp_path / "toolless.py").write_text(TOOLLESS)
    profile = parse_profile({"name": "toolless", "env": {"KEY": "{api_key}"}, "headless": {
        "command": ["{python}", str(tmp_path / "toolless.py"), "{base_url}", "{prompt}"]}}, "toolless.toml")
    code, lines = doctor(profile)
    text = "\n".join(lines)
    assert code == 1, text
    assert "never reached the fake server" not in text
    assert "model requests: 0 — the agent reached the fake server, but each of its requests was answered as a " \
           "side request" in text
    assert "offers no shell tool" in text   # the server's reason, naming what was missing
