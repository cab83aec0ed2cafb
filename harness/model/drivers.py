"""The drivers, as data: what each one can do to an agent, and where its code is.

Tasks validate their steps against these abilities, planning tells which work items a
profile can run, measuring and the checks read how a driver's observations came about — none
of them imports a driver. ``harness.drivers`` imports a driver's module only when a run
needs it (``DriverSpec.implementation``). Adding a driver is its module and one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DriverSpec:
    """One driver: its name on the command line and in tasks, and its abilities."""

    name: str
    implementation: str  # "module:Class", imported when a run uses the driver
    section: str  # the profile section it plays ("headless" means [headless] command)
    in_process: bool = False  # the agent runs inside the harness: no process to signal, freeze, kill or restart
    process_per_turn: bool = False  # every turn is a process of its own, the next one resuming the session
    per_turn_timeout: bool = False  # a send may hand the agent its own per-turn timeout (--timeout T)
    can_queue: bool = True  # a message can be typed while a turn runs, and withdrawn
    # The agent itself reports when its turn settled — an API's settled event, a protocol's answer
    # to the prompt: L1 (in process) runs from the Stop to that report, and L2 says it beside
    # the connection's close (the contract's "and → settlement appended").
    reports_settlement: bool = False
    # Each turn is one request the agent answers exactly once (a protocol's prompt), so a turn
    # that ended can be told from its answer where the store records no turn ends (C1).
    answers_each_turn: bool = False
    transcript: str | None = None  # the protocol transcript the driver keeps, as evidence names it
    # The surface the agent is reached through when it is not the agent's own command line or API
    # (an editor's protocol): its results are a scoreboard row of their own beside the agent's.
    surface: str | None = None

    @property
    def can_kill(self) -> bool:
        return not self.in_process

    @property
    def can_restart(self) -> bool:
        return not self.in_process

    @property
    def plays(self) -> str:
        """What of a profile this driver needs, in words: ``[headless] command``."""
        return f"[{self.section}] {'factory' if self.in_process else 'command'}"


DRIVERS: dict[str, DriverSpec] = {spec.name: spec for spec in (
    DriverSpec("inproc", "harness.drivers.inproc:InprocDriver", "inproc", in_process=True, reports_settlement=True),
    DriverSpec("subprocess", "harness.drivers.headless:HeadlessDriver", "headless", process_per_turn=True,
               per_turn_timeout=True, can_queue=False),
    DriverSpec("terminal", "harness.drivers.terminal:TerminalDriver", "interactive"),
    # An ACP client: Stop is session/cancel, a turn ends with the prompt's answer, resume is session/load.
    DriverSpec("acp", "harness.drivers.acp:AcpDriver", "acp", can_queue=False, reports_settlement=True,
               answers_each_turn=True, transcript="ACP transcript", surface="ACP"),
)}


def driver_spec(name: str) -> DriverSpec:
    """The driver called ``name``; ``ValueError`` naming the known ones otherwise."""
    try:
        return DRIVERS[name]
    except KeyError:
        raise ValueError(f"unknown driver {name!r} (known: {', '.join(DRIVERS)})") from None
