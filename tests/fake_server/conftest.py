"""Shared fixtures: a running FakeServer whose every answer is checked against the OpenAI
OpenAPI description at teardown, and a reaper for every PID a test saw."""
import psutil
import pytest
from fake_openapi import SPEC_PATH, OpenApi

from fake_server import FakeServer


@pytest.fixture(scope="session")
def openapi():
    """The OpenAPI checker, or None where the description is absent (test_openapi skips then)."""
    return OpenApi() if SPEC_PATH.exists() else None


@pytest.fixture
async def server(openapi):
    async with FakeServer(seed="t", keep_wire=True) as srv:
        yield srv
    if openapi is not None:
        for request_no, exchange in sorted(srv.wire.items()):
            openapi.check_exchange(request_no, exchange)
        for n, exchange in enumerate(srv.side_wire, start=1):
            openapi.check_exchange(f"side {n}", exchange)


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
