"""Side requests (titles, auto-memory …): answered in the request's own wire format, recorded as
``side``, never numbered, and never using up a response the task's conversation needs.

Every answer the server fixture sees is also checked against the OpenAI OpenAPI description at
teardown (side answers included, see conftest)."""
import json

import anthropic
import openai
import pytest
from fake_testkit import BASH_TOOL, BASH_TOOL_ANTHROPIC, BASH_TOOL_RESPONSES, scenario

from fake_server.play import Playback
from fake_server.script import SIDE_TEXT

TASK = '''
[[responses]]
match = { last = "user", tools = true }
[[responses.frames]]
text = "Running it."
[[responses.frames]]
shell = "echo task"

[[responses]]
match = { last = "tool" }
[[responses.frames]]
text = "Done."
'''
TITLE = "Generate a title for this conversation: list the files"
USER = [{"role": "user", "content": "list the files"}]


async def title_then_task(server, api: str, stream: bool) -> tuple[str, str]:
    """A tool-less title request, then the task's request with the shell tool, over ``api``;
    returns the text of the title answer and the name of the tool the task's answer calls."""
    title = [{"role": "user", "content": TITLE}]
    if api == "anthropic":
        async with anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0) as client:
            if stream:
                async with client.messages.stream(model="c", max_tokens=50, messages=title) as s:
                    answer = (await s.get_final_message()).content[0].text
            else:
                answer = (await client.messages.create(model="c", max_tokens=50, messages=title)).content[0].text
            task = await client.messages.create(model="c", max_tokens=50, messages=USER, tools=[BASH_TOOL_ANTHROPIC])
            return answer, next(b.name for b in task.content if b.type == "tool_use")
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        if api == "chat":
            if stream:
                chunks = [c async for c in await client.chat.completions.create(model="m", messages=title,
                                                                                stream=True)]
                answer = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            else:
                answer = (await client.chat.completions.create(model="m", messages=title)).choices[0].message.content
            task = await client.chat.completions.create(model="m", messages=USER, tools=[BASH_TOOL])
            return answer, task.choices[0].message.tool_calls[0].function.name
        if stream:
            events = [e async for e in await client.responses.create(model="m", input=title, stream=True)]
            answer = events[-1].response.output_text
        else:
            answer = (await client.responses.create(model="m", input=title)).output_text
        task = await client.responses.create(model="m", input=USER, tools=[BASH_TOOL_RESPONSES])
        return answer, next(i.name for i in task.output if i.type == "function_call")


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_tool_less_request_is_a_side_request_in_every_wire(server, api, stream):
    server.load(scenario(TASK))
    answer, tool = await title_then_task(server, api, stream)
    assert answer == SIDE_TEXT
    assert tool == {"chat": "bash", "responses": "exec_command", "anthropic": "Bash"}[api]
    [side] = server.records.of_kind("side")
    assert (side.api, side.stream, side.source, side.tools) == (api, stream, "server", [])
    assert "offers no shell tool (tools offered: none) while the scenario calls the shell" in side.reason
    assert side.messages == [{"role": "user", "text": TITLE}]
    # The task's request is request 1 and got response 0: the side request used up nothing.
    [request] = server.records.of_kind("request")
    assert request.request == 1 and request.mono_ns > side.mono_ns
    assert [r.response_index for r in server.records.of_kind("response")] == [0]
    assert not [r for r in server.records if r.kind in ("chunk", "stream_end", "error") and r.mono_ns < request.mono_ns]


async def test_a_declared_pattern_makes_a_side_request_even_with_tools_and_an_unmatched_response_left(server):
    """Qwen's auto-memory request offers the shell tool; only the declared pattern tells it
    apart, and it must not take the response the next turn of the task needs."""
    server.load(scenario('model = "m"\nside_requests = ["Managed memory directory"]\n' + TASK.replace(
        'match = { last = "user", tools = true }\n', "")))
    memory = [{"role": "system", "content": "You are Qwen Code."},
              {"role": "user", "content": "Managed memory directory: /home/u/.qwen/memory. Update it."},
              {"role": "system", "content": "Be brief."}]
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        side = await client.chat.completions.create(model="small-model", messages=memory, tools=[BASH_TOOL])
        task = await client.chat.completions.create(model="m", messages=USER, tools=[BASH_TOOL])
    assert side.choices[0].message.content == SIDE_TEXT and side.choices[0].message.tool_calls is None
    assert json.loads(task.choices[0].message.tool_calls[0].function.arguments) == {"command": "echo task"}
    [record] = server.records.of_kind("side")
    assert record.reason == "its text contains the scenario's side_requests pattern 'Managed memory directory'"
    assert record.tools == ["bash"] and [m["role"] for m in record.messages] == ["system", "user", "system"]
    assert [r.request for r in server.records.of_kind("request")] == [1]


async def test_without_shell_calls_in_the_scenario_an_unmatched_request_is_still_a_500(server):
    server.load(scenario('[[responses]]\nmatch = { tools = true }\n[[responses.frames]]\ntext = "x"\n', name="plain"))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        with pytest.raises(openai.InternalServerError, match="scenario 'plain'.*none of them matches"):
            await client.chat.completions.create(model="m", messages=USER)
    assert server.records.of_kind("side") == [] and [r.status for r in server.records.of_kind("request")] == [500]


async def test_inproc_playback_answers_and_reports_a_side_request(server):
    pb = Playback(scenario(TASK), report_to=server.beacon_url, seed="p")
    async with pb:
        chunks = [c async for c in pb.chat_chunks({"model": "m", "stream": True,
                                                   "messages": [{"role": "user", "content": TITLE}]})]
        task = [c async for c in pb.chat_chunks({"model": "m", "stream": True, "messages": USER,
                                                 "tools": [BASH_TOOL]})]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == SIDE_TEXT
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert any(c["choices"][0]["delta"].get("tool_calls") for c in task)
    [side] = server.records.of_kind("side")
    assert (side.source, side.api, side.stream) == ("inproc", "chat", True)
    assert [r.request for r in server.records.of_kind("request")] == [1]



async def test_a_shell_tool_with_an_unknown_command_field_is_named_in_the_side_reason(server):
    """A tool named like a shell whose command field the server does not know makes the request
    a side request; the reason names that tool and the fields looked for, so the profile's
    author sees why the agent never reached the task."""
    server.load(scenario(TASK))
    tool = {"type": "function", "function": {"name": "run_in_terminal", "parameters": {
        "type": "object", "properties": {"line": {"type": "string"}}, "required": ["line"]}}}
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        answer = await client.chat.completions.create(model="m", messages=USER, tools=[tool])
    assert answer.choices[0].message.content == SIDE_TEXT
    [side] = server.records.of_kind("side")
    assert "run_in_terminal looks like a shell tool, but names its command in none of the fields command, cmd" \
        in side.reason
