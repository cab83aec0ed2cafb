"""Wire fidelity the real agents need, and the registry of wire modules."""
import json

import aiohttp
import anthropic
import openai
import pytest
from fake_testkit import BASH_TOOL, BASH_TOOL_ANTHROPIC, BASH_TOOL_RESPONSES, scenario

from fake_server import ScenarioError, wire_anthropic, wire_chat, wire_gemini, wire_responses
from fake_server.scenario_loader import parse_scenario_text
from fake_server.wire import UnknownWire, register, wire_for, wires

AFTER_TOOL = '''
[[responses]]
match = { last = "user" }
[[responses.frames]]
text = "wrong: answered as if the user spoke last"
[[responses]]
match = { last = "tool", contains = "a b c" }
[[responses.frames]]
text = "after the tool"
'''


def test_every_wire_is_registered_by_name_and_an_unknown_name_is_an_error():
    assert {w.NAME: w for w in wires()} == {"chat": wire_chat, "responses": wire_responses,
                                             "anthropic": wire_anthropic, "gemini": wire_gemini}
    assert wire_for("responses") is wire_responses
    with pytest.raises(UnknownWire, match=r"unknown wire API 'grpc' \(registered: anthropic, chat, gemini, responses\)"):
        wire_for("grpc")
    with pytest.raises(ValueError, match="a wire API named 'chat' is already registered"):
        register(wire_responses_named_chat())
    assert register(wire_chat) is wire_chat      # registering the same module again changes nothing


def wire_responses_named_chat():
    class Impostor:
        NAME = "chat"
        PATHS = ("/v1/other",)
        parse = staticmethod(wire_responses.parse)
        Encoder = wire_responses.Encoder
        error = staticmethod(wire_responses.error)
        unknown_model = staticmethod(wire_responses.unknown_model)
    return Impostor()


async def test_anthropic_accepts_system_messages_inside_messages_and_refuses_other_roles(server):
    """Claude Code's default tool set puts a system message in ``messages``; the real API takes it."""
    server.load(scenario(AFTER_TOOL))
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    messages = [{"role": "system", "content": [{"type": "text", "text": "MCP server instructions"}]},
                {"role": "user", "content": "list the files"},
                {"role": "assistant", "content": [tool_use]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b c"}]},
                {"role": "system", "content": "<system-reminder>be careful</system-reminder>"}]
    async with anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0) as client:
        answer = await client.messages.create(model="c", max_tokens=50, system="You are Claude Code.",
                                              messages=messages, tools=[BASH_TOOL_ANTHROPIC])
        assert answer.content[0].text == "after the tool"
        with pytest.raises(anthropic.BadRequestError,
                           match=r"messages\.1\.role: Input should be 'user', 'assistant' or 'system'"):
            await client.messages.create(model="c", max_tokens=50, messages=[
                messages[1], {"role": "tool", "content": "x"}])
        with pytest.raises(anthropic.BadRequestError, match="`tool_use` ids were found without `tool_result`"):
            await client.messages.create(model="c", max_tokens=50, messages=messages[1:3] + [
                {"role": "system", "content": "a note"}, {"role": "user", "content": "well?"}])
    canonical = server.records.of_kind("request")[0].canonical
    assert [(m["role"], m["text"]) for m in canonical["messages"]] == [
        ("system", "You are Claude Code."), ("system", "MCP server instructions"), ("user", "list the files"),
        ("assistant", ""), ("tool", "a b c"), ("system", "<system-reminder>be careful</system-reminder>")]


async def test_a_system_message_after_the_tool_result_is_not_the_last_turn_in_chat(server):
    """gptme and OpenHands put system messages mid-conversation, also right after a tool result."""
    server.load(scenario(AFTER_TOOL))
    history = [{"role": "system", "content": "You are gptme."}, {"role": "user", "content": "list the files"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "a b c"},
               {"role": "developer", "content": "Token budget: 1000 left."},
               {"role": "system", "content": "Remember to be brief."}]
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        answer = await client.chat.completions.create(model="m", messages=history, tools=[BASH_TOOL])
    assert answer.choices[0].message.content == "after the tool"
    roles = [m["role"] for m in server.records.of_kind("request")[0].canonical["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "system", "system"]


async def test_responses_instructions_and_developer_messages_are_not_the_last_turn(server):
    server.load(scenario(AFTER_TOOL))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        answer = await client.responses.create(model="m", instructions="You are Codex.", input=[
            {"role": "user", "content": "list the files"},
            {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a b c"},
            {"role": "developer", "content": "Approvals are off."}], tools=[BASH_TOOL_RESPONSES])
    assert answer.output_text == "after the tool"


EXEC_COMMAND = {"type": "function", "name": "exec_command", "parameters": {"type": "object", "required": ["cmd"],
                "properties": {"cmd": {"type": "string"}, "yield_time_ms": {"type": "number"},
                               "workdir": {"type": "string"}}}}


@pytest.mark.parametrize("extra, tool, expected", [
    ("", EXEC_COMMAND, {"cmd": "sleep 30", "yield_time_ms": 600000}),
    ("extra = { yield_time_ms = 5000 }\n", EXEC_COMMAND, {"cmd": "sleep 30", "yield_time_ms": 5000}),
    ("", BASH_TOOL_RESPONSES, {"cmd": "sleep 30"}),
], ids=["default added", "scenario wins", "not in the schema"])
async def test_exec_command_gets_a_yield_time_that_keeps_the_command_in_the_foreground(server, extra, tool, expected):
    server.load(scenario(f'[[responses]]\n[[responses.frames]]\nshell = "sleep 30"\n{extra}'))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        answer = await client.responses.create(model="m", input="run it", tools=[tool])
    call = next(i for i in answer.output if i.type == "function_call")
    assert json.loads(call.arguments) == expected


def test_match_on_the_system_role_is_refused_since_system_messages_are_passed_over():
    with pytest.raises(ScenarioError, match=r"responses\[0\]\.match\.last: must be one of user, tool, assistant, "
                                            r"not 'system' \(the last turn is the last message that is not a system"):
        parse_scenario_text('name = "x"\n[[responses]]\nmatch = { last = "system" }\n'
                            '[[responses.frames]]\ntext = "a"\n')


@pytest.mark.parametrize("value, item", [('"Generate a title"', "side_requests"), ('[""]', "side_requests[0]"),
                                         ("[1]", "side_requests[0]")])
def test_side_requests_must_be_non_empty_strings(value, item):
    with pytest.raises(ScenarioError) as info:
        parse_scenario_text(f'name = "x"\nside_requests = {value}\n[[responses]]\n[[responses.frames]]\ntext = "a"\n')
    assert info.value.item == item


async def test_the_server_mounts_each_wire_at_its_paths(server):
    server.load(scenario('[[responses]]\nrepeat = true\n[[responses.frames]]\ntext = "ok"\n'))
    bodies = {"chat": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
              "responses": {"model": "m", "input": "hi"},
              "anthropic": {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
              "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}}
    route = {"model": "m", "method": "generateContent"}     # the parts of a path a wire's route names
    paths = [(w.NAME, p.format(**route)) for w in wires() for p in w.PATHS]
    async with aiohttp.ClientSession() as http:
        for name, path in paths:
            async with http.post(server.url + path, json=bodies[name]) as resp:
                assert resp.status == 200, (name, path)
    assert [(r.api, r.path) for r in server.records.of_kind("request")] == paths
