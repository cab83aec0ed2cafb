"""The finish action: for agents that end a task only through an action of their own, every
response that would end its turn with text alone also calls that action — and only then."""
import json

import openai
import pytest
from fake_testkit import BASH_TOOL, scenario

from fake_server import ScenarioError
from fake_server.scenario import FinishAction

SUBMIT = {"type": "function", "function": {"name": "submit_and_exit", "description": "Finish", "parameters": {
    "type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}}}
TASK = '''
[[responses]]
match = { last = "user" }
[[responses.frames]]
text = "Running it."
[[responses.frames]]
shell = "echo task"

[[responses]]
match = { last = "tool" }
[[responses.frames]]
text = "All done."
'''
USER = [{"role": "user", "content": "do it"}]


async def two_turns(server, tools):
    """The task's two requests (the second answers the first's tool call); their messages."""
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        first = (await client.chat.completions.create(model="m", messages=USER, tools=tools)).choices[0].message
        call = first.tool_calls[0]
        history = [*USER, {"role": "assistant", "content": first.content, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.function.name,
                                                             "arguments": call.function.arguments}}]},
            {"role": "tool", "tool_call_id": call.id, "content": "task"}]
        second = (await client.chat.completions.create(model="m", messages=history, tools=tools)).choices[0].message
    return first, second


async def test_a_tool_action_follows_the_text_of_a_turn_ending_response_only(server):
    server.load(scenario('finish_action = { tool = "submit_and_exit", arguments = { result = "{text}" } }\n' + TASK))
    first, second = await two_turns(server, [BASH_TOOL, SUBMIT])
    assert [c.function.name for c in first.tool_calls] == ["bash"]       # a tool-calling response is left alone
    assert second.content == "All done."
    [call] = second.tool_calls
    assert call.function.name == "submit_and_exit" and json.loads(call.function.arguments) == {"result": "All done."}
    assert server.records.of_kind("response")[-1].finish_reason == "tool_calls"


async def test_a_shell_action_runs_through_the_request_s_shell_tool(server):
    server.load(scenario('finish_action = { shell = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" }\n' + TASK))
    _, second = await two_turns(server, [BASH_TOOL])
    [call] = second.tool_calls
    assert json.loads(call.function.arguments) == {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}


async def test_a_request_without_the_action_s_tool_gets_the_text_alone(server):
    server.load(scenario('finish_action = { tool = "submit_and_exit" }\n' + TASK))
    _, second = await two_turns(server, [BASH_TOOL])
    assert second.content == "All done." and not second.tool_calls


@pytest.mark.parametrize("table, problem", [
    ("{ }", "needs exactly one of 'tool'"),
    ('{ tool = "a", shell = "b" }', "needs exactly one of 'tool'"),
    ('{ shell = "b", arguments = { x = 1 } }', "belongs to a 'tool' action"),
    ('{ tool = "a", arguments = "x" }', "must be a table"),
    ('{ tool = "a", when = "always" }', "unknown key(s) when"),
])
def test_a_malformed_finish_action_is_refused_naming_it(table, problem):
    with pytest.raises(ScenarioError, match="finish_action") as info:
        scenario(f"finish_action = {table}\n" + TASK)
    assert problem in str(info.value)


def test_arguments_stand_in_the_response_text():
    action = FinishAction(tool="complete", arguments=(("summary", "said: {text}"), ("ok", True)))
    assert action.arguments_for("done") == {"summary": "said: done", "ok": True}
