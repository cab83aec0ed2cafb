"""A task folder for run tests: the agent asks for one tool call, runs ``command``, and the run
waits for the request that carries the tool's result, then settles (C13 the only check)."""

from __future__ import annotations

import textwrap
from pathlib import Path


def one_tool_call_task(parent: Path, name: str, command: str, *, ask: str, answer: str) -> Path:
    folder = parent / name
    folder.mkdir()
    (folder / "scenario.toml").write_text(textwrap.dedent(f'''\
        name = "{name}"
        [[responses]]
        match = {{ last = "user" }}
        [[responses.frames]]
        shell = "{command}"
        [[responses]]
        match = {{ last = "tool" }}
        [[responses.frames]]
        text = "{answer}"
        '''))
    (folder / "task.toml").write_text(textwrap.dedent(f'''\
        name = "{name}"
        drivers = ["subprocess"]
        [checks]
        mandatory = ["C13"]
        [[steps]]
        do = "send"
        text = "{ask}"
        [[steps]]
        do = "wait"
        for = "request"
        request = 2
        [[steps]]
        do = "settle"
        '''))
    return folder
