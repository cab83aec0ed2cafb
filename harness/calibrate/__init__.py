"""Calibration: the error and floor of stopbench's own stopwatch, with an agent of known timing.

``stopbench calibrate`` (``harness.cli.calibrate.main``) times the calibration agent through
the ordinary drivers and prints measured − D per latency and driver; ``quick_floor()`` is the
few-hundred-millisecond version (D = 0) that a run puts in its results header. The agent
itself (``agent.py``, ``agent_inproc.py``) imports nothing of the harness; the names below are
loaded on first use, so loading the in-process agent does not load the harness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.calibrate.stopwatch import (
        Calibration,
        CalibrationError,
        CalSample,
        calibrate,
        error_table,
        quick_floor,
        quick_floor_async,
    )

__all__ = ["CalSample", "Calibration", "CalibrationError", "calibrate", "error_table", "quick_floor",
           "quick_floor_async"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from harness.calibrate import stopwatch

        return getattr(stopwatch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
