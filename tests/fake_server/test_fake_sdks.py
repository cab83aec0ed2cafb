"""The official SDKs, pointed at the fake server, assemble exactly what the scenario said.

Every answer these tests provoke is also checked against the OpenAI OpenAPI description at
fixture teardown (see conftest).
"""
import asyncio
import json

import aiohttp
import anthropic
import openai
import pytest
from fake_testkit import BASH_TOOL, BASH_TOOL_ANTHROPIC, BASH_TOOL_RESPONSES, scenario

TEXT_AND_SHELL = '''
[[responses]]
[[responses.frames]]
reasoning = "The user wants a listing."
chunk = 9
[[responses.frames]]
text = "Listing the files now."
chunk = 6
[[responses.frames]]
shell = "ls -la /tmp"
chunk = 5
[[responses.frames]]
finish = "tool_calls"
usage = { input_tokens = 11, output_tokens = 22 }

[[responses]]
match = { last = "tool" }
[[responses.frames]]
text = "There are 3 files."
'''
USER = [{"role": "user", "content": "list the files"}]


def openai_sync(server):
    return openai.OpenAI(base_url=server.base_url, api_key="sk-canary-123", max_retries=0)


def openai_async(server):
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-canary-123", max_retries=0)


def anthropic_async(server):
    return anthropic.AsyncAnthropic(base_url=server.url, api_key="sk-ant-canary", max_retries=0)


def assemble_chat(chunks):
    text, calls, finish, usage = "", {}, None, None
    for chunk in chunks:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for tc in choice.delta.tool_calls or []:
                call = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
                call["id"] = call["id"] or tc.id
                call["name"] = call["name"] or (tc.function.name if tc.function else None)
                call["arguments"] += tc.function.arguments or ""
    return text, list(calls.values()), finish, usage


# --- Chat Completions -----------------------------------------------------------------------

async def test_chat_sync_stream_assembles_text_split_tool_args_and_usage(server):
    server.load(scenario(TEXT_AND_SHELL))

    def run():
        with openai_sync(server) as client:
            stream = client.chat.completions.create(model="m", messages=USER, tools=[BASH_TOOL], stream=True,
                                                    stream_options={"include_usage": True})
            return list(stream)

    chunks = await asyncio.to_thread(run)
    text, calls, finish, usage = assemble_chat(chunks)
    assert text == "Listing the files now."
    assert [c["name"] for c in calls] == ["bash"]
    assert json.loads(calls[0]["arguments"]) == {"command": "ls -la /tmp"}
    arg_chunks = [c for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert len(arg_chunks) > 2 and all(c.choices[0].delta.tool_calls[0].index == 0 for c in arg_chunks)
    assert [c.choices[0].delta.tool_calls[0].id is not None for c in arg_chunks] == [True] + [False] * (len(arg_chunks) - 1)
    assert finish == "tool_calls"
    assert chunks[-1].choices == [] and (usage.prompt_tokens, usage.completion_tokens) == (11, 22)
    assert len({c.id for c in chunks}) == 1 and len({c.created for c in chunks}) == 1
    response = server.records.of_kind("response")[0]
    assert response.tool_calls[0]["id"] == calls[0]["id"]
    assert response.text == text


async def test_chat_async_stream_then_balanced_follow_up(server):
    server.load(scenario(TEXT_AND_SHELL))
    async with openai_async(server) as client:
        stream = await client.chat.completions.create(model="m", messages=USER, tools=[BASH_TOOL], stream=True)
        text, calls, finish, _ = assemble_chat([c async for c in stream])
        history = USER + [
            {"role": "assistant", "content": text, "tool_calls": [
                {"id": calls[0]["id"], "type": "function",
                 "function": {"name": "bash", "arguments": calls[0]["arguments"]}}]},
            {"role": "tool", "tool_call_id": calls[0]["id"], "content": "a\nb\nc"}]
        whole = await client.chat.completions.create(model="m", messages=history, tools=[BASH_TOOL])
    assert whole.choices[0].message.content == "There are 3 files."
    assert whole.choices[0].finish_reason == "stop"
    request = await server.records.wait_request(2)
    assert [m["role"] for m in request.canonical["messages"]] == ["user", "assistant", "tool"]
    assert request.canonical["messages"][2]["tool_call_id"] == calls[0]["id"]
    assert request.canonical["shell_tool"] == "bash"
    assert request.headers["authorization"] == "[redacted]"
    assert "sk-canary-123" not in json.dumps([r.to_json() for r in server.records])


async def test_chat_mid_stream_error_raises_after_the_text_before_it(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "partial"\n'
                         '[[responses.frames]]\nerror = "server_error"\nmessage = "boom"\n'))
    seen = []
    async with openai_async(server) as client:
        stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
        with pytest.raises(openai.APIError, match="boom"):
            async for chunk in stream:
                seen.append(chunk.choices[0].delta.content)
    assert seen == ["partial"]
    end = await server.records.wait_for(lambda r: r.kind == "stream_end", "stream_end")
    assert end.complete is False


