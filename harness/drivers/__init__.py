"""Drivers: the ways stopbench drives an agent, behind one protocol (``base.Driver``).

Which drivers there are, and what each can do, is data in ``harness.model.drivers``; a
driver's module is imported when a run makes one, so nothing else loads the drivers' tools
(pexpect, pyte) to know about them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from harness.drivers.base import AgentContext, Driver, DriverError, ProfileMisfit, Unsupported
from harness.model.drivers import driver_spec
from harness.model.history import History


def driver_class(name: str) -> Callable[[AgentContext, History], Driver]:
    """The class implementing the driver called ``name`` (``ValueError`` for an unknown name)."""
    module, _, attr = driver_spec(name).implementation.partition(":")
    cls: Callable[[AgentContext, History], Driver] = getattr(importlib.import_module(module), attr)
    return cls


def make_driver(name: str, ctx: AgentContext, history: History) -> Driver:
    """A driver by name; ``Unsupported`` when the agent's profile cannot be driven that way."""
    return driver_class(name)(ctx, history)


__all__ = ["AgentContext", "Driver", "DriverError", "ProfileMisfit", "Unsupported", "driver_class", "make_driver"]
