"""Session-log readers, by the name an agent profile gives (``log_reader = "contract-v1"``).

A reader turns an agent's session file (a path, or its bytes) into a ``SessionLog``, or
raises ``LogDamaged`` naming the file and line. The ``none`` reader is for agents checked
black-box only: it reads nothing and returns None, so log checks answer ``unknown``.
Readers for other agents' native logs plug in here by adding an entry to ``READERS``.
"""

from __future__ import annotations

import os
from typing import Callable

from harness.model import SessionLog
from harness.readers.contract_v1 import LogDamaged, read_contract_v1

Reader = Callable[[str | os.PathLike[str] | bytes], SessionLog | None]


def read_nothing(source: str | os.PathLike[str] | bytes) -> None:
    """The black-box reader: the harness does not know this agent's log format."""
    return None


READERS: dict[str, Reader] = {
    "contract-v1": read_contract_v1,
    "none": read_nothing,
}


class UnknownReader(LookupError):
    def __init__(self, name: str):
        super().__init__(f"unknown log reader {name!r} (known: {', '.join(sorted(READERS))})")
        self.name = name


def get_reader(name: str) -> Reader:
    """The reader registered under ``name``; ``UnknownReader`` lists the known names."""
    try:
        return READERS[name]
    except KeyError:
        raise UnknownReader(name) from None


__all__ = ["LogDamaged", "READERS", "Reader", "UnknownReader", "get_reader", "read_contract_v1", "read_nothing"]
