"""Deterministic fake model server: scripted streams over four wire APIs, bash windows, beacons.

Every name is imported lazily so that ``python -m fake_server.window`` (run inside a tool call,
where start-up time is what the harness waits on) imports nothing but the window program.
"""
from __future__ import annotations

import importlib

TYPE_CHECKING = False       # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from .scenario import Scenario, ScenarioError
    from .scenario_loader import load_scenario
    from .server import FakeServer

_LAZY = {"FakeServer": "server", "Scenario": "scenario", "ScenarioError": "scenario",
         "load_scenario": "scenario_loader"}
__all__ = ["FakeServer", "Scenario", "ScenarioError", "load_scenario"]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'fake_server' has no attribute {name!r}")
