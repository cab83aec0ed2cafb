"""A kill at a beacon lands at the beacon itself: the agent is frozen (SIGSTOP) in the very
call that stores the beacon's record, so what it made durable is decided by what it did
before the checkpoint — not by how soon the scheduler lets the harness send SIGKILL."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from fake_server.records import Request
from harness.containment.procs import leftovers
from harness.model import AgentKill, ProcessExit
from harness.model.history import History
from harness.profiles import load_profile
from harness.run.steps import EXECUTORS, play
from harness.run.taskrun import TaskRun
from harness.tasks.steps import Step

FAKE = Path(__file__).with_name("fake_agent.toml")
BUDGET_S = 30  # failsafe: every wait ends on the agent's output or the beacon


def process_state(pid: int) -> str:
    """The kernel's one-letter state of ``pid`` (``T``: stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


async def stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped, once the kernel has acted on a pending SIGSTOP (it stops
    the process before it runs another instruction; the state shows it when scheduled)."""
    async with asyncio.timeout(BUDGET_S):  # failsafe only
        while process_state(pid) != "T":
            await asyncio.sleep(0.001)
    return True


async def test_the_agent_is_frozen_as_the_request_arrives_and_killed_at_that_moment(make_driver, fake_server):
    history = History()
    driver = make_driver("subprocess", fake_server, profile=load_profile(FAKE), history=history)
    run = TaskRun(profile=load_profile(FAKE), driver=driver, server=fake_server, history=history, reader=None)
    wait = Step(do="wait", args={"for": "request", "request": 1}, index=2)
    kill = Step(do="kill", args={"at": "request-received"}, index=3)
    try:
        await driver.send("hang on")
        await asyncio.wait_for(driver._stdout.wait_for("working", what="working"), BUDGET_S)
        pid = driver.processes()[-1].pid
        run.kill_follows = True
        waiting = asyncio.ensure_future(EXECUTORS["wait"](run, wait))
        await asyncio.sleep(0)  # let the wait register before the request arrives
        arrived = fake_server.records.append(Request(api="chat", path="/v1/chat/completions", headers={},
                                                     status=200))
        signalled = waiting.done()  # SIGSTOP was sent in the call that stored the record, before any wait resumed
        await asyncio.wait_for(waiting, BUDGET_S)
        assert not signalled and await stopped(pid)
        run.kill_follows = False
        await EXECUTORS["kill"](run, kill)
    finally:
        await driver.close()
    (killed,) = history.of(AgentKill)
    assert arrived.mono_ns <= killed.mono_ns < history.last(ProcessExit).ended_ns
    assert history.last(ProcessExit).signal == signal.SIGKILL
    assert not leftovers(driver.processes())


async def test_play_freezes_only_for_a_wait_that_a_kill_follows(make_driver, fake_server):
    history = History()
    driver = make_driver("subprocess", fake_server, profile=load_profile(FAKE), history=history)
    run = TaskRun(profile=load_profile(FAKE), driver=driver, server=fake_server, history=history, reader=None)
    try:
        await driver.send("hang on")
        await asyncio.wait_for(driver._stdout.wait_for("working", what="working"), BUDGET_S)
        run.kill_follows = True  # left over: play decides it for each step
        playing = asyncio.ensure_future(play(run, (Step(do="wait", args={"for": "request", "request": 1}, index=1),),
                                             load_profile(FAKE).budgets))
        await asyncio.sleep(0)
        fake_server.records.append(Request(api="chat", path="/v1/chat/completions", headers={}, status=200))
        await asyncio.wait_for(playing, BUDGET_S)
        assert run.take_frozen() is None  # no kill followed: the agent was not frozen
    finally:
        await driver.close()


async def test_at_once_runs_in_the_call_that_stores_the_record_for_chunks_and_records_already_there():
    from fake_server.record_store import Records

    records = Records()
    seen: list[tuple[str, bool]] = []
    chunk = asyncio.ensure_future(records.wait_for(lambda r: r.kind == "chunk" and r.chunk == 2, "chunk 2",
                                                   at_once=lambda r: seen.append(("chunk", chunk.done()))))
    await asyncio.sleep(0)
    records.append_chunks(1, 1, [("a", None, None), ("b", None, None)])
    assert seen == [("chunk", False)]  # before the waiter resumed
    assert (await chunk).chunk == 2
    stored = records.append(Request(api="chat", path="/v1/chat/completions", headers={}, status=200))
    found = await records.wait_for(lambda r: r is stored, "request 1", at_once=lambda r: seen.append(("old", True)))
    assert found is stored and seen[-1] == ("old", True)
