"""The built-in profiles of gptme and OpenHands: valid, pinned to their catalog entries, the key
in the environment only, and session rules that find what each agent writes and prints."""

import re

import pytest

from harness.agents.install import agents
from harness.profiles import load_profile
from harness.readers import reader_names

VALUES = {"agent_bin": "/agents/bin/agent", "base_url": "http://127.0.0.1:1/v1", "url": "http://127.0.0.1:1",
          "api_key": "sk-canary", "model": "stopbench-1", "home": "/run/home", "cwd": "/run/work",
          "prompt": "Run the long job.", "session_id": "0123456789abcdef0123456789abcdef",
          "session_uuid": "11111111-2222-4333-8444-555555555555", "adapter": "http"}


@pytest.mark.parametrize("name", ["gptme", "openhands"])
def test_profile_is_pinned_and_keeps_the_key_out_of_argv(name):
    p = load_profile(name)
    assert p.agent == name and name in agents() and agents()[name].registry == "pypi"
    assert agents()[name].version in p.description
    assert p.log_reader == name and p.log_reader in reader_names()
    assert p.drivers() == ["subprocess"] and p.wire_api == "chat" and p.fresh_home
    assert p.headless is not None and p.exit_codes["completed"] == 0
    for resume in (False, True):
        argv = p.headless.render(VALUES, resume=resume)
        assert argv[0] == "/agents/bin/agent" and argv[-1] == "Run the long job."
        assert not any("sk-canary" in a for a in argv)
    assert "{api_key}" in p.env.values()
    assert not any("{api_key}" in f["content"] for f in p.files)


def test_gptme_names_its_conversation_and_resumes_it():
    p = load_profile("gptme")
    assert p.session.chosen and p.streams
    first = p.headless.render(VALUES)
    again = p.headless.render(VALUES, resume=True)
    assert first[first.index("--name") + 1] == again[again.index("--name") + 1] == VALUES["session_uuid"]
    assert "-r" in again and "-r" not in first
    assert first[first.index("-m") + 1] == "local/stopbench-1" and "-n" in first
    assert first[first.index("--tool-format") + 1] == "tool"  # else calls come as markdown blocks
    assert p.env["OPENAI_BASE_URL"] == "{base_url}" and p.env["GPTME_TIKTOKEN_TIMEOUT"] == "0"
    assert p.session.log_glob == "{home}/.local/share/gptme/logs/*/conversation.jsonl"
    assert p.finish_action is not None and p.finish_action.tool == "complete"


def test_openhands_is_not_streamed_and_its_tmux_socket_stays_in_the_run():
    p = load_profile("openhands")
    assert p.streams is False
    assert p.env["TMUX_TMPDIR"] == "{home}"
    assert p.env["LLM_MODEL"] == "openai/{model}" and p.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    first = p.headless.render(VALUES)
    again = p.headless.render(VALUES, resume=True)
    assert "--resume" not in first and again[again.index("--resume") + 1] == VALUES["session_id"]
    assert {"--headless", "--json", "--override-with-envs"} <= set(first)
    assert p.finish_action is not None and p.finish_action.tool == "finish"
    assert p.budgets.min_run_timeout >= 30  # a timeout before it has even asked the model tests nothing
    # what OpenHands prints at exit, and the folder it keeps a conversation in
    printed = "Goodbye!\nConversation ID: e7dcfdeb1ed94d6e93008d59d660310c\nHint: run openhands --resume e7dc…"
    assert p.session.stdout_regex is not None and p.session.path_regex is not None
    match = re.search(p.session.stdout_regex, printed)
    assert match and match.group("id") == "e7dcfdeb1ed94d6e93008d59d660310c"
    folder = "/run/home/.openhands/conversations/e7dcfdeb1ed94d6e93008d59d660310c"
    found = re.search(p.session.path_regex, folder)
    assert found and found.group("id") == match.group("id")
