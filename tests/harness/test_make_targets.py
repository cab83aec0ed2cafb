"""What the Makefile's targets would do (``make -n``, nothing run): the browser the HTML
report's test needs is installed for ``make test`` only — ``make eval`` installs no system
package."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")


def _dry_run(target: str, tmp_path: Path) -> str:
    """The commands ``make TARGET`` would run for a checkout with no virtualenv yet."""
    proc = subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={tmp_path / 'venv'}"],
                          capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout


def test_make_eval_installs_no_browser(tmp_path):
    commands = _dry_run("eval", tmp_path)
    assert "stopbench run --agent reference" in commands
    assert "apt-get" not in commands and "chromium" not in commands


def test_make_test_installs_the_browser_its_browser_test_needs(tmp_path):
    commands = _dry_run("test", tmp_path)
    assert "apt-get install -y -qq chromium" in commands
    assert "pytest" in commands
