"""Calibration: the error and floor of stopbench's own stopwatch, with an agent of known timing.

``stopbench calibrate`` (``harness.cli.calibrate.main``) times the calibration agent through
the ordinary drivers and prints measured − D per latency and driver; ``quick_floor()`` is the
few-hundred-millisecond version (D = 0) that a run puts in its results header. The agent
itself (``agent.py``, ``agent_inproc.py``) imports nothing of the harness; the names below are
loaded on first use, so loading the in-process agent does not load the harness.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.calibrate.figures import Calibration, CalSample, error_table
    from harness.calibrate.stopwatch import CalibrationError, calibrate, quick_floor, quick_floor_async

# Each name and the module that holds it: the figures, or the stopwatch that measures them.
_MODULES = {"CalSample": "figures", "Calibration": "figures", "error_table": "figures",
            "CalibrationError": "stopwatch", "calibrate": "stopwatch", "quick_floor": "stopwatch",
            "quick_floor_async": "stopwatch"}
__all__ = ["CalSample", "Calibration", "CalibrationError", "calibrate", "error_table", "quick_floor",
           "quick_floor_async"]


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(f"harness.calibrate.{_MODULES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
