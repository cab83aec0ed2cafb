"""pytest wiring for stopbench: options, fixtures, and the conformance suite as test items.

``pytest harness/tasks --agent reference`` collects every ``harness/tasks/<name>/task.toml``
as one test item per task variant × adapter × repeat; an item fails with the evidence of
every mandatory check that did not pass, and one that does not apply to the agent (no
driver for it) is skipped with the reason. Options: ``--agent NAME|PATH``, ``--adapter A`` (repeatable,
default all of the agent's), ``--repeat N`` (default 1).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.containment import Containment
from harness.containment.procs import ProcRef, kill_all
from harness.model import Outcome, Tier

ROOT = Path(__file__).resolve().parent


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stopbench")
    group.addoption("--agent", default="reference", help="agent profile for the conformance suite (name or path)")
    group.addoption("--adapter", action="append", default=[], help="adapter(s) to run the tasks on (default: all)")
    group.addoption("--repeat", type=int, default=1, help="repeats of each task variant (default 1)")


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.name == "task.toml" and file_path.parent.parent == ROOT / "harness" / "tasks":
        return TaskFile.from_parent(parent, path=file_path)
    return None


class TaskFile(pytest.File):
    """One task file: its work items for the chosen agent, adapters and repeats."""

    def collect(self):
        from harness.checks import REGISTRY
        from harness.profiles import load_profile
        from harness.run.planning import plan
        from harness.tasks import load_task

        config = self.config
        profile = load_profile(config.getoption("--agent"))
        task = load_task(self.path, known_checks=set(REGISTRY))
        adapters = [a for value in config.getoption("--adapter") for a in value.split(",") if a] or None
        for item in plan(profile, [task], adapters=adapters, repeat=config.getoption("--repeat")):
            test = TaskItem.from_parent(self, name=f"{item.variant}[{item.adapter}-{item.repeat}]",
                                        work=item, profile=profile)
            test.add_marker(pytest.mark.slow(reason="a task run of the agent, end to end"))
            yield test


class TaskItem(pytest.Item):
    def __init__(self, *, work, profile, **kwargs):
        super().__init__(**kwargs)
        self.work = work
        self.profile = profile
        self.result = None

    def runtest(self) -> None:
        from harness.model import RunStatus, task_verdict
        from harness.run.runner import run_item

        if self.work.not_run is not None:
            pytest.skip(f"not run: {self.work.not_run}")
        outcome = asyncio.run(run_item(self.profile, self.work))
        self.result = outcome.result
        if outcome.result.status is RunStatus.NOT_RUN:
            pytest.skip(f"not run: {outcome.result.reason}")
        verdict = task_verdict(outcome.result)
        if verdict is None or not verdict.ok:
            raise TaskNotConformant(outcome.result)
        # The yardstick keeps the contract's letter: a check it passes only non-strictly (its own
        # convention where the contract names one) is a fault of the reference agent or a checker.
        lenient = [c.check for c in outcome.result.checks if c.non_strict]
        if self.profile.name == "reference" and lenient:
            raise TaskNotConformant(outcome.result, f"passed only non-strictly: {', '.join(lenient)}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, TaskNotConformant):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"{self.work.variant} on {self.work.adapter} #{self.work.repeat}"


class TaskNotConformant(AssertionError):
    """A task run in which a mandatory check did not pass; the message is the evidence."""

    def __init__(self, result, why: str | None = None):
        from harness.model import task_verdict

        verdict = task_verdict(result)
        lines = [f"{result.task} on {result.adapter} (agent {result.agent}, repeat {result.repeat}): "
                 f"{why or (verdict.value if verdict else result.status.value)}"]
        if result.reason:
            lines.append(f"  {result.status.value}: {result.reason}")
        for c in result.checks:
            if c.tier is Tier.MANDATORY and c.outcome not in (Outcome.PASS, Outcome.SKIPPED):
                lines.append(f"  {c.check} {c.name}: {c.outcome.value}: {c.evidence.summary}")
                lines.extend(f"      {item}" for item in c.evidence.items[:5])
        super().__init__("\n".join(lines))


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def agent_profile(request: pytest.FixtureRequest):
    """The profile named by ``--agent``."""
    from harness.profiles import load_profile

    return load_profile(request.config.getoption("--agent"))


@pytest.fixture
async def fake_server():
    """A fake model server on 127.0.0.1, port 0, serving the built-in demo scenario."""
    from fake_server import FakeServer

    async with FakeServer(scenario=None, port=0) as server:
        yield server


@pytest.fixture
def run_dirs():
    """A fresh HOME / sessions / working folder, removed afterwards."""
    import shutil

    from harness.run.rundir import RunDirs

    dirs = RunDirs.create()
    yield dirs
    shutil.rmtree(dirs.root, ignore_errors=True)


@pytest.fixture
def make_driver(agent_profile, run_dirs):
    """``make_driver(name, server, *, profile=None, adapter="http")``: a driver on a fresh run
    directory. Tests close their drivers; as a safety net every process a driver started is
    ended by PID at teardown, and the test fails if one survives."""
    from types import SimpleNamespace

    from harness.containment.procs import kill_all, leftovers
    from harness.drivers import make_driver as build
    from harness.model.history import History
    from harness.run.planning import WorkItem
    from harness.run.rundir import agent_context, canary_key

    drivers = []

    def factory(name, server, *, profile=None, adapter="http", history=None):
        task = SimpleNamespace(scenario_path=ROOT / "fake_server" / "demo.toml", scenario=None)
        ctx = agent_context(profile or agent_profile, WorkItem(task, name, adapter, 1), run_dirs, server.url,
                            server.base_url, canary_key())
        driver = build(name, ctx, history if history is not None else History())
        drivers.append(driver)
        return driver

    yield factory
    refs = [r for d in drivers for r in d.processes()]
    kill_all(refs)
    assert not leftovers(refs), f"processes left behind: {leftovers(refs)}"


# --- nothing left behind -------------------------------------------------------------------
# Every process a test starts must be ended by PID, and every run folder removed. The session
# gets a temp folder of its own (TMPDIR and ``tempfile.tempdir`` point into it) and a
# containment tag in its environment (``harness.containment``, env-tag kind), so what it left
# behind is told apart from anything else on the machine: at the end, a descendant of pytest
# still alive, or any process that carries the session's tag, works or runs from inside the
# session's temp folder, or descends from one of those (a bash window or a daemon that
# escaped with setsid is no descendant, but it keeps the tag or its task's folder), or a
# harness run folder still there, fails the session. Those processes are then ended and the
# folder removed, so even a failed session leaves nothing running.

_SESSION_TMP: Path | None = None
_SESSION_RUN: Containment | None = None


def pytest_sessionstart(session: pytest.Session) -> None:
    import os
    import secrets
    import tempfile

    global _SESSION_TMP, _SESSION_RUN
    # Beside, not inside, the folder of the session that started this one (pytest-xdist's workers
    # inherit its TMPDIR): a socket path under two such folders is past what a Unix socket takes.
    parent = os.environ.setdefault("STOPBENCH_TESTS_TMP_PARENT", tempfile.gettempdir())
    _SESSION_TMP = Path(tempfile.mkdtemp(prefix="stopbench-tests-", dir=parent))
    tempfile.tempdir = str(_SESSION_TMP)
    os.environ["TMPDIR"] = str(_SESSION_TMP)
    _isolate_from_the_user(_SESSION_TMP)
    _SESSION_RUN = Containment.open(_SESSION_TMP, f"tests-{secrets.token_hex(6)}", kinds=("env-tag",))
    os.environ.update(_SESSION_RUN.env)


# What a test sees of the machine's user is nothing: an empty HOME, an empty agent cache and
# no XDG folders of theirs, the way a fresh machine (or CI) sees it. A suite that passed only
# because a developer had a real agent installed under ~/.cache/stopbench would fail on a
# fresh clone; a test that needs an installed agent installs it (or a stand-in program) into
# this cache itself, or skips saying why.
_USER_FOLDERS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR")


def _isolate_from_the_user(root: Path) -> None:
    import os

    home, cache = root / "user-home", root / "user-cache"
    home.mkdir()
    cache.mkdir()
    for name in _USER_FOLDERS:
        os.environ.pop(name, None)
    os.environ["HOME"] = str(home)
    os.environ["STOPBENCH_CACHE"] = str(cache)


def _leftovers(root: Path, run: Containment) -> tuple[list[str], list[ProcRef]]:
    """What the session left: report lines, and the processes among them."""
    import psutil

    found = {m.pid: m.ref for m in run.members()}
    for p in psutil.Process().children(recursive=True):
        found.setdefault(p.pid, ProcRef.of(p.pid, "descendant of pytest"))
    lines = []
    for pid, ref in sorted(found.items()):
        live = ref.process()
        try:
            if live is not None:
                lines.append(f"process {pid} ({ref.role}): {' '.join(live.cmdline())[:160]}")
        except psutil.Error:
            continue
    lines += [f"run folder {folder}" for folder in sorted(root.glob("stopbench-*"))]
    return lines, list(found.values())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import shutil

    if _SESSION_TMP is None or _SESSION_RUN is None:
        return
    lines, refs = _leftovers(_SESSION_TMP, _SESSION_RUN)
    if lines:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("")
            reporter.write_line("left behind by the test session (every process and run folder must be ended):",
                                red=True)
            for line in lines:
                reporter.write_line(f"  {line}", red=True)
        if session.exitstatus == 0:
            session.exitstatus = 1
    _SESSION_RUN.end(budget_s=30)
    kill_all(refs)
    shutil.rmtree(_SESSION_TMP, ignore_errors=True)
