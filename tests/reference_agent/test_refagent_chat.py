"""``refagent chat`` in a real pseudo-terminal (pexpect): Stop mid-tool, Stop mid-stream, queued text."""

from __future__ import annotations

import asyncio

import pexpect
import psutil
import pytest
from refagent_testkit import CANARY_KEY, REFAGENT, alive, kill_pids, read_events, reset_signals

SCENARIO = """
name = "chat"
[[responses]]
match = { contains = "tool please" }
[[responses.frames]]
text = "Starting the job."
[[responses.frames]]
shell = { window = { id = "w1", depth = 1, fanout = 1, ignore_term = true, escape = true, hold_s = 120 } }
[[responses]]
match = { contains = "stream please" }
[[responses.frames]]
text = "Streaming a long answer"
chunk = 4
[[responses.frames]]
stall = true
[[responses]]
match = { contains = "gate please" }
[[responses.frames]]
shell = "while [ ! -e go ]; do sleep 0.02; done; echo opened"
[[responses]]
match = { last = "tool" }
[[responses.frames]]
text = "Gate passed."
[[responses]]
match = { last = "user" }
repeat = true
[[responses.frames]]
text = "Plain answer."
"""

PROMPT = r"(?m)^you> "


@pytest.fixture
async def chat(tmp_path, server_for):
    server = await server_for(SCENARIO)
    (tmp_path / "work").mkdir()
    child = pexpect.spawn(
        REFAGENT,
        ["chat", "--adapter", "http", "--base-url", server.base_url, "--api-key", CANARY_KEY,
         "--sessions-dir", str(tmp_path / "sessions"), "--cwd", str(tmp_path / "work")],
        encoding="utf-8", timeout=60, preexec_fn=reset_signals, dimensions=(40, 200),
    )
    pids: list[int] = []
    try:
        yield child, server, pids
    finally:
        tree = [child.pid] + [p.pid for p in psutil.Process(child.pid).children(recursive=True)] if child.isalive() else []
        child.close(force=True)  # kills and reaps the agent (pexpect owns its exit status)
        kill_pids(tree[1:] + pids)
        assert alive(tree + pids) == []


async def expect(child, pattern):
    """pexpect's own asyncio support: wait without blocking the fake server's loop."""
    return await child.expect(pattern, async_=True)


@pytest.mark.slow(reason="a tool's process tree started and ended")
async def test_stop_during_a_tool(chat, tmp_path):
    child, server, pids = chat
    await expect(child, PROMPT)
    child.send("tool please\r")
    await expect(child, r"\[tool\] bash: .*fake_server\.window")
    window = await asyncio.wait_for(server.records.wait_window("w1"), 60)
    pids += [p.pid for p in window.pids]
    child.send("\x1b")  # Esc
    await expect(child, r"\[tool\] bash: aborted")
    await expect(child, r"\[turn ended: aborted \(user\)\]")
    assert alive(pids) == []
    await expect(child, PROMPT)
    child.send("\x04")  # Ctrl-D at the prompt quits
    await expect(child, pexpect.EOF)
    child.wait()
    assert child.exitstatus == 0
    log = next((tmp_path / "sessions").glob("*.jsonl"))
    result = next(e for e in read_events(log) if e["type"] == "tool_result")
    assert result["aborted"] is True
    text = next(e for e in read_events(log) if e["type"] == "assistant_message")
    assert text["text"] == "Starting the job."


async def test_stop_mid_stream_with_ctrl_c_and_queued_text(chat, tmp_path):
    child, server, _ = chat
    await expect(child, PROMPT)
    child.send("stream please\r")
    await expect(child, "Streaming")
    await asyncio.wait_for(server.records.wait_chunk(request=1, chunk=2), 60)
    child.send("also this\r")
    await expect(child, r"\[queued (q-[0-9a-f]+)\]")
    kept = child.match.group(1)
    child.send("drop this\r")
    await expect(child, r"\[queued (q-[0-9a-f]+)\]")
    dropped = child.match.group(1)
    child.send(f"/cancel {dropped}\r")
    await expect(child, rf"\[canceled {dropped}\]")
    child.send("\x03")  # Ctrl-C: Stop
    await expect(child, r"\[turn ended: aborted \(user\)\]")
    await expect(child, PROMPT)
    await asyncio.wait_for(server.records.wait_disconnect(request=1), 30)
    # Stop means stop: the queued item waits for the user's next input.
    assert len(server.records.of_kind("request")) == 1
    child.send("next\r")
    await expect(child, "Plain answer.")
    await expect(child, r"\[turn ended: completed\]")
    await expect(child, PROMPT)
    request = server.records.of_kind("request")[1]
    last = request.canonical["messages"][-1]["text"]
    assert "also this" in last and "next" in last and "drop this" not in str(request.canonical)
    partial = [m for m in request.canonical["messages"] if m["role"] == "assistant"]
    assert partial and partial[0]["text"].startswith("Stre")
    log = next((tmp_path / "sessions").glob("*.jsonl"))
    events = read_events(log)
    assert [e["item_id"] for e in events if e["type"] == "inbox_delivered"] == [kept]
    assert [e["item_id"] for e in events if e["type"] == "inbox_canceled"] == [dropped]
    child.send("\x04")
    await expect(child, pexpect.EOF)


async def test_text_queued_during_a_completed_turn_is_delivered_next(chat, tmp_path):
    child, server, _ = chat
    await expect(child, PROMPT)
    child.send("gate please\r")
    await expect(child, r"\[tool\] bash: ")
    child.send("and then this\r")
    await expect(child, r"\[queued (q-[0-9a-f]+)\]")
    item = child.match.group(1)
    (tmp_path / "work" / "go").touch()  # lets the gated command finish
    await expect(child, r"\[turn ended: completed\]")
    await expect(child, r"\[turn ended: completed\]")  # the queued item's own turn
    await expect(child, PROMPT)
    request = server.records.of_kind("request")[-1]
    assert request.canonical["messages"][-1]["text"] == "and then this"
    events = read_events(next((tmp_path / "sessions").glob("*.jsonl")))
    assert [e["item_id"] for e in events if e["type"] == "inbox_delivered"] == [item]
