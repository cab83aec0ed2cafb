"""Where an exception happened, for an ``unknown`` check's evidence or a task run's harness
error: the last frames as ``file:line in function``, each file with its folder — relative to
the folder holding the project's packages (``harness/checks/base.py``), else in full — so that
two files of one name (``cli.py``, ``__init__.py``) are never confused."""

from __future__ import annotations

import traceback
from pathlib import Path

_PACKAGES_ROOT = Path(__file__).resolve().parents[2]  # harness/model/tracebacks.py → the folder holding harness/


def frame_lines(err: BaseException, *, last: int = 3, source: bool = False) -> list[str]:
    """The last ``last`` frames of ``err``'s traceback; with ``source``, each with its line of code."""
    return [f"{_shown(f.filename)}:{f.lineno} in {f.name}" + (f": {f.line}" if source else "")
            for f in traceback.extract_tb(err.__traceback__)[-last:]]


def _shown(filename: str) -> str:
    path = Path(filename)
    try:
        return str(path.resolve().relative_to(_PACKAGES_ROOT))
    except ValueError:
        return filename
