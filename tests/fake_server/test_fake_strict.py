"""Strictness like the real providers: unbalanced histories and malformed input get the
provider's own 4xx, each is recorded, and the server keeps serving."""
import json

import aiohttp
import anthropic
import openai
import pytest
from fake_testkit import BASH_TOOL, scenario

ONE_TEXT = '[[responses]]\nrepeat = true\n[[responses.frames]]\ntext = "fine"\n'
DANGLING_CHAT = [
    {"role": "user", "content": "run it"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}},
        {"id": "call_b", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"pwd\"}"}}]},
    {"role": "tool", "tool_call_id": "call_a", "content": "x"},
    {"role": "user", "content": "and now?"}]


async def test_chat_unbalanced_history_gets_openais_400(server):
    server.load(scenario(ONE_TEXT))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        with pytest.raises(openai.BadRequestError) as info:
            await client.chat.completions.create(model="m", messages=DANGLING_CHAT, tools=[BASH_TOOL], stream=True)
        assert info.value.body["message"] == (
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            "'tool_call_id'. The following tool_call_ids did not have response messages: call_b")
        assert info.value.body["param"] == "messages.[1].role"
        with pytest.raises(openai.BadRequestError, match="must be a response to a preceeding message"):
            await client.chat.completions.create(model="m", messages=[
                {"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "nope", "content": "y"}])
        balanced = DANGLING_CHAT[:3] + [{"role": "tool", "tool_call_id": "call_b", "content": "z"}] + DANGLING_CHAT[3:]
        ok = await client.chat.completions.create(model="m", messages=balanced, tools=[BASH_TOOL])
    assert ok.choices[0].message.content == "fine"
    statuses = [r.status for r in server.records.of_kind("request")]
    assert statuses == [400, 400, 200]
    assert "call_b" in server.records.of_kind("request")[0].error


async def test_responses_function_call_without_output_gets_400(server):
    server.load(scenario(ONE_TEXT))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        with pytest.raises(openai.BadRequestError) as info:
            await client.responses.create(model="m", stream=True, input=[
                {"role": "user", "content": "run"},
                {"type": "function_call", "call_id": "call_x", "name": "exec_command", "arguments": "{}"},
                {"role": "user", "content": "again"}])
        assert info.value.body["message"] == "No tool output found for function call call_x."
        with pytest.raises(openai.BadRequestError, match="No tool call found for function call output with call_id c9"):
            await client.responses.create(model="m", input=[
                {"role": "user", "content": "run"}, {"type": "function_call_output", "call_id": "c9", "output": "x"}])


async def test_anthropic_tool_use_without_result_gets_400(server):
    server.load(scenario(ONE_TEXT))
    messages = [{"role": "user", "content": "run"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "ok"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": "well?"}]
    async with anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0) as client:
        with pytest.raises(anthropic.BadRequestError) as info:
            await client.messages.create(model="c", max_tokens=10, messages=messages)
        assert info.value.body["error"] == {
            "type": "invalid_request_error",
            "message": "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
                       "toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the "
                       "next message."}
        stray = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}]}]
        with pytest.raises(anthropic.BadRequestError, match="unexpected `tool_use_id` found in `tool_result`"):
            await client.messages.create(model="c", max_tokens=10, messages=stray)


