"""The turn engine through the Python API, on the inproc adapter (reporting to a fake server)."""

from __future__ import annotations

import asyncio

import psutil
import pytest
from refagent_testkit import alive, kill_pids, read_events, started_of, write_scenario

from fake_server import wire_chat
from reference_agent.api import open_session
from reference_agent.log import CheckpointFailed, load
from reference_agent.tools import ToolRun

STREAM_THEN_STALL = """
name = "stall"
[[responses]]
[[responses.frames]]
text = "I read the first half"
chunk = 7
[[responses.frames]]
stall = true
[[responses]]
[[responses.frames]]
text = "ok"
"""

WINDOW = """
name = "window"
[[responses]]
match = {{ last = "user" }}
[[responses.frames]]
text = "Running it."
[[responses.frames]]
shell = {{ window = {{ id = "w1", depth = 2, fanout = 2, ignore_term = true, escape = true, hold_s = 120 }} }}
[[responses]]
match = {{ last = "{after}" }}
[[responses.frames]]
text = "Next."
"""


async def open_inproc(tmp_path, scenario_text, server=None, **kw):
    scenario = write_scenario(tmp_path, scenario_text, f"sc-{len(list(tmp_path.glob('sc-*')))}.toml")
    (tmp_path / "work").mkdir(exist_ok=True)
    return await open_session(sessions_dir=tmp_path / "sessions", cwd=tmp_path / "work", adapter="inproc",
                              scenario=str(scenario), base_url=server.beacon_url if server else None, **kw)


def first_event(session, kind):
    """A future resolved with the first subscribed event of ``kind``."""
    future = asyncio.get_running_loop().create_future()

    def on_event(event):
        if event["type"] == kind and not future.done():
            future.set_result(event)

    session.subscribe(on_event)
    return future


async def test_completed_turn_and_subscription(tmp_path):
    session = await open_inproc(tmp_path, 'name = "t"\n[[responses]]\n[[responses.frames]]\ntext = "hello there"\nchunk = 4\n')
    seen = []
    session.subscribe(seen.append)
    turn = session.start_turn("hi")
    ending = await turn.settled()
    await session.close()
    assert ending["reason"] == "completed" and ending["type"] == "turn_ended"
    assert "".join(e["text"] for e in seen if e["type"] == "text_delta") == "hello there"
    logged = [e["type"] for e in read_events(session.log_path)]
    assert logged == ["turn_started", "model_request", "assistant_message", "step_settled", "turn_ended"]
    assert [e["type"] for e in seen if "seq" in e] == logged


async def test_stop_mid_stream_keeps_partial_text_and_settles_once(tmp_path):
    session = await open_inproc(tmp_path, STREAM_THEN_STALL)
    delta = first_event(session, "text_delta")
    turn = session.start_turn("read it")
    await asyncio.wait_for(delta, 30)
    turn.stop("user")
    turn.stop("user")  # idempotent
    ending = await turn.settled()
    assert ending["reason"] == "aborted" and ending["source"] == "user"
    events = read_events(session.log_path)
    partial = [e for e in events if e["type"] == "assistant_message"]
    assert len(partial) == 1 and partial[0]["interrupted"] is True
    assert partial[0]["text"] and "I read the first half".startswith(partial[0]["text"])
    assert [e["type"] for e in events].count("turn_ended") == 1
    assert [e["type"] for e in events].count("stop_requested") == 1
    stop = next(e for e in events if e["type"] == "stop_requested")
    assert stop["seq"] < ending["seq"] and stop["source"] == "user"
    # The next turn's request carries the partial text as ordinary assistant text.
    turn2 = session.start_turn("go on")
    assert (await turn2.settled())["reason"] == "completed"
    await session.close()
    request = [e for e in read_events(session.log_path) if e["type"] == "model_request"][-1]["request"]
    assistant = [m for m in request["messages"] if m["role"] == "assistant"]
    assert assistant[0]["content"] == partial[0]["text"]
    wire_chat.parse(request)


