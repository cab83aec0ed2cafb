"""Qwen Code's built-in profile starts the CLI itself, so Stop reaches it.

From 0.2x the ``qwen`` program (``cli-entry.js``) always starts ``cli.js`` as a child with
``spawnSync``; QWEN_CODE_NO_RELAUNCH no longer keeps it one process, and a signal to the
wrapper never reaches the CLI. Here a stand-in install with that layout (a wrapper that
spawns, a CLI that exits 130 on SIGINT as Qwen Code does) is driven by the profile's own
headless command.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from harness.profiles import load_profile

WRAPPER = """#!/usr/bin/env node
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const r = spawnSync(process.execPath, [path.join(__dirname, 'cli.js'), ...process.argv.slice(2)], {stdio: 'inherit'});
process.exit(r.status ?? 1);
"""
CLI = """process.on('SIGINT', () => { console.log('Operation cancelled.'); process.exit(130); });
console.log('ready ' + process.pid);
setInterval(() => {}, 1000);
"""


def fake_install(root: Path) -> Path:
    """An install laid out as Qwen Code 0.24's: ``.bin/qwen`` -> ``cli-entry.js`` beside ``cli.js``."""
    package = root / "node_modules" / "@qwen-code" / "qwen-code"
    package.mkdir(parents=True)
    (package / "cli-entry.js").write_text(WRAPPER)
    (package / "cli-entry.js").chmod(0o755)
    (package / "cli.js").write_text(CLI)  # not executable, as 0.24.4 ships it
    bindir = root / "node_modules" / ".bin"
    bindir.mkdir()
    (bindir / "qwen").symlink_to("../@qwen-code/qwen-code/cli-entry.js")
    return bindir / "qwen"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node, as Qwen Code does")
def test_stop_reaches_the_cli_not_a_wrapper(tmp_path):
    profile = load_profile("qwen-code")
    assert profile.headless is not None
    program = fake_install(tmp_path)
    argv = profile.headless.render({"agent_bin": str(program), "agent_dir": str(tmp_path), "prompt": "hello"})
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True,
                            text=True)
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()  # the CLI has its SIGINT handler once it says so
        assert ready.startswith("ready "), ready
        cli_pid = int(ready.split()[1])
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=20) == 130  # the CLI's own answer to Stop, not a wrapper's death
        assert cli_pid == proc.pid and not psutil.pid_exists(cli_pid)
    finally:
        try:  # the whole session: a CLI a wrapper left behind is in it too
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        proc.stdout.close()
