"""A conversation shaped like gptme's: system messages before the user's and after a tool's
result, a tool-less, non-streamed title request that quotes the whole conversation (so it
contains the words the task's responses match on), and turns that end through the agent's own
``complete`` tool. The title request is a side request answered in its own (whole) form and
uses up nothing; the system messages are never taken for the last turn."""
import openai
from fake_testkit import scenario

from fake_server.script import SIDE_TEXT

SHELL = {"type": "function", "function": {"name": "shell", "description": "Run a command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}, "background": {"type": "boolean"}},
    "required": ["command"]}}}
COMPLETE = {"type": "function", "function": {"name": "complete", "description": "End the session",
                                             "parameters": {"type": "object", "properties": {}}}}
TOOLS = [SHELL, COMPLETE]
TASK = '''finish_action = { tool = "complete" }

[[responses]]
match = { last = "user", contains = "Run the long job" }
[[responses.frames]]
text = "I will run the long job now."
[[responses.frames]]
shell = "echo long-job"

[[responses]]
match = { last = "tool" }
[[responses.frames]]
text = "The job ran."

[[responses]]
match = { last = "user", contains = "Follow-up" }
[[responses.frames]]
text = "Both are done."
'''
PREAMBLE = [{"role": "system", "content": "You are gptme."}, {"role": "system", "content": "# Cache boundary"},
            {"role": "system", "content": "## System Information"}]


def title_request(conversation: str) -> list[dict]:
    return [{"role": "system", "content": "Generate concise conversation titles."},
            {"role": "user", "content": "Create a 2-4 word title for this conversation.\n\nConversation:\n"
                                        + conversation}]


async def test_a_quoting_title_request_is_a_side_request_and_the_task_goes_on(server):
    server.load(scenario(TASK))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        history = [*PREAMBLE, {"role": "user", "content": "Run the long job."}]
        first = (await client.chat.completions.create(model="m", messages=history, tools=TOOLS,
                                                      stream=False)).choices[0].message
        [call] = first.tool_calls
        assert call.function.name == "shell"
        # the title request quotes both the task's words and a later turn's: it takes neither
        title = await client.chat.completions.create(
            model="m", messages=title_request("User: Run the long job.\nUser: Follow-up: where are we?"), stream=False)
        assert title.choices[0].message.content == SIDE_TEXT and not title.choices[0].message.tool_calls
        history += [{"role": "assistant", "content": first.content, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": "shell", "arguments": call.function.arguments}}]},
            {"role": "tool", "tool_call_id": call.id, "content": "long-job"},
            {"role": "system", "content": "Ran command: `echo long-job`"}]  # a note after the result
        second = (await client.chat.completions.create(model="m", messages=history, tools=TOOLS,
                                                       stream=False)).choices[0].message
        assert second.content == "The job ran." and [c.function.name for c in second.tool_calls] == ["complete"]
        history += [{"role": "assistant", "content": second.content, "tool_calls": [
            {"id": second.tool_calls[0].id, "type": "function", "function": {"name": "complete", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": second.tool_calls[0].id, "content": "Task complete."},
            {"role": "user", "content": "Follow-up: where are we?"}, {"role": "system", "content": "<budget>"}]
        third = (await client.chat.completions.create(model="m", messages=history, tools=TOOLS,
                                                      stream=False)).choices[0].message
    assert third.content == "Both are done." and [c.function.name for c in third.tool_calls] == ["complete"]
    [side] = server.records.of_kind("side")
    assert (side.stream, side.tools) == (False, [])
    assert "offers no shell tool" in side.reason
    assert [r.response_index for r in server.records.of_kind("response")] == [0, 1, 2]


async def test_without_shell_calls_a_tool_less_request_is_a_side_request_too(server):
    server.load(scenario('finish_action = { tool = "complete" }\n[[responses]]\nmatch = { last = "user" }\n'
                         '[[responses.frames]]\ntext = "Hello."\n'))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        title = await client.chat.completions.create(model="m", messages=title_request("User: hi"), stream=False)
        task = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                    tools=TOOLS, stream=False)
    assert title.choices[0].message.content == SIDE_TEXT
    assert [c.function.name for c in task.choices[0].message.tool_calls] == ["complete"]
    [side] = server.records.of_kind("side")
    assert side.reason == "no response matches and it offers no tool while the scenario has a finish action"
