"""The headless and terminal drivers against a stand-in agent (tests/harness/fake_agent.py):
what they send, how they stop, what they record into the run's history — independent of the
reference agent. The in-process driver is exercised by the conformance suite (harness/tasks/)."""

import asyncio
import signal
from pathlib import Path

import pytest

from harness.containment.procs import leftovers
from harness.drivers import DriverError, Unsupported
from harness.model import ProcessExit, Settlement, StopDelivery, UserInput
from harness.model.history import History
from harness.profiles import load_profile

BUDGET_S = 30  # failsafe for each wait: the waits end on the agent's own output or exit


def within(awaitable):
    """The tests own their deadlines, as steps do."""
    return asyncio.wait_for(awaitable, BUDGET_S)

FAKE = Path(__file__).with_name("fake_agent.toml")


@pytest.fixture
def fake_profile():
    return load_profile(FAKE)


async def test_headless_completed_turn_records_input_exit_and_session(make_driver, fake_server, fake_profile):
    history = History()
    driver = make_driver("subprocess", fake_server, profile=fake_profile, history=history)
    try:
        await driver.send("hello there")
        settlement = await within(driver.settle())
    finally:
        await driver.close()
    exit_ = history.last(ProcessExit)
    assert settlement.reason == "completed" and settlement.how == "exit 0"
    assert exit_.returncode == 0 and exit_.expect == "completed"
    assert history.of(Settlement) == (settlement,)
    assert [i.text for i in history.of(UserInput)] == ["hello there"]
    assert "echo: hello there" in driver.transcript()
    assert driver.session_id and Path(driver.log_path).name == f"{driver.session_id}.log"


async def test_headless_stop_is_the_profile_signal_and_is_recorded_before_delivery(make_driver, fake_server, fake_profile):
    history = History()
    driver = make_driver("subprocess", fake_server, profile=fake_profile, history=history)
    try:
        await driver.send("please hang")
        await within(driver._stdout.wait_for("working", what="working"))
        stop = await driver.stop("user", phase="tool", request=None, window=None)
        settlement = await within(driver.settle())
    finally:
        await driver.close()
    exit_ = history.last(ProcessExit)
    assert stop.exercised and stop.how == "signal:SIGINT" and stop.source == "user"
    assert history.of(StopDelivery) == (stop,)
    assert stop.mono_ns <= exit_.ended_ns == settlement.mono_ns
    assert exit_.returncode == 3 and exit_.expect == "stopped"


async def test_a_headless_run_still_alive_at_the_end_is_recorded_as_ended_by_the_harness(
        make_driver, fake_server, fake_profile):
    """opencode, SIGTERMed while its background npm install ran, never exited: the run ended
    with the process alive and the harness ended it, unrecorded — C1 then read its open turn as
    left open by a process never killed. Its end is recorded now."""
    history = History()
    driver = make_driver("subprocess", fake_server, profile=fake_profile, history=history)
    try:
        await driver.send("please hang")
        await within(driver._stdout.wait_for("working", what="working"))
    finally:
        await driver.close()
    (exit_,) = history.of(ProcessExit)
    assert exit_.expect == "killed" and exit_.returncode is None and exit_.signal is not None


async def test_stop_after_the_turn_ended_is_not_exercised(make_driver, fake_server, fake_profile):
    history = History()
    driver = make_driver("subprocess", fake_server, profile=fake_profile, history=history)
    try:
        await driver.send("quick")
        await within(driver.settle())
        stop = await driver.stop("user", phase="stream", request=1, window=None)
    finally:
        await driver.close()
    assert stop.exercised is False


async def test_headless_kill_then_resume_same_session(make_driver, fake_server, fake_profile):
    history = History()
    driver = make_driver("subprocess", fake_server, profile=fake_profile, history=history)
    try:
        await driver.send("hang on")
        await within(driver._stdout.wait_for("working", what="working"))
        _, pid = await driver.kill()
        killed = history.last(ProcessExit)
        assert killed.signal == signal.SIGKILL and killed.expect == "killed" and killed.pid == pid
        session = driver.session_id
        assert await within(driver.restart()) is False  # a headless agent loads at its next turn
        await driver.send("after the crash")
        await within(driver.settle())
    finally:
        await driver.close()
    assert history.last(ProcessExit).role == "resume" and driver.session_id == session
    assert Path(driver.log_path).read_text().splitlines() == ["hang on", "after the crash"]
    assert not leftovers(driver.processes())


async def test_headless_refused_restart_records_the_exit(make_driver, fake_server, fake_profile):
    history = History()
    driver = make_driver("subprocess", fake_server, profile=fake_profile, history=history)
    try:
        await driver.send("first")
        await within(driver.settle())
        Path(driver.log_path).write_text("first\nDAMAGED\n")
        await within(driver.restart(expect="refused", text="again"))
    finally:
        await driver.close()
    refused = history.last(ProcessExit)
    assert refused.returncode == 2 and refused.expect == "refused"
    assert "line 2: damaged" in refused.stderr_tail


async def test_headless_cannot_queue(make_driver, fake_server, fake_profile):
    history = History()
    driver = make_driver("subprocess", fake_server, profile=fake_profile, history=history)
    with pytest.raises(Unsupported):
        await driver.queue("later")


