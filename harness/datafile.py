"""Reading the harness's TOML data files (profiles, tasks) with errors that say where.

A bad file must name itself, the item at fault and the problem, and never surface as a
traceback: the two file kinds share this reader so they fail the same way.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any


class DataFileError(Exception):
    """A data file that cannot be used, naming the file, the item and the problem."""

    def __init__(self, file: str | Path, item: str, problem: str):
        self.file, self.item, self.problem = str(file), item, problem
        super().__init__(f"{file}: {item}: {problem}")


def read_toml(path: Path, error: type[DataFileError]) -> dict[str, Any]:
    """The parsed file, or ``error(path, item, problem)`` for a missing, non-UTF-8 or invalid one."""
    if not path.is_file():
        raise error(path, "file", "file not found")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise error(path, "toml", str(exc)) from None
    except UnicodeDecodeError as exc:
        raise error(path, "file", f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
