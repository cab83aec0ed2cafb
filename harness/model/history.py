"""One recorded history per task run: what the harness did and what it saw, in order.

Drivers and the runner write into it and never read each other's state: the inputs typed,
each Stop delivered (the request) and each settlement the driver saw (the effect), kills
with the store captured right after, restarts, process exits, windows. It only grows —
nothing recorded is edited afterwards (a late-known fact, like "the timeout fell due at
start + T", is a new entry) — and the observation the checkers judge is assembled from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from harness.model import (
    AgentKill,
    ProcessExit,
    Restart,
    Settlement,
    StopDelivery,
    TurnUpdate,
    UserInput,
    WindowObservation,
)

Entry = UserInput | StopDelivery | Settlement | AgentKill | Restart | ProcessExit | WindowObservation | TurnUpdate
E = TypeVar("E", UserInput, StopDelivery, Settlement, AgentKill, Restart, ProcessExit, WindowObservation, TurnUpdate)


@dataclass
class History:
    """Append-only entries of one task run."""

    _entries: list[Entry] = field(default_factory=list)

    def record(self, entry: Entry) -> None:
        self._entries.append(entry)

    def of(self, kind: type[E]) -> tuple[E, ...]:
        return tuple(e for e in self._entries if isinstance(e, kind))

    def last(self, kind: type[E]) -> E | None:
        found = self.of(kind)
        return found[-1] if found else None

    def __len__(self) -> int:
        return len(self._entries)
