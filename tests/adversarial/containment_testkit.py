"""What the adversarial tests of a whole ``stopbench run`` share: a cgroup2 directory of the
test's own to start the harness in (everything the run starts is found there afterwards,
whatever became of it), and a task whose bash window holds until something ends it."""

import os
import secrets
import time
from pathlib import Path

import pytest

from harness.containment.cgroup import Unavailable, _own_cgroup
from harness.containment.procs import reset_signals

SCENARIO = ('name = "holds-a-window"\n[[responses]]\n[[responses.frames]]\n'
            'shell = { window = { id = "w1", depth = 1, fanout = 1, ignore_term = true, escape = true, '
            'hold_s = 60 } }\n')
TASK = ('name = "holds-a-window"\ndrivers = ["subprocess"]\n[checks]\nmandatory = ["C13"]\n'
        '[[steps]]\ndo = "send"\ntext = "Run the long job."\n'
        '[[steps]]\ndo = "wait"\nfor = "window"\nwindow = "w1"\n[[steps]]\ndo = "settle"\n')


class TrialCgroup:
    """A cgroup2 directory of the trial's own, under this process's cgroup."""

    def __init__(self) -> None:
        try:
            parent, _ = _own_cgroup("cgroup-v2")
        except Unavailable as exc:
            pytest.skip(f"no cgroup2 hierarchy: {exc}")
        self.path = parent / f"stopbench-test-signals-{secrets.token_hex(6)}"
        try:
            self.path.mkdir()
        except OSError as exc:
            pytest.skip(f"cannot make a cgroup2 directory ({exc.strerror})")

    def join(self) -> None:
        """``preexec_fn``: the child moves itself in (before exec) with default signals."""
        reset_signals()
        with open(self.path / "cgroup.procs", "w") as f:
            f.write(str(os.getpid()))

    def dirs(self) -> list[Path]:
        return [Path(root) for root, _, _ in os.walk(self.path)]

    def pids(self) -> list[int]:
        found: list[int] = []
        for d in self.dirs():
            try:
                found += [int(p) for p in (d / "cgroup.procs").read_text().split()]
            except FileNotFoundError:
                continue
        return found

    def left(self) -> list[str]:
        """Whatever is still in the trial's cgroup: processes (with their command lines) and sub-cgroups."""
        out = [f"cgroup {d.name}" for d in self.dirs()[1:]]
        for pid in self.pids():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            out.append(f"process {pid}: {cmdline!r}")
        return out

    def remove(self) -> None:
        """Kill what is left and remove every directory (the test's own teardown)."""
        for d in self.dirs():
            (d / "cgroup.freeze").write_text("0")
        (self.path / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + 30  # failsafe: cgroup.kill is immediate
        for d in reversed(self.dirs()):
            while True:
                try:
                    d.rmdir()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.01)  # the killed processes are being reaped


def one_tool_call_task(parent: Path, name: str, command: str) -> Path:
    """A task folder whose agent runs ``command`` as its one tool call and then answers; the run
    waits for the request carrying the tool's result, and settles."""
    folder = parent / name
    folder.mkdir()
    (folder / "scenario.toml").write_text(
        f'name = "{name}"\n[[responses]]\nmatch = {{ last = "user" }}\n[[responses.frames]]\n'
        f'shell = "{command}"\n[[responses]]\nmatch = {{ last = "tool" }}\n[[responses.frames]]\ntext = "Done."\n')
    (folder / "task.toml").write_text(
        f'name = "{name}"\ndrivers = ["subprocess"]\n[checks]\nmandatory = ["C13"]\n'
        '[[steps]]\ndo = "send"\ntext = "Start it."\n'
        '[[steps]]\ndo = "wait"\nfor = "request"\nrequest = 2\n[[steps]]\ndo = "settle"\n')
    return folder
