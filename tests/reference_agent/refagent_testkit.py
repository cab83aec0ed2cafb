"""Helpers for the reference agent's tests: scenarios, log reading, agent processes.

Every process a test starts runs in its own session with default signal dispositions and
is killed by PID (with its whole tree) at teardown; window programs a test saw are killed
by the PIDs they reported, and the teardown checks that none of them is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil

from fake_server import FakeServer
from fake_server.records import Window

BIN = Path(sys.executable).parent
REFAGENT = str(BIN / "refagent")
CANARY_KEY = "sk-canary-7f3e9a1b2c4d5e6f"


def write_scenario(tmp_path: Path, text: str, name: str = "scenario.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def read_events(path: Path) -> list[dict]:
    lines = path.read_bytes().split(b"\n")
    return [json.loads(line) for line in lines[1:] if line.strip()]


def reset_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def kill_pids(pids: list[int]) -> None:
    """SIGKILL each PID and everything below it (by PID, never by name)."""
    procs = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            procs += [p] + p.children(recursive=True)
        except psutil.Error:
            continue
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=10)


def alive(pids: list[int], started: dict[int, float] | None = None) -> list[int]:
    """The PIDs still running (zombies are gone). With ``started`` (PID -> create time, as
    a window reports them), a PID now held by a later process counts as gone: on a busy
    machine with a small pid_max a killed PID can be reused within the test."""
    out = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            if started and pid in started and abs(proc.create_time() - started[pid]) > 0.01:
                continue
            if proc.status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.Error:
            continue
    return out


def started_of(window: dict) -> dict[int, float]:
    """PID -> create time of each process a window record reports."""
    return {p["pid"]: p["create_time"] for p in window["pids"]}


class Agents:
    """Starts ``refagent`` processes; remembers every PID it or a window reported."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.sessions = tmp_path / "sessions"
        self.cwd = tmp_path / "work"
        self.cwd.mkdir(exist_ok=True)
        self.procs: list[subprocess.Popen] = []
        self.window_pids: list[int] = []
        self.started: dict[int, float] = {}  # create time of each window process

    def env(self, **extra: str) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REFAGENT_"))}
        env.update(extra)
        return env

    def start(self, *args: str, env: dict | None = None, stdin=subprocess.DEVNULL) -> subprocess.Popen:
        proc = subprocess.Popen(
            [REFAGENT, *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env or self.env(), cwd=self.cwd, start_new_session=True, preexec_fn=reset_signals,
        )
        self.procs.append(proc)
        return proc

    def run_args(self, server: FakeServer, *extra: str, adapter: str = "http") -> list[str]:
        # The inproc adapter reports its records, which the server takes under its token only.
        base_url = server.beacon_url if adapter == "inproc" else server.base_url
        return ["run", "--adapter", adapter, "--base-url", base_url, "--api-key", CANARY_KEY,
                "--sessions-dir", str(self.sessions), "--cwd", str(self.cwd), *extra]

    def session_of(self, proc: subprocess.Popen) -> tuple[str, Path]:
        line = proc.stderr.readline().decode()
        assert line.startswith("refagent: session "), line
        _, _, session_id, path = line.split()
        return session_id, Path(path)

    def note_window(self, record: Window) -> list[int]:
        pids = [p.pid for p in record.pids]
        self.window_pids += pids
        self.started.update(started_of(record.to_json()))
        return pids

    def cleanup(self) -> None:
        kill_pids([p.pid for p in self.procs if p.poll() is None] + alive(self.window_pids, self.started))
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
            for stream in (p.stdout, p.stderr, p.stdin):
                if stream:
                    stream.close()
        left = alive(self.window_pids, self.started)
        assert not left, f"processes left behind: {left}"


