"""Drivers: the ways stopbench drives an agent, behind one protocol (``base.Driver``)."""

from __future__ import annotations

from harness.contract import DRIVERS
from harness.drivers.acp import AcpDriver
from harness.drivers.base import AgentContext, Driver, DriverError, ProfileMisfit, Unsupported
from harness.drivers.headless import HeadlessDriver
from harness.drivers.inproc import InprocDriver
from harness.drivers.terminal import TerminalDriver
from harness.history import History

DRIVER_CLASSES: dict[str, type[HeadlessDriver] | type[InprocDriver] | type[TerminalDriver] | type[AcpDriver]] = {
    "inproc": InprocDriver,
    "subprocess": HeadlessDriver,
    "terminal": TerminalDriver,
    "acp": AcpDriver,
}
assert tuple(DRIVER_CLASSES) == DRIVERS, "every driver the contract names has one class"


def make_driver(name: str, ctx: AgentContext, history: History) -> Driver:
    """A driver by name; ``Unsupported`` when the agent's profile cannot be driven that way."""
    try:
        cls = DRIVER_CLASSES[name]
    except KeyError:
        raise ValueError(f"unknown driver {name!r} (known: {', '.join(DRIVERS)})") from None
    return cls(ctx, history)


__all__ = ["AgentContext", "Driver", "DriverError", "ProfileMisfit", "Unsupported", "make_driver"]