async def test_chat_disconnect_after_n_chunks(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "abcdefghij"\nchunk = 2\n'
                         '[[responses.frames]]\ndisconnect = true\n'))
    seen = []
    async with openai_async(server) as client:
        stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
        with pytest.raises(openai.APIConnectionError):
            async for chunk in stream:
                seen.append(chunk.choices[0].delta.content)
    assert "".join(seen) == "abcdefghij"
    assert [r.chunk for r in server.records.of_kind("chunk")] == [1, 2, 3, 4, 5]


async def test_chat_stall_cancelled_by_async_client_is_recorded_as_disconnect(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "wait"\n[[responses.frames]]\nstall = true\n'))
    async with openai_async(server) as client:
        stream = await client.chat.completions.create(model="m", messages=USER, stream=True)

        async def consume():
            async for _ in stream:
                pass

        task = asyncio.create_task(consume())
        chunk = await server.records.wait_chunk(request=1, chunk=1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await stream.close()
        gone = await server.records.wait_disconnect(request=1)
    assert gone.after_chunk == 1 and gone.mono_ns > chunk.mono_ns
    assert not server.records.of_kind("stream_end")


async def test_chat_stall_closed_by_sync_client_is_recorded_as_disconnect(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "wait"\n[[responses.frames]]\nstall = true\n'))

    def read_one_then_close():
        with openai_sync(server) as client:
            stream = client.chat.completions.create(model="m", messages=USER, stream=True)
            first = next(iter(stream))
            stream.close()
            return first.choices[0].delta.content

    assert await asyncio.to_thread(read_one_then_close) == "wait"
    gone = await server.records.wait_disconnect(request=1)
    assert gone.after_chunk == 1


@pytest.mark.parametrize("status, error_class", [(429, openai.RateLimitError), (500, openai.InternalServerError)])
async def test_chat_http_error_frames(server, status, error_class):
    server.load(scenario(f'[[responses]]\n[[responses.frames]]\nhttp_error = {status}\nretry_after = 3\n'))
    async with openai_async(server) as client:
        with pytest.raises(error_class) as info:
            await client.chat.completions.create(model="m", messages=USER, stream=True)
    assert info.value.status_code == status
    assert info.value.response.headers["retry-after"] == "3"
    assert info.value.body["type"] in ("requests", "server_error")


# --- Responses ------------------------------------------------------------------------------

async def test_responses_stream_assembles_text_and_function_call(server):
    server.load(scenario(TEXT_AND_SHELL))
    async with openai_async(server) as client:
        stream = await client.responses.create(model="m", input=USER, tools=[BASH_TOOL_RESPONSES], stream=True)
        events = [e async for e in stream]
        types = [e.type for e in events]
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
        done = events[-1].response
        call = next(item for item in done.output if item.type == "function_call")
        assert types[0] == "response.created" and types[-1] == "response.completed"
        assert [e.sequence_number for e in events] == list(range(len(events)))
        assert text == "Listing the files now." == done.output_text
        assert types.count("response.function_call_arguments.delta") > 2
        assert json.loads(args) == json.loads(call.arguments) == {"cmd": "ls -la /tmp"}
        assert call.name == "exec_command" and done.usage.output_tokens == 22
        follow = await client.responses.create(model="m", tools=[BASH_TOOL_RESPONSES], input=USER + [
            {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": "a b c"}])
    assert follow.output_text == "There are 3 files."
    canonical = (await server.records.wait_request(2)).canonical
    assert [m["role"] for m in canonical["messages"]] == ["user", "assistant", "tool"]
    assert canonical["messages"][1]["tool_calls"][0]["id"] == call.call_id


async def test_responses_stream_helper_and_incomplete_finish(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "all of it"\n'
                         '[[responses]]\n[[responses.frames]]\ntext = "cut sho"\n[[responses.frames]]\nfinish = "length"\n'))
    async with openai_async(server) as client:
        async with client.responses.stream(model="m", input="hi") as stream:
            async for _ in stream:
                pass
            final = await stream.get_final_response()
        assert final.status == "completed" and final.output_text == "all of it"
        events = [e async for e in await client.responses.create(model="m", input="hi", stream=True)]
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
    assert events[-1].response.output_text == "cut sho"


async def test_responses_mid_stream_error_event(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "so far"\n'
                         '[[responses.frames]]\nerror = "rate_limit"\nmessage = "slow down"\n'))
    async with openai_async(server) as client:
        stream = await client.responses.create(model="m", input="hi", stream=True)
        events = [e async for e in stream]
    assert [e.type for e in events[-2:]] == ["error", "response.failed"]
    assert events[-2].message == "slow down" and events[-1].response.error.message == "slow down"


async def test_responses_sync_client_stream(server):
    server.load(scenario(TEXT_AND_SHELL))

    def run():
        with openai_sync(server) as client:
            return list(client.responses.create(model="m", input=USER, tools=[BASH_TOOL_RESPONSES], stream=True))

    events = await asyncio.to_thread(run)
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "Listing the files now."
    summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    assert summary == "The user wants a listing."


# --- Anthropic Messages ---------------------------------------------------------------------

async def test_anthropic_stream_assembles_thinking_text_and_tool_use(server):
    server.load(scenario(TEXT_AND_SHELL))
    async with anthropic_async(server) as client:
        async with client.messages.stream(model="claude-x", max_tokens=1000, messages=USER,
                                          tools=[BASH_TOOL_ANTHROPIC]) as stream:
            kinds = [e.type async for e in stream]
            message = await stream.get_final_message()
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    assert message.content[0].thinking == "The user wants a listing."
    assert message.content[1].text == "Listing the files now."
    assert message.content[2].input == {"command": "ls -la /tmp"} and message.content[2].name == "Bash"
    assert message.stop_reason == "tool_use" and message.usage.output_tokens == 22
    assert kinds.count("input_json") > 2
    async with anthropic_async(server) as client:
        follow = await client.messages.create(model="claude-x", max_tokens=1000, tools=[BASH_TOOL_ANTHROPIC],
                                              messages=USER + [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": message.content[2].id,
                                          "content": "a b c"}]}])
    assert follow.content[0].text == "There are 3 files." and follow.stop_reason == "end_turn"
    request = await server.records.wait_request(2)
    assert [m["role"] for m in request.canonical["messages"]] == ["user", "assistant", "tool"]
    secret_header = "x-api-key" if "x-api-key" in request.headers else "authorization"
    assert request.headers[secret_header] == "[redacted]"
    assert "sk-ant-canary" not in json.dumps([r.to_json() for r in server.records])


async def test_anthropic_overloaded_529_and_mid_stream_error(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\nhttp_error = 529\n'
                         '[[responses]]\n[[responses.frames]]\ntext = "half"\n'
                         '[[responses.frames]]\nerror = "overloaded"\nmessage = "Overloaded"\n'))
    async with anthropic_async(server) as client:
        with pytest.raises(anthropic.OverloadedError) as info:
            await client.messages.create(model="c", max_tokens=10, messages=USER)
        assert info.value.body["error"]["type"] == "overloaded_error"
        with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
            async with client.messages.stream(model="c", max_tokens=10, messages=USER) as stream:
                async for _ in stream:
                    pass