@pytest.mark.slow(reason="a process tree started and ended")
async def test_stop_during_bash_kills_the_whole_tree(tmp_path, server_for):
    server = await server_for("name = \"x\"\n[[responses]]\n[[responses.frames]]\ntext = \"x\"\n")
    session = await open_inproc(tmp_path, WINDOW.format(after="user"), server)
    pids = []
    try:
        turn = session.start_turn("run the thing")
        window = await asyncio.wait_for(server.records.wait_window("w1"), 60)
        pids = [p.pid for p in window.pids]
        started = started_of(window.to_json())
        roles = {p.role for p in window.pids}
        assert {"escapee", "term-ignorer"} <= roles
        turn.stop("user")
        ending = await turn.settled()
        # Settlement comes after the tree is gone: check right away, no waiting.
        assert alive(pids, started) == []
        assert ending["reason"] == "aborted"
        events = read_events(session.log_path)
        result = next(e for e in events if e["type"] == "tool_result")
        assert result["aborted"] is True and result["exit_code"] is None
        assert result["seq"] < ending["seq"]
        started = next(e for e in events if e["type"] == "tool_started")
        assert started["pid"] in pids and started["pgid"] == started["pid"]
        assert not (tmp_path / "work" / "stopbench-window-w1.done").exists()
    finally:
        await session.close()
        kill_pids(pids)


async def test_stop_before_the_turn_ran_still_settles(tmp_path):
    session = await open_inproc(tmp_path, STREAM_THEN_STALL)
    turn = session.start_turn("x")
    turn.stop("parent")
    ending = await turn.settled()
    await session.close()
    assert (ending["reason"], ending["source"]) == ("aborted", "parent")
    types = [e["type"] for e in read_events(session.log_path)]
    assert types.count("turn_ended") == 1 and "model_request" not in types


async def test_timeout_stop_settles_interrupted(tmp_path):
    session = await open_inproc(tmp_path, STREAM_THEN_STALL)
    delta = first_event(session, "text_delta")
    turn = session.start_turn("x")
    await asyncio.wait_for(delta, 30)
    turn.stop("timeout")
    ending = await turn.settled()
    await session.close()
    assert ending["reason"] == "interrupted" and "source" not in ending


async def test_close_disposes_a_running_turn(tmp_path):
    session = await open_inproc(tmp_path, STREAM_THEN_STALL)
    delta = first_event(session, "text_delta")
    turn = session.start_turn("x")
    await asyncio.wait_for(delta, 30)
    await session.close()
    ending = await turn.settled()
    assert (ending["reason"], ending["source"]) == ("aborted", "disposed")


async def test_read_error_from_our_own_cancel_settles_aborted(tmp_path):
    """C12: a close-style cancel surfaces as a stream read error; it is still Stop's effect."""
    session = await open_inproc(tmp_path, STREAM_THEN_STALL)

    class CloseStyle:
        """Models an SDK whose cancel closes the response: the reader sees a read error."""

        def __init__(self):
            self.closed = asyncio.Event()

        async def stream(self, request):
            yield {"choices": [{"index": 0, "delta": {"content": "partial"}}]}
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                raise ConnectionError("Connection closed by the client") from None

        async def aclose(self):
            pass

    session.adapter = CloseStyle()
    delta = first_event(session, "text_delta")
    turn = session.start_turn("x")
    await asyncio.wait_for(delta, 30)
    turn.stop("user")
    ending = await turn.settled()
    await session.close()
    assert ending["reason"] == "aborted"


async def test_provider_errors_settle_error(tmp_path):
    session = await open_inproc(tmp_path, 'name = "e"\n[[responses]]\n[[responses.frames]]\nhttp_error = 500\n')
    ending = await session.start_turn("x").settled()
    await session.close()
    assert ending["reason"] == "error" and "500" in ending["error"]


async def test_length_finish_settles_max_tokens(tmp_path):
    session = await open_inproc(tmp_path, 'name = "l"\n[[responses]]\n[[responses.frames]]\ntext = "cut"\n'
                                          '[[responses.frames]]\nfinish = "length"\n')
    ending = await session.start_turn("x").settled()
    await session.close()
    assert ending["reason"] == "max_tokens"


async def test_failed_request_checkpoint_blocks_without_sending(tmp_path, server_for):
    server = await server_for('name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "x"\n')
    session = await open_inproc(tmp_path, 'name = "b"\n[[responses]]\n[[responses.frames]]\ntext = "never"\n', server)

    def refuse():
        raise CheckpointFailed("fsync failed: disk full")

    session.writer.checkpoint = refuse
    ending = await session.start_turn("x").settled()
    await session.close()
    assert ending["reason"] == "blocked" and "disk full" in ending["error"]
    assert server.records.of_kind("request") == [], "the model request was sent after a failed checkpoint"


