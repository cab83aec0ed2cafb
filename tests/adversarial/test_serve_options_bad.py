"""``stopbench serve`` options: a port out of range and a records path that cannot be
written are refused before serving (exit 2, naming the option); records that cannot be
written at exit after all are kept in a file of their own, named on stderr."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

FAILSAFE_S = 30


def serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def ended(proc: subprocess.Popen) -> tuple[int, str, str]:
    """The exit of a server that should refuse to start; one that serves after all is told to stop."""
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline()  # its first line is the URL it serves on, if it serves
        if url:
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=FAILSAFE_S)
        return proc.returncode, url + out, err
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("value", ["-1", "65536"])
def test_a_port_out_of_range_is_refused_by_name(value):
    code, out, err = ended(serve("--port", value))
    assert code == 2 and out == "" and "argument --port" in err and "Traceback" not in err


def test_records_into_a_folder_are_refused_before_serving(tmp_path):
    code, out, err = ended(serve("--records", str(tmp_path)))
    assert code == 2 and out == "" and f"--records {tmp_path}: is a folder; name a file" in err


def test_records_into_a_missing_folder_are_refused_before_serving(tmp_path):
    code, out, err = ended(serve("--records", str(tmp_path / "gone" / "records.jsonl")))
    assert code == 2 and out == "" and f"{tmp_path / 'gone'} is not a folder" in err


def test_records_that_cannot_be_written_at_exit_are_kept_elsewhere(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    proc = serve("--records", str(folder / "records.jsonl"))
    kept = None
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
        request = urllib.request.Request(f"{url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=FAILSAFE_S) as response:  # a request recorded
            response.read()
        folder.rmdir()  # the folder goes away while it serves
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=FAILSAFE_S)
        found = re.search(r"they are kept in (\S+)", err)
        assert proc.returncode == 2 and found, err
        kept = Path(found.group(1))
        lines = kept.read_text().splitlines()
        assert lines[0].startswith('{"records_version"') and len(lines) > 1
        assert f"cannot write the records to {folder / 'records.jsonl'}" in err
    finally:
        proc.kill()
        proc.wait()
        if kept is not None:
            os.unlink(kept)