async def test_head_root_and_beta_query_are_accepted(server):
    async with aiohttp.ClientSession() as http:
        async with http.head(server.url + "/") as resp:
            assert resp.status == 200
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "ok"\n'))
    async with aiohttp.ClientSession() as http:
        async with http.post(server.url + "/v1/messages?beta=true", headers={"anthropic-version": "2023-06-01"},
                             json={"model": "c", "max_tokens": 5, "messages": USER}) as resp:
            assert resp.status == 200
            message = await resp.json()
    assert message["content"] == [{"type": "text", "text": "ok"}]
    assert (await server.records.wait_request(1)).path == "/v1/messages?beta=true"


TWO_CALLS = '''
[[responses]]
[[responses.frames]]
tool_call = { name = "read_file", arguments = { path = "README.md" } }
chunk = 7
[[responses.frames]]
shell = "git status"
chunk = 7
'''
READ_FILE = {"type": "function", "function": {"name": "read_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
EXPECTED_CALLS = [("read_file", {"path": "README.md"}), ("bash", {"command": "git status"})]


async def test_two_tool_calls_in_one_response_over_all_three_apis(server):
    server.load(scenario(TWO_CALLS + TWO_CALLS + TWO_CALLS))
    async with openai_async(server) as client:
        stream = await client.chat.completions.create(model="m", messages=USER, tools=[READ_FILE, BASH_TOOL],
                                                      stream=True)
        _, calls, finish, _ = assemble_chat([c async for c in stream])
        assert [(c["name"], json.loads(c["arguments"])) for c in calls] == EXPECTED_CALLS and finish == "tool_calls"
        tools = [{"type": "function", **READ_FILE["function"]}, {"type": "function", **BASH_TOOL["function"]}]
        response = await client.responses.create(model="m", input=USER, tools=tools)
        items = [(i.name, json.loads(i.arguments)) for i in response.output if i.type == "function_call"]
        assert items == EXPECTED_CALLS
    async with anthropic_async(server) as client:
        message = await client.messages.create(model="c", max_tokens=100, messages=USER, tools=[
            {"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in (READ_FILE, BASH_TOOL)])
    assert [(b.name, b.input) for b in message.content] == EXPECTED_CALLS
    assert len({b.id for b in message.content}) == 2 and all(b.id.startswith("toolu_") for b in message.content)


async def test_non_streamed_requests_end_the_same_ways(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "a"\n[[responses.frames]]\nerror = "server_error"\n'
                         '[[responses]]\n[[responses.frames]]\ntext = "b"\n[[responses.frames]]\ndisconnect = true\n'
                         '[[responses]]\n[[responses.frames]]\ntext = "c"\n[[responses.frames]]\nstall = true\n'))
    async with openai_async(server) as client:
        with pytest.raises(openai.InternalServerError, match="The server had an error"):
            await client.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.APIConnectionError):
            await client.chat.completions.create(model="m", messages=USER)
        task = asyncio.create_task(client.chat.completions.create(model="m", messages=USER))
        await server.records.wait_request(3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gone = await server.records.wait_disconnect(request=3)
    assert gone.after_chunk == 0
    assert [r.complete for r in server.records.of_kind("stream_end")] == [False, False]
