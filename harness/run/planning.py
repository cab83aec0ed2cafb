"""What a run will do: work items (task variant × adapter × repeat × mutant), which of them
apply to the agent.

A work item that does not apply to the agent — the task needs a driver its profile lacks,
or damage its reader cannot do — is still planned, with the reason, so it is reported as
*not run* instead of silently vanishing or, worse, counting as conformant.

How the work items are split into shards is ``harness.model.sharding``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.model.drivers import DRIVERS
from harness.model.sharding import work_key
from harness.profiles import Profile
from harness.readers import get_reader
from harness.tasks import Task


@dataclass(frozen=True)
class WorkItem:
    """One unit of work: a task variant for one adapter, one repeat, maybe one mutant."""

    task: Task
    driver: str
    adapter: str
    repeat: int
    mutant: str | None = None
    not_run: str | None = None  # why this task does not apply to the agent, if it does not

    @property
    def variant(self) -> str:
        return self.task.variant(self.driver)

    @property
    def key(self) -> str:
        """Stable across runs and machines: what shards are cut on and results matched by."""
        return work_key(self.variant, self.adapter, self.repeat, self.mutant)


def plan(profile: Profile, tasks: Sequence[Task], *, adapters: Sequence[str] | None = None, repeat: int = 1,
         mutants: Sequence[str | None] = (None,)) -> list[WorkItem]:
    """Every work item, in a deterministic order: mutant, task, driver, adapter, repeat.

    Mutants skip the in-process driver: a failpoint is switched on in the environment of a
    process the harness starts, and an agent loaded into the harness never sees it — its
    run would test the unmutated agent and count as the mutant's. A not-run item is planned
    once (repeat 1), with its reason.
    """
    items = []
    for mutant in mutants:
        for task in tasks:
            for driver in task.drivers:
                if mutant is not None and DRIVERS[driver].in_process:
                    continue
                reason = not_applicable(profile, task, driver)
                for adapter in adapters or profile.adapters:
                    if adapter not in profile.adapters or (task.adapters and adapter not in task.adapters):
                        continue
                    if reason is not None:
                        if mutant is None:
                            items.append(WorkItem(task, driver, adapter, 1, mutant, not_run=reason))
                        continue
                    for r in range(1, repeat + 1):
                        items.append(WorkItem(task, driver, adapter, r, mutant))
    return items


def not_applicable(profile: Profile, task: Task, driver: str) -> str | None:
    """Why ``task`` cannot run on ``driver`` for this agent (None when it can)."""
    if task.name in profile.not_run:
        return f"profile {profile.name!r}: {profile.not_run[task.name]}"
    if driver not in profile.drivers():
        return f"profile {profile.name!r} has no {DRIVERS[driver].plays}"
    spec = profile.headless if DRIVERS[driver].section == "headless" else None
    if spec is not None and spec.no_resume and resumes(task):
        return f"the task resumes a session, and profile {profile.name!r} has no headless resume: {spec.no_resume}"
    if DRIVERS[driver].section == "interactive" and profile.interactive is not None:
        steps = {s.do for s in task.steps}
        if "queue" in steps and not profile.interactive.queued_regex:
            return f"profile {profile.name!r} names no [interactive] queued_regex: queueing cannot be observed"
        if "cancel-queued" in steps and not profile.interactive.cancel_command:
            return (f"profile {profile.name!r} names no [interactive] cancel_command: its terminal UI has no way "
                    "to withdraw a queued item")
    damage = {s.get("kind") for s in task.steps if s.do == "damage"}
    if damage:
        reader = get_reader(profile.log_reader)
        if reader is None:
            return f"the task damages the session store, and profile {profile.name!r} has no log reader to do it"
        missing = sorted(damage - reader.damage_kinds)
        if missing:
            return f"the {reader.name} reader's store has no {', '.join(missing)} damage"
    return None


def resumes(task: Task) -> bool:
    """Whether the task resumes its session: a second turn, or a restart after a kill (a
    headless agent runs one process per turn, so every turn after the first is a resume)."""
    return sum(1 for s in task.steps if s.do == "send") > 1 or any(s.do == "restart" for s in task.steps)
