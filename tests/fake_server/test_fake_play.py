"""In-process playback: the exact chunks, strictness and error paths, without HTTP."""
import asyncio
import json
import time

import pytest
from fake_testkit import BASH_TOOL, scenario

from fake_server.play import Playback, ProviderError, StreamBroken


@pytest.fixture(autouse=True)
def conforming(openapi, monkeypatch):
    """Every chunk Playback yields in these tests is checked against the OpenAPI description."""
    if openapi is None:
        return
    original = Playback.chat_chunks

    async def checked(self, request):
        async for chunk in original(self, request):
            openapi.check("CreateChatCompletionStreamResponse", chunk, "in-process chunk")
            yield chunk

    monkeypatch.setattr(Playback, "chat_chunks", checked)


def user(text="hi"):
    return {"model": "m", "stream": True, "messages": [{"role": "user", "content": text}], "tools": [BASH_TOOL]}


async def collect(pb, request):
    return [c async for c in pb.chat_chunks(request)]


async def test_text_and_shell_call_chunks():
    pb = Playback(scenario('''
[[responses]]
[[responses.frames]]
text = "Hello, world"
chunk = 5
[[responses.frames]]
shell = "echo hi"
chunk = 7
'''), seed="s")
    chunks = await collect(pb, user())
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert len({c["id"] for c in chunks}) == 1
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "Hello, world"
    calls = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls") or []]
    assert calls[0]["id"] == "call_s000001" and calls[0]["function"]["name"] == "bash"
    assert all("id" not in tc for tc in calls[1:]) and len(calls) > 1
    arguments = "".join(tc["function"]["arguments"] for tc in calls)
    assert json.loads(arguments) == {"command": "echo hi"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_two_runs_are_identical_apart_from_timestamps():
    text = '[[responses]]\n[[responses.frames]]\ntext = "abcdefghij"\nchunk = 3\n[[responses.frames]]\nshell = "ls"\n'
    runs = []
    for _ in range(2):
        chunks = await collect(Playback(scenario(text), seed="x"), user())
        runs.append([{**c, "created": 0} for c in chunks])
    assert runs[0] == runs[1]


async def test_unbalanced_history_is_refused_like_openai():
    pb = Playback(scenario('[[responses]]\n[[responses.frames]]\ntext = "x"\n'))
    request = user()
    request["messages"] += [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "user", "content": "again"}]
    with pytest.raises(ProviderError) as info:
        await collect(pb, request)
    assert info.value.status == 400
    assert "did not have response messages: c1" in info.value.body["error"]["message"]


async def test_http_error_frame_carries_status_and_retry_after():
    pb = Playback(scenario('[[responses]]\n[[responses.frames]]\nhttp_error = 429\nretry_after = 2\n'))
    with pytest.raises(ProviderError) as info:
        await collect(pb, user())
    assert (info.value.status, info.value.retry_after) == (429, 2.0)
    assert info.value.body["error"]["code"] == "rate_limit_exceeded"


@pytest.mark.parametrize("ending", ['error = "server_error"', "disconnect = true"])
async def test_broken_stream_raises_after_the_chunks_before_it(ending):
    pb = Playback(scenario(f'[[responses]]\n[[responses.frames]]\ntext = "partial"\n[[responses.frames]]\n{ending}\n'))
    seen = []
    with pytest.raises(StreamBroken):
        async for chunk in pb.chat_chunks(user()):
            seen.append(chunk["choices"][0]["delta"].get("content"))
    assert seen == ["partial"]


STALL_AFTER_ONE_CHUNK = '[[responses]]\n[[responses.frames]]\ntext = "a"\n[[responses.frames]]\nstall = true\n'


async def consuming_until_the_first_chunk(pb: Playback) -> asyncio.Task:
    """A task reading ``pb``'s stream, returned once its first chunk has arrived."""
    first = asyncio.Event()

    async def consume():
        async for _ in pb.chat_chunks(user()):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 10)
    return task


async def test_stall_waits_until_the_consumer_cancels():
    task = await consuming_until_the_first_chunk(Playback(scenario(STALL_AFTER_ONE_CHUNK)))
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancel_ends_the_stream_before_its_disconnect_report_is_posted():
    """The consumer's cancel is not held up by a round trip to the server; the record, stamped
    when the cancel happened, reaches the server by the time the playback is closed."""
    from fake_server import FakeServer

    async with FakeServer(scenario=None, port=0) as server:
        pb = Playback(scenario(STALL_AFTER_ONE_CHUNK), report_to=server.beacon_url)
        task = await consuming_until_the_first_chunk(pb)
        cancelled_ns = time.monotonic_ns()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        ended_ns = time.monotonic_ns()
        await pb.aclose()
        [gone] = server.records.of_kind("disconnect")
        assert gone.source == "inproc" and gone.after_chunk == 1
        assert cancelled_ns <= gone.mono_ns <= ended_ns


async def test_exhausted_scenario_is_a_500_naming_it():
    pb = Playback(scenario('[[responses]]\n[[responses.frames]]\ntext = "once"\n'))
    await collect(pb, user())
    with pytest.raises(ProviderError) as info:
        await collect(pb, user())
    assert info.value.status == 500 and "scenario 't'" in info.value.body["error"]["message"]


async def test_include_usage_adds_a_usage_chunk_with_no_choices():
    pb = Playback(scenario('[[responses]]\n[[responses.frames]]\ntext = "x"\n[[responses.frames]]\nfinish = "length"\nusage = { input_tokens = 7, output_tokens = 3 }\n'))
    chunks = await collect(pb, {**user(), "stream_options": {"include_usage": True}})
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


async def test_response_choice_first_unused_match_in_file_order():
    pb = Playback(scenario('''
[[responses]]
match = { tools = false }
repeat = true
[[responses.frames]]
text = "A title"
[[responses]]
match = { last = "user", contains = "go" }
[[responses.frames]]
text = "main"
[[responses]]
[[responses.frames]]
text = "anything"
'''))

    async def text_of(request):
        chunks = await collect(pb, request)
        return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])

    no_tools = {**user("title please"), "tools": []}
    assert await text_of(user("please go")) == "main"
    assert await text_of(no_tools) == "A title"
    assert await text_of(no_tools) == "A title"          # repeat: never used up
    assert await text_of(user("go again")) == "anything"  # response 1 is used up; 2 matches anything
    with pytest.raises(ProviderError, match="3 responses, 1 unused, none of them matches"):
        await collect(pb, user("go"))