async def test_inbox_queue_cancel_deliver_and_survive_reload(tmp_path):
    session = await open_inproc(tmp_path, STREAM_THEN_STALL)
    delta = first_event(session, "text_delta")
    turn = session.start_turn("first")
    await asyncio.wait_for(delta, 30)
    keep = session.queue("also check the tests")
    drop = session.queue("never mind this")
    session.cancel_queued(drop)
    with pytest.raises(KeyError, match="canceled"):
        session.cancel_queued(drop)
    turn.stop("user")
    await turn.settled()
    await session.close()
    # A new process: the queued item is still there and is delivered with the next turn.
    resumed = await open_inproc(tmp_path, 'name = "r"\n[[responses]]\n[[responses.frames]]\ntext = "fine"\n',
                                resume=session.id)
    assert resumed.log_path == session.log_path
    ending = await resumed.start_turn("second").settled()
    await resumed.close()
    assert ending["reason"] == "completed"
    events = read_events(session.log_path)
    started = [e for e in events if e["type"] == "turn_started"][-1]
    assert started["inbox"] == [keep]
    assert [e["item_id"] for e in events if e["type"] == "inbox_delivered"] == [keep]
    assert [e["item_id"] for e in events if e["type"] == "inbox_canceled"] == [drop]
    request = [e for e in events if e["type"] == "model_request"][-1]["request"]
    assert "also check the tests" in request["messages"][-1]["content"]
    assert "never mind this" not in str(request)


async def test_resume_adds_a_note_and_continues_the_same_log(tmp_path):
    session = await open_inproc(tmp_path, 'name = "a"\n[[responses]]\n[[responses.frames]]\ntext = "one"\n')
    await session.start_turn("first").settled()
    await session.close()
    before = session.log_path.read_bytes()
    resumed = await open_inproc(tmp_path, 'name = "b"\n[[responses]]\n[[responses.frames]]\ntext = "two"\n',
                                resume=session.id)
    assert session.log_path.read_bytes() == before, "opening a session wrote to its log"
    await resumed.start_turn("second").settled()
    await resumed.close()
    loaded = load(session.log_path)
    assert [e["seq"] for e in loaded.events] == list(range(1, len(loaded.events) + 1))
    note = next(e for e in loaded.events if e["type"] == "session_resumed")
    assert note["turn"] == 2 and "Files may have changed" in note["note"]
    request = [e for e in loaded.events if e["type"] == "model_request"][-1]["request"]
    texts = [m["content"] for m in request["messages"]]
    assert "first" in texts and "one" in texts and texts[-1] == "second"
    assert any("resumed" in (t or "") for t in texts)


async def test_starting_a_second_turn_while_one_runs_is_refused(tmp_path):
    session = await open_inproc(tmp_path, STREAM_THEN_STALL)
    turn = session.start_turn("x")
    with pytest.raises(RuntimeError, match="still running"):
        session.start_turn("y")
    await session.close()
    assert (await turn.settled())["reason"] == "aborted"
    assert psutil.Process().children() == []


async def test_stop_from_a_subscriber_inside_the_turn_starts_no_tool(tmp_path):
    """Stop delivered synchronously inside the turn's own task still starts nothing new."""
    scenario = ('name = "t"\n[[responses]]\n[[responses.frames]]\nshell = "touch ran"\n'
                '[[responses]]\n[[responses.frames]]\ntext = "x"\n')
    session = await open_inproc(tmp_path, scenario)
    turn = None
    session.subscribe(lambda e: e["type"] == "tool_call" and turn.stop("user"))
    turn = session.start_turn("go")
    ending = await turn.settled()
    await session.close()
    assert ending["reason"] == "aborted"
    assert not (tmp_path / "work" / "ran").exists()
    events = read_events(session.log_path)
    assert "tool_started" not in [e["type"] for e in events]
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["aborted"] is True and "not started" in result["output"]


async def test_stop_while_the_process_is_being_created_kills_it(tmp_path):
    run = ToolRun("bash", {"command": "sleep 300"}, tmp_path, "c1", tmp_path / "c1.out")
    task = asyncio.create_task(run.run(lambda pid, pgid: None))
    await asyncio.sleep(0)  # one step: the task is now awaiting the spawn
    assert run.proc is None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    result = await run.abort()
    assert result.aborted and run.proc is not None
    assert alive([run.proc.pid]) == []
