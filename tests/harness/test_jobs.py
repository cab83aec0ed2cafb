"""Task runs side by side (``--jobs``): spans timed alone, the others paused, samples marked."""

from __future__ import annotations

import asyncio
import time

import pytest

from harness.profiles import load_profile
from harness.run import schedule
from harness.run.planning import WorkItem, plan
from harness.run.runner import ItemOutcome
from harness.tasks import load_all
from harness.timing.alone import Stopwatch


class Freezer:
    """A run's pause and resume, recorded; ``can`` False plays a containment without a freezer."""

    def __init__(self, can: bool = True):
        self.can = can
        self.calls: list[str] = []

    def pause(self, deadline: float) -> bool:
        self.calls.append("pause")
        return self.can

    def resume(self) -> None:
        self.calls.append("resume")


def join(sw: Stopwatch, freezer: Freezer):
    return sw.join(freezer.pause, freezer.resume)


async def test_one_run_alone_pauses_nobody_and_every_interval_is_alone():
    sw, f = Stopwatch(), Freezer()
    a = join(sw, f)
    start = time.monotonic_ns()
    await a.take()
    await a.give()
    assert f.calls == [] and a.alone_between(start, time.monotonic_ns())


async def test_a_span_pauses_the_others_and_only_its_own_interval_is_alone():
    sw, fa, fb = Stopwatch(), Freezer(), Freezer()
    a, b = join(sw, fa), join(sw, fb)
    both = time.monotonic_ns()
    await asyncio.sleep(0)
    await a.take()
    assert fb.calls == ["pause"] and fa.calls == [] and b.paused_since is not None
    in_span = time.monotonic_ns()
    await asyncio.sleep(0.001)
    span_end = time.monotonic_ns()
    await a.give()
    assert fb.calls == ["pause", "resume"] and b.paused_since is None
    assert a.alone_between(in_span, span_end)
    assert not a.alone_between(both, span_end)  # began while both worked
    assert not b.alone_between(in_span, span_end)  # b was paused in it
    assert b.paused_ns() > 0


async def test_harness_work_waits_for_a_span_and_a_span_for_the_work():
    sw = Stopwatch()
    a, b = join(sw, Freezer()), join(sw, Freezer())
    order: list[str] = []
    release = asyncio.Event()

    async def b_works() -> None:
        async with b.working():
            order.append("b works")
            await release.wait()
        order.append("b done")

    worker = asyncio.create_task(b_works())
    await asyncio.sleep(0)
    taking = asyncio.create_task(a.take())
    await asyncio.sleep(0.01)
    assert not taking.done() and order == ["b works"]  # the span waits for b's work
    release.set()
    await taking
    await worker
    assert order == ["b works", "b done"]
    blocked = asyncio.create_task(b_works())
    await asyncio.sleep(0.01)
    assert order == ["b works", "b done"]  # b's next work waits for a's span
    async with a.working():  # a's own work goes on in its span
        pass
    await a.give()
    await blocked
    assert order[-2:] == ["b works", "b done"]


async def test_without_a_freezer_the_span_is_not_alone():
    sw = Stopwatch()
    a, _ = join(sw, Freezer()), join(sw, Freezer(can=False))
    await a.take()
    start = time.monotonic_ns()
    await a.give()
    assert not a.alone_between(start, time.monotonic_ns())


async def test_a_run_that_joins_during_a_span_starts_paused():
    sw, fb = Stopwatch(), Freezer()
    a = join(sw, Freezer())
    await a.take()
    start = time.monotonic_ns()
    b = join(sw, fb)
    assert b.paused_since is not None
    end = time.monotonic_ns()
    await a.give()
    assert fb.calls == ["resume"] and a.alone_between(start, end)
    assert not a.alone_between(start, time.monotonic_ns())  # both work again
    await b.leave()
    await a.leave()


