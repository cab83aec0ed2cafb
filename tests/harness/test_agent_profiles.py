"""The built-in profiles of real agents: each names a catalog entry and a registered reader,
keeps the key in the environment, and an agent with several wires has one adapter per wire
whose environment or provider picks that wire."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.agents.install import MARKER, agents, install_dir
from harness.profiles import base_values, builtin_names, fill, load_profile, parse_profile
from harness.readers import NO_READER, READERS
from harness.run.planning import WorkItem
from harness.run.rundir import RunDirs, agent_context
from harness.tasks import load_task

AGENTS = agents()

AGENT_PROFILES = [name for name in builtin_names() if load_profile(name).agent]
TASK = Path(__file__).resolve().parents[2] / "harness" / "tasks" / "interrupt-cancel"
VALUES = {"base_url": "http://127.0.0.1:9/v1", "url": "http://127.0.0.1:9", "api_key": "sk-stopbench-canary",
          "model": "stopbench-1", "home": "/h", "agent_dir": "/agents/x-1", "adapter": "chat"}


@pytest.mark.parametrize("name", AGENT_PROFILES)
def test_an_agent_profile_names_its_catalog_entry_and_reader(name):
    profile = load_profile(name)
    assert profile.agent in AGENTS and (profile.log_reader in READERS or profile.log_reader == NO_READER)
    commands = [spec.command for spec in (profile.headless, profile.acp) if spec is not None]
    assert commands  # headless, or ACP only (an adapter such as claude-agent-acp has no other mode)
    assert not any("{api_key}" in part for command in commands for part in command)  # argv is readable by every user
    assert not any("{api_key}" in f["content"] for f in profile.files)  # no file holds the key


def test_pi_has_one_adapter_and_one_provider_per_wire():
    profile = load_profile("pi")
    assert profile.adapters == ("chat", "responses", "anthropic", "gemini")
    assert profile.headless is not None and "{adapter}" in profile.headless.command  # --provider {adapter}
    [models] = [f for f in profile.files if f["path"].endswith("/.pi/agent/models.json")]
    providers = json.loads(fill(models["content"], VALUES))["providers"]
    assert set(providers) == set(profile.adapters)
    assert {name: p["api"] for name, p in providers.items()} == {
        "chat": "openai-completions", "responses": "openai-responses", "anthropic": "anthropic-messages",
        "gemini": "google-generative-ai"}
    assert {p["apiKey"] for p in providers.values()} == {"STOPBENCH_API_KEY"}  # the variable's name, not the key
    assert profile.env["STOPBENCH_API_KEY"] == "{api_key}"


def test_copilot_picks_each_wire_by_environment():
    profile = load_profile("copilot")
    assert set(profile.adapter_env) == set(profile.adapters) == {"chat", "responses", "anthropic"}
    wires = {a: (env["COPILOT_PROVIDER_TYPE"], env.get("COPILOT_PROVIDER_WIRE_API"))
             for a, env in profile.adapter_env.items()}
    assert wires == {"chat": ("openai", "completions"), "responses": ("openai", "responses"),
                     "anthropic": ("anthropic", None)}
    assert profile.env["COPILOT_PROVIDER_API_KEY"] == "{api_key}"
    assert profile.env["COPILOT_CLI_DIST_DIR"].startswith("{agent_dir}/cache/")  # unpacked once, at install


def test_cline_says_why_it_is_not_resumed_headless():
    profile = load_profile("cline")
    assert profile.headless is not None and profile.headless.resume_options == ()
    assert "TUI" in (profile.headless.no_resume or "")
    assert profile.env["OPENAI_API_KEY"] == "{api_key}"


def test_adapter_env_reaches_only_its_adapter(tmp_path):
    profile = parse_profile({"name": "two-wires", "adapters": ["chat", "responses"], "env": {"SHARED": "{model}"},
                             "adapter_env": {"responses": {"WIRE": "responses", "AT": "{base_url}"}},
                             "headless": {"command": ["agent", "{prompt}"]}}, "two.toml")
    task = load_task(TASK)
    envs = {}
    for adapter in profile.adapters:
        dirs = RunDirs.create()
        try:
            ctx = agent_context(profile, WorkItem(task, "subprocess", adapter, 1), dirs, "http://127.0.0.1:9",
                                "http://127.0.0.1:9/v1", "sk-stopbench-canary")
            envs[adapter] = ctx.env
        finally:
            shutil.rmtree(dirs.root)
    assert envs["chat"]["SHARED"] == envs["responses"]["SHARED"] == "stopbench-1"
    assert "WIRE" not in envs["chat"]
    assert (envs["responses"]["WIRE"], envs["responses"]["AT"]) == ("responses", "http://127.0.0.1:9/v1")


def test_agent_dir_is_the_install_folder_of_an_installed_agent(tmp_path, monkeypatch):
    monkeypatch.setenv("STOPBENCH_CACHE", str(tmp_path))
    profile = load_profile("copilot")
    assert "agent_dir" not in base_values(profile)  # not installed: no value, so a template using it fails
    folder = install_dir("copilot")
    program = folder / "node_modules/@github/copilot-linux-x64/copilot"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    (folder / MARKER).write_text('{"name": "copilot"}')
    values = base_values(profile)
    assert values["agent_dir"] == str(folder) and values["agent_bin"] == str(program)
    assert fill(profile.env["COPILOT_CLI_DIST_DIR"], values) == f"{folder}/cache/copilot/pkg/linux-x64/1.0.102"