async def test_terminal_turns_stop_key_and_settlement_line(make_driver, fake_server, fake_profile):
    history = History()
    driver = make_driver("terminal", fake_server, profile=fake_profile, history=history)
    try:
        await driver.send("hello")
        first = await within(driver.settle())
        await driver.send("now hang")
        await within(driver._raw.wait_for("working", what="working"))
        stop = await driver.stop("user", phase="tool", request=None, window=None)
        second = await within(driver.settle())
    finally:
        await driver.close()
    assert (first.reason, second.reason, second.source) == ("completed", "aborted", "user")
    assert second.how.startswith("screen: ") and history.of(Settlement) == (first, second)
    assert stop.exercised and stop.how == "key:ctrl-c"
    assert "echo: hello" in driver.transcript() and driver.session_id


async def test_a_terminal_is_read_even_where_a_closed_one_left_its_descriptor_registered(
        make_driver, fake_server, fake_profile):
    """A terminal closed while the loop still watched it leaves a dead registration under its
    descriptor number; the next pseudo-terminal often gets that number, and add_reader would then
    change the dead entry without watching the new descriptor — the agent's output never read."""
    import os

    loop = asyncio.get_running_loop()
    stale = []
    for _ in range(8):          # the numbers the next pty is likely to get
        r, w = os.pipe()
        loop.add_reader(r, lambda: None)
        stale.append((r, w))
    for r, w in stale:
        os.close(r)
        os.close(w)
    driver = make_driver("terminal", fake_server, profile=fake_profile, history=History())
    try:
        await within(driver.send("hello"))
        assert (await within(driver.settle())).reason == "completed"
    finally:
        await driver.close()
        for r, _ in stale:
            loop.remove_reader(r)
    assert "echo: hello" in driver.transcript()


async def test_terminal_kill_and_restart_is_at_its_prompt_after_load(make_driver, fake_server, fake_profile):
    history = History()
    driver = make_driver("terminal", fake_server, profile=fake_profile, history=history)
    try:
        await driver.send("hang here")
        await within(driver._raw.wait_for("working", what="working"))
        await driver.kill()
        loaded = await within(driver.restart())
        after_load = Path(driver.log_path).read_bytes()
    finally:
        await driver.close()
    assert loaded is True and after_load == b"hang here\n"
    killed = history.of(ProcessExit)[0]
    assert killed.expect == "killed" and killed.signal == signal.SIGKILL
    assert not leftovers(driver.processes())


async def test_terminal_settle_names_what_was_on_screen_when_the_agent_exits(make_driver, fake_server, fake_profile):
    history = History()
    driver = make_driver("terminal", fake_server, profile=fake_profile, history=history)
    try:
        await driver.send("hang")
        await within(driver._raw.wait_for("working", what="working"))
        await driver.kill()
        with pytest.raises(DriverError, match="output ended before the turn-ended line.*working"):
            await within(driver.settle())
    finally:
        await driver.close()


# --- screen mode: a full-screen UI (tests/harness/fake_tui.py) ----------------------------

@pytest.fixture
def tui_profile():
    return load_profile(Path(__file__).with_name("fake_tui.toml"))


async def test_screen_turn_ends_by_its_line_below_the_input_with_the_reason_its_group_names(make_driver, fake_server,
                                                                                         tui_profile):
    history = History()
    driver = make_driver("terminal", fake_server, profile=tui_profile, history=history)
    try:
        await driver.send("hello")
        first = await within(driver.settle())
        await driver.send("now hang")
        await within(driver._view.wait(lambda: driver._view.shows("working")))
        stop = await driver.stop("user", phase="tool", request=None, window=None)
        second = await within(driver.settle())
        await driver.send("hello again")  # the earlier turns' lines are above this input: not its end
        third = await within(driver.settle())
    finally:
        await driver.close()
    # The UI clears its busy indicator before it draws the line: the line settles the turn.
    assert [(s.reason, s.how) for s in (first, second, third)] == [
        ("completed", "screen: Done"), ("aborted", "screen: Interrupted"), ("completed", "screen: Done")]
    assert stop.exercised and stop.how == "key:esc" and driver.session_id


async def test_screen_queued_items_are_counted_on_screen(make_driver, fake_server, tui_profile):
    driver = make_driver("terminal", fake_server, profile=tui_profile)
    try:
        await driver.send("hang on")
        await within(driver._view.wait(lambda: driver._view.shows("working")))
        ids = [await within(driver.queue("later one")), await within(driver.queue("later two"))]
        assert driver.turn_running()  # typing into the box did not end the turn
    finally:
        await driver.close()
    assert ids == ["1", "2"]


async def test_screen_refused_restart_waits_on_the_screen_for_the_exit(make_driver, fake_server, tui_profile):
    history = History()
    driver = make_driver("terminal", fake_server, profile=tui_profile, history=history)
    try:
        await driver.send("hang")
        await within(driver._view.wait(lambda: driver._view.shows("working")))
        await driver.kill()
        Path(driver.log_path).write_text("hang\nDAMAGED\n")
        assert await within(driver.restart(expect="refused")) is False
    finally:
        await driver.close()
    refused = history.last(ProcessExit)
    assert (refused.returncode, refused.expect) == (2, "refused") and "line 2: damaged" in refused.stderr_tail
