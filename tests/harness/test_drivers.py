"""The headless and terminal drivers against a stand-in agent (tests/harness/fake_agent.py):
what they send, how they stop, what they record — independent of the reference agent.
The in-process driver is exercised by the conformance suite (tasks/)."""

import signal
from pathlib import Path

import pytest

from harness.drivers import DriverError, Unsupported
from harness.procs import leftovers
from harness.profiles import load_profile

FAKE = Path(__file__).with_name("fake_agent.toml")


@pytest.fixture
def fake_profile():
    return load_profile(FAKE)


async def test_headless_completed_turn_records_input_exit_and_session(make_driver, fake_server, fake_profile):
    driver = make_driver("subprocess", fake_server, profile=fake_profile)
    try:
        await driver.send("hello there")
        settlement = await driver.settle(30)
    finally:
        await driver.close()
    assert settlement.reason == "completed"
    assert settlement.exit.returncode == 0 and settlement.exit.expect == "completed"
    assert [i.text for i in driver.inputs] == ["hello there"]
    assert "echo: hello there" in driver.transcript()
    assert driver.session_id and Path(driver.log_path).name == f"{driver.session_id}.log"


async def test_headless_stop_is_the_profile_signal_and_is_recorded_before_delivery(make_driver, fake_server, fake_profile):
    driver = make_driver("subprocess", fake_server, profile=fake_profile)
    try:
        await driver.send("please hang")
        await driver._stdout.wait_for("working", deadline_s=30, what="working")
        stop = await driver.stop("user", phase="tool", request=None, window=None)
        settlement = await driver.settle(30)
    finally:
        await driver.close()
    assert stop.exercised and stop.how == "signal:SIGINT" and stop.source == "user"
    assert stop.mono_ns <= settlement.exit.ended_ns
    assert settlement.exit.returncode == 3 and settlement.exit.expect == "stopped"


async def test_stop_after_the_turn_ended_is_not_exercised(make_driver, fake_server, fake_profile):
    driver = make_driver("subprocess", fake_server, profile=fake_profile)
    try:
        await driver.send("quick")
        await driver.settle(30)
        stop = await driver.stop("user", phase="stream", request=1, window=None)
    finally:
        await driver.close()
    assert stop.exercised is False


async def test_headless_kill_then_resume_same_session(make_driver, fake_server, fake_profile):
    driver = make_driver("subprocess", fake_server, profile=fake_profile)
    try:
        await driver.send("hang on")
        await driver._stdout.wait_for("working", deadline_s=30, what="working")
        _, pid = await driver.kill()
        assert driver.exits[-1].signal == signal.SIGKILL and driver.exits[-1].expect == "killed"
        session = driver.session_id
        assert await driver.restart() is None
        await driver.send("after the crash")
        settlement = await driver.settle(30)
    finally:
        await driver.close()
    assert settlement.exit.role == "resume" and driver.session_id == session
    assert Path(driver.log_path).read_text().splitlines() == ["hang on", "after the crash"]
    assert not leftovers(driver.processes())


async def test_headless_refused_restart_records_the_exit(make_driver, fake_server, fake_profile):
    driver = make_driver("subprocess", fake_server, profile=fake_profile)
    try:
        await driver.send("first")
        await driver.settle(30)
        Path(driver.log_path).write_text("first\nDAMAGED\n")
        await driver.restart(expect="refused", text="again")
    finally:
        await driver.close()
    assert driver.exits[-1].returncode == 2 and driver.exits[-1].expect == "refused"
    assert "line 2: damaged" in driver.exits[-1].stderr_tail


async def test_headless_cannot_queue(make_driver, fake_server, fake_profile):
    driver = make_driver("subprocess", fake_server, profile=fake_profile)
    with pytest.raises(Unsupported):
        await driver.queue("later")


async def test_terminal_turns_stop_key_and_settlement_line(make_driver, fake_server, fake_profile):
    driver = make_driver("terminal", fake_server, profile=fake_profile)
    try:
        await driver.send("hello")
        first = await driver.settle(30)
        await driver.send("now hang")
        await driver._screen.wait_for("working", deadline_s=30, what="working")
        stop = await driver.stop("user", phase="tool", request=None, window=None)
        second = await driver.settle(30)
    finally:
        await driver.close()
    assert (first.reason, second.reason, second.source) == ("completed", "aborted", "user")
    assert stop.exercised and stop.how == "key:ctrl-c"
    assert "echo: hello" in driver.transcript() and driver.session_id


async def test_terminal_kill_and_restart_gives_the_log_bytes_after_load(make_driver, fake_server, fake_profile):
    driver = make_driver("terminal", fake_server, profile=fake_profile)
    try:
        await driver.send("hang here")
        await driver._screen.wait_for("working", deadline_s=30, what="working")
        await driver.kill()
        after_load = await driver.restart()
    finally:
        await driver.close()
    assert after_load == b"hang here\n"
    assert driver.exits[0].expect == "killed" and driver.exits[0].signal == signal.SIGKILL
    assert not leftovers(driver.processes())


async def test_terminal_settle_names_what_was_on_screen_when_the_agent_exits(make_driver, fake_server, fake_profile):
    driver = make_driver("terminal", fake_server, profile=fake_profile)
    try:
        await driver.send("hang")
        await driver._screen.wait_for("working", deadline_s=30, what="working")
        await driver.kill()
        with pytest.raises(DriverError, match="output ended before the turn-ended line.*working"):
            await driver.settle(30)
    finally:
        await driver.close()
