"""Shared fixtures: a running FakeServer per test, and a reaper for every PID a test saw."""
import psutil
import pytest

from fake_server import FakeServer
from fake_server.scenario import parse_scenario_text

BASH_TOOL = {"type": "function", "function": {"name": "bash", "description": "Run a shell command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}


def scenario(body: str, name: str = "t"):
    return parse_scenario_text(f'name = "{name}"\n' + body)


@pytest.fixture
async def server():
    async with FakeServer(seed="t") as srv:
        yield srv


@pytest.fixture
def reaper():
    """Collects PIDs (with their create_time) and kills whichever are still alive at teardown."""
    seen: list[tuple[int, float]] = []
    yield seen
    alive = []
    for pid, created in seen:
        try:
            proc = psutil.Process(pid)
            if abs(proc.create_time() - created) < 0.01:
                proc.kill()
                alive.append(proc)
        except psutil.NoSuchProcess:
            pass
    gone, still = psutil.wait_procs(alive, timeout=10)
    assert not still, f"processes survived SIGKILL: {still}"
