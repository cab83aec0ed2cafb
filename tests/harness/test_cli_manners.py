"""The ``stopbench`` command's manners: its help, its version, its answer to a typo, and
``list --json``."""

from __future__ import annotations

import json
import re
from importlib.metadata import version

import pytest

from harness.checks import REGISTRY
from harness.cli import main
from harness.profiles import builtin_names

COMMANDS = ("run", "list", "agents", "serve", "report", "gate", "diff", "calibrate")


def _exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The exit code, stdout and stderr of ``stopbench ARGV`` (argparse exits through SystemExit)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_every_command_once(capsys):
    code, out, _ = _exit(["--help"], capsys)
    assert code == 0
    for command in COMMANDS:
        lines = [line for line in out.splitlines() if re.match(rf"\s+{command}\s", line + " ")]
        assert len(lines) == 1, (command, out)
        assert len(lines[0].split()) > 1, f"{command}: its description is not on its line"


def test_version_is_the_installed_packages(capsys):
    code, out, _ = _exit(["--version"], capsys)
    assert (code, out) == (0, f"stopbench {version('stopbench')}\n")


def test_a_mistyped_command_is_answered_with_the_closest(capsys):
    code, _, err = _exit(["rn"], capsys)
    assert code == 2
    assert "invalid choice: 'rn'" in err and "did you mean run?" in err


@pytest.mark.parametrize(("argv", "usage", "hint"), [
    (["run", "--agnt", "reference"], "usage: stopbench run ", "--agent"),
    (["list", "--jsn"], "usage: stopbench list ", "--json"),
    (["agents", "instal", "codex"], "usage: stopbench agents ", "install"),
    (["report", "--hmtl", "x.html", "r.json"], "usage: stopbench report ", "--html"),
    (["report", "merge", "--ouput", "o.json", "a.json"], "usage: stopbench report merge ", "--output"),
    (["gate", "--baseline", "b.json", "--curent", "c.json"], "usage: stopbench gate ", "--current"),
    (["serve", "--prot", "0"], "usage: stopbench serve ", "--port"),
    (["calibrate", "--quik"], "usage: stopbench calibrate ", "--quick"),
    (["diff", "--jsn", "o.json", "a.json", "b.json"], "usage: stopbench diff ", "--json"),
])
def test_a_mistyped_option_shows_its_commands_usage_and_the_closest_name(argv, usage, hint, capsys):
    code, out, err = _exit(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith(usage), err
    assert re.search(rf"did you mean {re.escape(hint)}\b", err), err


def test_list_json_has_the_tasks_checks_and_agents_with_their_install_state(capsys):
    code, out, _ = _exit(["list", "--json"], capsys)
    assert code == 0
    listing = json.loads(out)
    assert [c["id"] for c in listing["checks"]] == list(REGISTRY)
    assert {"name", "drivers", "checks", "description"} <= set(listing["tasks"][0])
    assert [a["name"] for a in listing["agents"]] == builtin_names()
    by_name = {a["name"]: a for a in listing["agents"]}
    assert by_name["reference"]["installed"] is True  # comes with stopbench
    assert all(isinstance(a["installed"], bool) for a in listing["agents"] if "error" not in a)


def test_list_json_says_a_real_agent_is_not_installed_when_its_cache_is_empty(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("STOPBENCH_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", "/nonexistent")
    _, out, _ = _exit(["list", "--json"], capsys)
    real = [a for a in json.loads(out)["agents"] if a.get("agent")]
    assert real and not any(a["installed"] for a in real)