async def test_the_schedule_keeps_to_jobs_and_runs_in_process_items_alone(monkeypatch):
    profile = load_profile("reference")
    tasks = [t for t in load_all() if t.name in ("interrupt-cancel", "interrupt-timeout")]
    items = plan(profile, tasks, adapters=["http"], repeat=2, mutants=[None])
    assert {i.driver for i in items} >= {"inproc", "subprocess"}
    running: set[str] = set()
    seen: list[set[str]] = []

    async def fake_run_item(profile, item: WorkItem, **_) -> ItemOutcome:
        running.add(item.key)
        seen.append(set(running))
        await asyncio.sleep(0.01)
        running.discard(item.key)
        return ItemOutcome(result=None, latencies=[], observation=None)  # type: ignore[arg-type]

    monkeypatch.setattr(schedule, "run_item", fake_run_item)
    done: list[int] = []
    await schedule.run_all(profile, items, jobs=2, on_done=lambda n, item, outcome: done.append(n))
    by_key = {i.key: i for i in items}
    assert sorted(done) == list(range(1, len(items) + 1))
    assert max(len(s) for s in seen) == 2
    for s in seen:
        if any(by_key[k].driver == "inproc" for k in s):
            assert len(s) == 1, f"an in-process run had company: {s}"
        assert sum(schedule.has_deadline(by_key[k]) for k in s) <= 1, f"two runs with turn timeouts: {s}"
    assert sum(map(schedule.has_deadline, items)) >= 2


@pytest.mark.slow(reason="task runs of the reference agent two at a time")
@pytest.mark.timeout(300)
async def test_two_jobs_time_every_latency_alone_where_runs_can_be_frozen():
    """Real runs of the reference agent, two at a time: a sample counts only when timed
    alone, which a freezer-backed containment makes every sample."""
    profile = load_profile("reference")
    tasks = [t for t in load_all() if t.name in ("interrupt-cancel", "checkpoints")]
    items = [i for i in plan(profile, tasks, adapters=["http"], repeat=1, mutants=[None]) if i.driver == "subprocess"]
    outcomes: list[ItemOutcome] = []
    await schedule.run_all(profile, items, jobs=2, on_done=lambda n, item, outcome: outcomes.append(outcome))
    assert len(outcomes) == len(items) == 2
    assert all(o.result.status.value == "ran" for o in outcomes)
    kinds = {o.result.evidence["containment"]["kind"] for o in outcomes}
    timed = [s for o in outcomes for s in o.latencies]
    apart = [s for o in outcomes for s in o.concurrent]
    assert {s.latency for s in timed + apart} >= {"L3", "L7"}
    if kinds == {"env-tag"}:
        pytest.skip("this machine's containment cannot freeze a run (env-tag): samples beside another run "
                    f"are marked concurrent ({len(apart)} of {len(timed) + len(apart)} here)")
    assert apart == [], f"samples timed beside another run: {apart}"


async def test_a_span_given_up_while_it_waits_leaves_the_stopwatch_free():
    """A span cancelled while it waits for another run's harness work (a turn's timeout span,
    when the turn settles first) must not keep the stopwatch: the other run works on."""
    sw = Stopwatch()
    a, b = join(sw, Freezer()), join(sw, Freezer())
    release = asyncio.Event()

    async def b_works() -> None:
        async with b.working():
            await release.wait()

    worker = asyncio.create_task(b_works())
    await asyncio.sleep(0)
    taking = asyncio.create_task(a.take())
    await asyncio.sleep(0.01)
    taking.cancel()
    await asyncio.gather(taking, return_exceptions=True)
    await a.give()
    release.set()
    await worker
    async with asyncio.timeout(10):  # the failsafe of a test that would hang
        async with b.working():
            pass
    await a.leave()
    async with asyncio.timeout(10):
        await b.take()
    await b.give()


async def test_no_span_begins_while_another_run_is_in_a_timed_turn():
    """A run in a turn that times out must hold the stopwatch when its deadline falls: no
    other span begins meanwhile, and the deadline's own span is not held back."""
    sw = Stopwatch()
    a, b = join(sw, Freezer()), join(sw, Freezer())
    b.expect_deadline(time.monotonic_ns() + int(2e9))
    taking = asyncio.create_task(a.take())
    await asyncio.sleep(0.01)
    assert not taking.done()
    async with asyncio.timeout(10):
        await b.take(for_deadline=True)
    assert b.holding and not taking.done()
    await b.deadline_over()
    await b.give()
    async with asyncio.timeout(10):
        await taking
    assert a.holding
    await a.give()


async def test_a_run_in_a_timed_turn_is_not_paused():
    """Frozen in a timed turn, an agent would reach its deadline having done less, or act on
    it late — the harness's doing. So such a run is not paused, until its turn is over."""
    sw, fb = Stopwatch(), Freezer()
    a, b = join(sw, Freezer()), join(sw, fb)
    b.expect_deadline(time.monotonic_ns() + int(2e9))
    async with asyncio.timeout(10):
        await b.take(for_deadline=True)
    await b.deadline_over()
    await b.give()
    await a.take()  # b's timed turn is over: it is paused again
    assert fb.calls == ["pause"]
    await a.give()
