"""``python -m fake_server`` (what ``stopbench serve`` runs): URL first, serves, exits 0 on SIGTERM."""
import json
import signal
import subprocess
import sys
import urllib.request

import psutil
import pytest

from fake_server.records import RECORDS_VERSION, read_jsonl


def start(*args, cwd):
    return subprocess.Popen([sys.executable, "-m", "fake_server", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=30)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_prints_base_url_serves_demo_and_exits_0_on_signal(tmp_path, signum, openapi):
    proc = start("--seed", "c", "--records", str(tmp_path / "records.jsonl"), cwd=tmp_path)
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        body = json.dumps({"model": "any", "messages": [{"role": "user", "content": "hi"}]}).encode()
        request = urllib.request.Request(base_url + "/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as resp:
            answer = json.load(resp)
        if openapi is not None:
            openapi.check("CreateChatCompletionResponse", answer, "demo answer")
        assert answer["choices"][0]["message"]["content"].startswith("Hello from the stopbench fake model server")
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == 0
        lines = (tmp_path / "records.jsonl").read_text().splitlines()
        assert json.loads(lines[0]) == {"records_version": RECORDS_VERSION}
        # (a pause a busy machine played late is told too, in a record of its own)
        kinds = [r.kind for r in read_jsonl(tmp_path / "records.jsonl") if r.kind != "late"]
        assert kinds == ["request", "response", "stream_end"]
    finally:
        stop(proc)
    assert not psutil.pid_exists(proc.pid)


def test_serve_refuses_a_bad_scenario_naming_file_and_item(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "b"\n[[responses]]\n[[responses.frames]]\npause = -1\n')
    proc = start("--scenario", str(bad), cwd=tmp_path)
    try:
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 2 and out == ""
        assert f"{bad}: responses[0].frames[0].pause: must be a number of seconds from 0 to 600, not -1" in err
    finally:
        stop(proc)


def test_serve_refuses_a_records_file_it_could_never_write_before_serving(tmp_path):
    proc = start("--records", str(tmp_path / "no-such-folder" / "records.jsonl"), cwd=tmp_path)
    try:
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 2 and out == ""
        assert f"--records {tmp_path / 'no-such-folder' / 'records.jsonl'}: {tmp_path / 'no-such-folder'} is not a folder" in err
        assert "cannot listen" not in err
    finally:
        stop(proc)
