"""Fixtures for the reference agent's tests (helpers in ``refagent_testkit``)."""

from __future__ import annotations

import pytest
from refagent_testkit import Agents, write_scenario

from fake_server import FakeServer, load_scenario


@pytest.fixture
def agents(tmp_path):
    a = Agents(tmp_path)
    try:
        yield a
    finally:
        a.cleanup()


@pytest.fixture
async def server_for(tmp_path):
    """``await server_for(scenario_text)`` → a running FakeServer (closed at teardown)."""
    servers: list[FakeServer] = []

    async def start(text: str) -> FakeServer:
        scenario = load_scenario(write_scenario(tmp_path, text, f"scenario{len(servers)}.toml"))
        server = await FakeServer(scenario=scenario, port=0).start()
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for s in servers:
            await s.close()