HUGE = b'{"model": "m", "messages": [{"role": "user", "content": "' + b"x" * (9 * 1024 * 1024) + b'"}]}'
CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"
USER = [{"role": "user", "content": "hi"}]
BAD_REQUESTS = [
    ("bad json", "POST", CHAT, b'{"model": "m", "messages": [', 400, "openai", "could not parse the JSON body"),
    ("json array body", "POST", CHAT, b"[1, 2]", 400, "openai", "must be a JSON object"),
    ("missing messages", "POST", CHAT, {"model": "m"}, 400, "openai", "Missing required parameter: 'messages'"),
    ("messages not array", "POST", CHAT, {"model": "m", "messages": "hi"}, 400, "openai",
     "expected an array, but got a string"),
    ("model not string", "POST", CHAT, {"model": 5, "messages": USER}, 400, "openai", "Invalid type for 'model'"),
    ("empty messages", "POST", CHAT, {"model": "m", "messages": []}, 400, "openai", "empty array"),
    ("bad role", "POST", CHAT, {"model": "m", "messages": [{"role": "robot", "content": "x"}]}, 400, "openai",
     "messages[0].role"),
    ("stream not boolean", "POST", CHAT, {"model": "m", "messages": USER, "stream": "yes"}, 400, "openai",
     "Invalid type for 'stream'"),
    ("tools not array", "POST", CHAT, {"model": "m", "messages": USER, "tools": {"a": 1}}, 400, "openai",
     "Invalid type for 'tools'"),
    ("huge body", "POST", CHAT, HUGE, 413, "openai", "exceeds the maximum"),
    ("unknown model", "POST", CHAT, {"model": "gpt-nope", "messages": USER}, 404, "openai",
     "The model `gpt-nope` does not exist"),
    ("responses without input", "POST", RESPONSES, {"model": "m"}, 400, "openai", "Missing required parameter: 'input'"),
    ("anthropic bad json", "POST", MESSAGES, b"{nope", 400, "anthropic", "could not parse the JSON body"),
    ("anthropic without max_tokens", "POST", MESSAGES, {"model": "m", "messages": USER}, 400, "anthropic",
     "max_tokens: Field required"),
    ("anthropic content missing", "POST", MESSAGES, {"model": "m", "max_tokens": 5, "messages": [{"role": "user"}]},
     400, "anthropic", "messages.0.content: Field required"),
    ("wrong path", "POST", "/v1/chat/completion", {"model": "m", "messages": USER}, 404, "openai", "Invalid URL"),
    ("wrong method", "GET", CHAT, None, 404, "openai", "Invalid URL (GET /v1/chat/completions)"),
]


async def test_malformed_requests_get_provider_shaped_4xx_and_the_server_keeps_serving(server):
    server.load(scenario('model = "m"\n' + ONE_TEXT))
    async with aiohttp.ClientSession() as http:
        for label, method, path, body, status, family, text in BAD_REQUESTS:
            kwargs = {"data": body} if isinstance(body, bytes) else {"json": body} if body is not None else {}
            headers = {"anthropic-version": "2023-06-01"} if family == "anthropic" else {}
            async with http.request(method, server.url + path, headers=headers, **kwargs) as resp:
                answer = await resp.json()
                assert resp.status == status, (label, answer)
            if family == "anthropic":
                assert answer["type"] == "error" and set(answer["error"]) == {"type", "message"}, label
                message = answer["error"]["message"]
            else:
                assert set(answer["error"]) == {"message", "type", "param", "code"}, label
                message = answer["error"]["message"]
            assert text in message, (label, message)
        async with http.post(server.base_url + "/chat/completions", json={"model": "m", "messages": USER}) as resp:
            assert resp.status == 200
            assert (await resp.json())["choices"][0]["message"]["content"] == "fine"
    problems = [r.problem for r in server.records.of_kind("error")]
    assert len(problems) == len(BAD_REQUESTS)
    bad_json = server.records.of_kind("request")[0]
    assert bad_json.status == 400 and bad_json.body_text == '{"model": "m", "messages": ['


async def test_exhausted_scenario_is_a_recorded_500_naming_it(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\nshell = "ls"\n', name="needs-shell"))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        ok = await client.chat.completions.create(model="m", messages=USER, tools=[BASH_TOOL])
        assert json.loads(ok.choices[0].message.tool_calls[0].function.arguments) == {"command": "ls"}
        with pytest.raises(openai.InternalServerError, match="scenario 'needs-shell'.*no response left"):
            await client.chat.completions.create(model="m", messages=USER, tools=[BASH_TOOL])
    [problem] = [r.problem for r in server.records.of_kind("error")]
    assert "1 responses, 0 unused" in problem and "tools offered: bash, shell tool: bash" in problem
    assert [r.status for r in server.records.of_kind("request")] == [200, 500]
