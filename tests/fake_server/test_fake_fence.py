"""Shell frames as fenced blocks (``shell_fence``), for an agent that calls no tools (aider): the
command arrives in the text, the request needs no shell tool to be the task's, and the output
that comes back as a user message is matched like any user turn. Without the fence, the same
tool-less request stays a side request."""
import openai
import pytest
from fake_testkit import scenario

from fake_server import ScenarioError
from fake_server.fence import fenced_block

TASK = '''
[[responses]]
match = { last = "user", contains = "Run the check" }
[[responses.frames]]
text = "Running it."
[[responses.frames]]
shell = "echo stopbench-fenced"
[[responses.frames]]
shell = { window = { id = "w1", hold_s = 1 } }

[[responses]]
match = { last = "user", contains = "Output from echo stopbench-fenced" }
[[responses.frames]]
text = "The check printed its word."
'''


async def ask(server, messages, stream=True) -> str:
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        if not stream:
            return (await client.chat.completions.create(model="m", messages=messages)).choices[0].message.content
        chunks = [c async for c in await client.chat.completions.create(model="m", messages=messages, stream=True)]
        assert not [c for c in chunks if c.choices and c.choices[0].delta.tool_calls]
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_shell_frame_is_a_fenced_block_and_the_output_turn_is_the_tasks(server, stream):
    server.load(scenario('shell_fence = "bash"\n' + TASK))
    first = [{"role": "user", "content": "Run the check, please."}]
    text = await ask(server, first, stream)
    assert text.startswith("Running it.") and fenced_block("bash", "echo stopbench-fenced") in text
    # The window is the command line of the window program, beaconing to this server.
    blocks = text.split("```bash\n")[1:]
    assert len(blocks) == 2 and "-m fake_server.window --id w1" in blocks[1] and server.url in blocks[1]
    # aider sends the command's output back as a user message (and its own "Ok").
    output = [*first, {"role": "assistant", "content": text},
              {"role": "user", "content": "Output from echo stopbench-fenced\nstopbench-fenced\n"},
              {"role": "assistant", "content": "Ok"},
              {"role": "user", "content": "Output from echo stopbench-fenced\nstopbench-fenced\n"}]
    assert await ask(server, output, stream) == "The check printed its word."
    assert server.records.of_kind("side") == []
    [r1, r2] = server.records.of_kind("response")
    assert (r1.response_index, r1.tool_calls, r1.finish_reason) == (0, [], "stop")
    assert r2.response_index == 1


async def test_without_the_fence_the_tool_less_request_is_a_side_request(server):
    server.load(scenario(TASK))
    text = await ask(server, [{"role": "user", "content": "Run the check, please."}])
    assert "```" not in text
    [side] = server.records.of_kind("side")
    assert "offers no shell tool" in side.reason
    assert server.records.of_kind("response") == []


def test_the_fence_language_is_checked():
    with pytest.raises(ScenarioError, match="shell_fence: must be a fence language"):
        scenario('shell_fence = "ba sh"\n' + TASK)
