"""The http and openai-sdk adapters against the fake server, through the Python API."""

from __future__ import annotations

import asyncio

import pytest
from refagent_testkit import CANARY_KEY, read_events

from reference_agent.api import open_session
from reference_agent.engine import Assembler

STALLING = """
name = "stalling"
[[responses]]
[[responses.frames]]
text = "Part of the answer"
chunk = 5
[[responses.frames]]
stall = true
"""

TOOLS = """
name = "tools"
[[responses]]
match = { last = "user" }
[[responses.frames]]
tool_call = { name = "read_file", arguments = { path = "a.txt" } }
chunk = 3
[[responses.frames]]
shell = "echo from-bash"
chunk = 2
[[responses]]
match = { last = "tool" }
[[responses.frames]]
text = "Read both."
"""


async def session_on(server, tmp_path, adapter):
    (tmp_path / "work").mkdir(exist_ok=True)
    return await open_session(sessions_dir=tmp_path / "sessions", cwd=tmp_path / "work", adapter=adapter,
                              base_url=server.base_url, api_key=CANARY_KEY)


@pytest.mark.parametrize("adapter", ["http", "openai-sdk"])
async def test_tool_arguments_assembled_by_index_and_run(server_for, tmp_path, adapter):
    server = await server_for(TOOLS)
    session = await session_on(server, tmp_path, adapter)
    (tmp_path / "work" / "a.txt").write_text("file text")
    ending = await session.start_turn("read").settled()
    await session.close()
    assert ending["reason"] == "completed"
    results = [e for e in read_events(session.log_path) if e["type"] == "tool_result"]
    assert [r["output"].strip() for r in results] == ["file text", "from-bash"]
    calls = [e for e in read_events(session.log_path) if e["type"] == "tool_call"]
    assert calls[0]["arguments"] == {"path": "a.txt"} and calls[1]["arguments"] == {"command": "echo from-bash"}
    follow = server.records.of_kind("request")[1]
    assert follow.status == 200 and [m["role"] for m in follow.canonical["messages"]][-3:] == [
        "assistant", "tool", "tool"]


@pytest.mark.parametrize("adapter", ["http", "openai-sdk"])
async def test_stop_mid_sse_closes_the_stream_and_settles_aborted(server_for, tmp_path, adapter):
    server = await server_for(STALLING)
    session = await session_on(server, tmp_path, adapter)
    seen = asyncio.Event()
    session.subscribe(lambda e: e["type"] == "text_delta" and seen.set())
    turn = session.start_turn("q")
    await asyncio.wait_for(server.records.wait_chunk(request=1, chunk=2), 30)
    await asyncio.wait_for(seen.wait(), 30)  # the agent has read text: there is a partial to keep
    turn.stop("user")
    ending = await turn.settled()
    disconnect = await asyncio.wait_for(server.records.wait_disconnect(request=1), 30)
    await session.close()
    assert (ending["reason"], ending["source"]) == ("aborted", "user")
    assert disconnect.after_chunk >= 2
    message = next(e for e in read_events(session.log_path) if e["type"] == "assistant_message")
    assert message["interrupted"] is True and message["text"].startswith("Part")


def test_assembler_parses_nothing_until_the_end():
    asm = Assembler()
    pieces = ['{"comm', 'and": "l', 's"}']
    asm.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "bash", "arguments": ""}}]}}]})
    asm.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "read_file", "arguments": '{"path": "x"}'}}]}}]})
    for piece in pieces:
        asm.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": piece}}]}}]})
    assert asm.tool_calls(complete_only=True)[1]["arguments"] == '{"command": "ls"}'
    asm.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert [c["id"] for c in asm.tool_calls()] == ["a", "b"] and asm.finish_reason == "tool_calls"
    partial = Assembler()
    partial.feed({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "bash", "arguments": '{"comm'}}]}}]})
    assert partial.tool_calls(complete_only=True) == []
