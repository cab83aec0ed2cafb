"""Deterministic fake model server: scripted streams over three wire APIs, bash windows, beacons.

``FakeServer`` is imported lazily so that ``python -m fake_server.window`` (run inside a
tool call, where start-up time matters) does not pay for aiohttp.
"""
from .scenario import Scenario, ScenarioError, load_scenario

__all__ = ["FakeServer", "Scenario", "ScenarioError", "load_scenario"]


def __getattr__(name):
    if name == "FakeServer":
        from .server import FakeServer
        return FakeServer
    raise AttributeError(f"module 'fake_server' has no attribute {name!r}")
