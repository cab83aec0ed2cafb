"""The built-in Gemini CLI profile: it speaks the Gemini wire at the server's root, keeps the key
in the environment, and its session rule reads the id off the first stream-json line as the
agent prints it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from fake_server import wire_gemini
from harness.agents.install import MARKER, agents, install_dir
from harness.profiles import ProfileError, load_profile, parse_profile
from harness.readers import READERS
from harness.run.planning import WorkItem
from harness.run.rundir import RunDirs, agent_context
from harness.tasks import load_task

TASK = Path(__file__).resolve().parents[2] / "harness" / "tasks" / "interrupt-cancel"
RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "gemini-cli-0.61.0" / "stop-tool" / "case.json"


@pytest.fixture
def context(tmp_path, monkeypatch):
    """The profile's context with Gemini CLI "installed" into a private cache as a stand-in
    program: the profile renders ``{agent_bin}``, which exists only for an installed agent,
    and nothing here may depend on what the machine's user has installed."""
    monkeypatch.setenv("STOPBENCH_CACHE", str(tmp_path / "cache"))
    folder = install_dir("gemini-cli")
    program = folder / "node_modules" / ".bin" / "gemini"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(0o755)
    (folder / MARKER).write_text(json.dumps({"name": "gemini-cli", "binary": str(program.relative_to(folder))}),
                                 encoding="utf-8")
    profile = load_profile("gemini-cli")
    dirs = RunDirs.create()
    try:
        yield profile, agent_context(profile, WorkItem(load_task(TASK), "subprocess", "http", 1), dirs,
                                     "http://127.0.0.1:9", "http://127.0.0.1:9/v1", "sk-stopbench-canary")
    finally:
        shutil.rmtree(dirs.root)


def test_it_names_its_catalog_entry_its_reader_and_the_gemini_wire(context):
    profile, ctx = context
    assert agents()[profile.agent].package == "@google/gemini-cli" and profile.log_reader in READERS
    assert profile.wire_api == wire_gemini.NAME
    # The root URL: the agent adds /v1beta/models/{model}:streamGenerateContent itself.
    assert ctx.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"
    assert any(p.startswith("/v1beta/") for p in wire_gemini.PATHS)
    assert ctx.env["GEMINI_API_KEY"] == "sk-stopbench-canary" and ctx.env["GEMINI_CLI_NO_RELAUNCH"] == "true"


def test_the_key_stays_out_of_argv_and_files(context):
    profile, ctx = context
    assert profile.headless is not None
    argv = profile.headless.render({**ctx.values, "prompt": "hi", "session_id": "s-1"}, resume=True)
    assert "sk-stopbench-canary" not in " ".join(argv)
    assert argv[0] == str(install_dir("gemini-cli") / "node_modules" / ".bin" / "gemini")
    assert argv[-2:] == ["--resume", "s-1"] and argv[argv.index("-o") + 1] == "stream-json"
    [settings] = [f for f in profile.files if f["path"].endswith("/.gemini/settings.json")]
    assert "{api_key}" not in settings["content"]
    written = Path(ctx.values["home"], ".gemini", "settings.json")
    assert json.loads(written.read_text(encoding="utf-8"))["security"]["auth"]["selectedType"] == "gemini-api-key"


def test_the_session_rule_reads_the_id_the_agent_printed():
    profile = load_profile("gemini-cli")
    [first] = [r for r in json.loads(RECORDED.read_text(encoding="utf-8"))["runs"] if r["role"] == "first"]
    init = next(line for line in first["output_tail"].splitlines() if line.startswith('{"type":"init"'))
    match = re.search(profile.session.stdout_regex or "", first["output_tail"])
    assert match is not None and match.group("id") == json.loads(init)["session_id"]


def test_a_wire_no_module_serves_is_refused_naming_the_served_ones():
    with pytest.raises(ProfileError) as err:
        parse_profile({"name": "x", "wire_api": "vertex", "headless": {"command": ["a", "{prompt}"]}}, "p.toml")
    assert err.value.item == "wire_api" and "'vertex' is not one of anthropic, chat, gemini, responses" in str(err.value)
