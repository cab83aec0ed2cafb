"""Drivers: the ways stopbench drives an agent, behind one protocol (``base.Driver``)."""

from __future__ import annotations

from harness.drivers.base import AgentContext, Driver, DriverError, Settlement, Unsupported

DRIVER_NAMES = ("inproc", "subprocess", "terminal")


def make_driver(name: str, ctx: AgentContext) -> Driver:
    """A driver by name; ``Unsupported`` when the agent's profile cannot be driven that way."""
    if name == "inproc":
        from harness.drivers.inproc import InprocDriver

        return InprocDriver(ctx)
    if name == "subprocess":
        from harness.drivers.headless import HeadlessDriver

        return HeadlessDriver(ctx)
    if name == "terminal":
        from harness.drivers.terminal import TerminalDriver

        return TerminalDriver(ctx)
    raise ValueError(f"unknown driver {name!r} (known: {', '.join(DRIVER_NAMES)})")


__all__ = ["AgentContext", "Driver", "DriverError", "Settlement", "Unsupported", "make_driver", "DRIVER_NAMES"]
