"""The order and overlap of a run's task runs (``stopbench run --jobs N``).

Task runs start in plan order, up to ``jobs`` at a time, sharing one ``Stopwatch``: each
times its latencies alone (``harness.timing.alone``). A run on the in-process driver starts only
when no other runs and nothing else starts beside it: its agent lives in the harness's own
process, where it can be neither frozen nor kept apart; and two runs whose turns time out
do not run side by side. Results are reported as each run ends; their order in the reports
is the plan's, whatever order they ended in.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.model.drivers import DRIVERS
from harness.profiles import Profile
from harness.run.planning import WorkItem
from harness.run.runner import DEFAULT_RETRIES, ItemOutcome, run_item
from harness.timing.alone import Stopwatch


async def run_all(profile: Profile, items: Sequence[WorkItem], *, jobs: int = 1, retries: int = DEFAULT_RETRIES,
                  keep: Path | None = None, on_start: Callable[[int, WorkItem], None] | None = None,
                  on_done: Callable[[int, WorkItem, ItemOutcome], None] | None = None) -> None:
    """Run ``items`` (numbered from 1 in the callbacks); the first harness error ends them all."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    stopwatch = Stopwatch()
    changed = asyncio.Condition()
    running: dict[int, WorkItem] = {}

    def may_start(item: WorkItem) -> bool:
        if runs_alone(item):
            return not running
        if len(running) >= jobs or any(map(runs_alone, running.values())):
            return False
        return not (has_deadline(item) and any(map(has_deadline, running.values())))

    async def one(n: int, item: WorkItem) -> None:
        try:
            outcome = await run_item(profile, item, retries=retries, keep=keep, stopwatch=stopwatch)
            if on_done:
                on_done(n, item, outcome)
        finally:
            async with changed:
                del running[n]
                changed.notify_all()

    async with asyncio.TaskGroup() as group:
        for n, item in enumerate(items, 1):
            async with changed:
                await changed.wait_for(functools.partial(may_start, item))
                running[n] = item
            if on_start:
                on_start(n, item)
            group.create_task(one(n, item))


def runs_alone(item: WorkItem) -> bool:
    """An in-process agent lives in the harness's own process: it can be neither frozen nor
    kept apart, so its run has no company."""
    return DRIVERS[item.driver].in_process


def has_deadline(item: WorkItem) -> bool:
    """Whether the item's task gives a turn a timeout: two such runs side by side would each
    be in its timed turn while the other times its deadline (harness.timing.alone pauses neither)."""
    return any(step.do == "send" and "timeout" in step.args for step in item.task.steps)
