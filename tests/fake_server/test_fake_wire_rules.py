"""The history rules each wire enforces, one test per rule of ``docs/wire-rules.md``: the
malformed history an agent may send after an interruption is refused the way its provider
refuses it, what the real API accepts is accepted, and a refusal leaves a record the
balance check (C4) reads as the agent's failure."""
import aiohttp
import pytest
from fake_testkit import scenario

from fake_server.errors import ApiError
from fake_server.wire import wire_for
from harness.checks import views

ONE_TEXT = '[[responses]]\nrepeat = true\n[[responses.frames]]\ntext = "fine"\n'


def call(call_id: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}


def chat(messages: list[dict]):
    return wire_for("chat").parse({"model": "m", "messages": messages})


def anthropic(messages: list[dict]):
    return wire_for("anthropic").parse({"model": "m", "max_tokens": 10, "messages": messages})


def use(tool_id: str) -> dict:
    return {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {}}


def result(tool_id: str) -> dict:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}


def refused(parse, messages: list[dict]) -> str:
    with pytest.raises(ApiError) as info:
        parse(messages)
    assert info.value.status == 400
    return info.value.message


USER = {"role": "user", "content": "go"}


# --- OpenAI Chat Completions ------------------------------------------------------------------

def test_chat_tool_message_answering_a_call_the_assistant_did_not_make():
    message = refused(chat, [USER, {"role": "assistant", "content": None, "tool_calls": [call("call_a")]},
                             {"role": "tool", "tool_call_id": "call_zz", "content": "x"}])
    assert message == "Invalid parameter: 'tool_call_id' of 'call_zz' not found in 'tool_calls' of previous message."


def test_chat_tool_message_after_no_tool_calls():
    message = refused(chat, [USER, {"role": "tool", "tool_call_id": "call_a", "content": "x"}])
    assert "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'" in message


def test_chat_tool_calls_not_followed_by_a_tool_message_for_each():
    message = refused(chat, [USER, {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
                             {"role": "tool", "tool_call_id": "a", "content": "x"}, USER])
    assert message.startswith("An assistant message with 'tool_calls' must be followed by tool messages "
                              "responding to each 'tool_call_id'.") and message.endswith(": b")


def test_chat_tool_message_without_content_and_tool_call_without_type():
    assert refused(chat, [USER, {"role": "assistant", "tool_calls": [call("a")]},
                          {"role": "tool", "tool_call_id": "a"}]) == "Missing required parameter: 'messages[2].content'."
    untyped = {"id": "a", "function": {"name": "bash", "arguments": "{}"}}
    assert refused(chat, [USER, {"role": "assistant", "tool_calls": [untyped]}]) == (
        "Missing required parameter: 'messages[1].tool_calls[0].type'.")


def test_chat_accepts_system_messages_anywhere():
    """gptme and OpenHands put system messages mid-conversation; OpenAI accepts them."""
    parsed = chat([{"role": "system", "content": "s"}, USER, {"role": "assistant", "content": "ok"},
                   {"role": "system", "content": "note"}, {"role": "developer", "content": "d"}, USER])
    assert [m["role"] for m in parsed.canonical["messages"]] == ["system", "user", "assistant", "system", "system",
                                                                  "user"]


# --- OpenAI Responses -------------------------------------------------------------------------

def test_responses_output_without_its_call_and_call_without_its_output():
    def responses(items):
        return wire_for("responses").parse({"model": "m", "input": items})
    fc = {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"}
    out = {"type": "function_call_output", "call_id": "c1", "output": "x"}
    assert refused(responses, [USER, out]) == "No tool call found for function call output with call_id c1."
    assert refused(responses, [USER, fc, USER]) == "No tool output found for function call c1."
    assert responses([USER, fc, out, USER]).canonical["messages"][2]["tool_call_id"] == "c1"


# --- Anthropic Messages -----------------------------------------------------------------------

def test_anthropic_tool_use_without_a_result_in_the_next_message():
    message = refused(anthropic, [USER, {"role": "assistant", "content": [use("t1")]}, USER])
    assert message.startswith("messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
                              "after: t1.")


def test_anthropic_tool_result_without_its_tool_use():
    message = refused(anthropic, [USER, {"role": "assistant", "content": "ok"},
                                  {"role": "user", "content": [result("t9")]}])
    assert "unexpected `tool_use_id` found in `tool_result` blocks: t9" in message


def test_anthropic_tool_results_come_first_in_their_message():
    message = refused(anthropic, [USER, {"role": "assistant", "content": [use("t1")]},
                                  {"role": "user", "content": [{"type": "text", "text": "well?"}, result("t1")]}])
    assert "`tool_use` ids were found without `tool_result` blocks immediately after: t1" in message
    anthropic([USER, {"role": "assistant", "content": [use("t1")]},
               {"role": "user", "content": [result("t1"), {"type": "text", "text": "[Request interrupted by user]"}]}])


def test_anthropic_empty_content():
    message = refused(anthropic, [USER, {"role": "assistant", "content": []}, USER])
    assert message == ("messages.1: all messages must have non-empty content except for the optional final "
                       "assistant message")
    assert refused(anthropic, [{"role": "user", "content": [{"type": "text", "text": ""}]}]) == (
        "messages: text content blocks must be non-empty")
    anthropic([USER, {"role": "assistant", "content": ""}])     # the final assistant message: a prefill


def test_anthropic_consecutive_messages_of_one_role_are_one_turn():
    """The API combines consecutive user or assistant messages, so a tool use followed by a
    second assistant message is answered by the user message after both."""
    parsed = anthropic([USER, {"role": "assistant", "content": [use("t1")]},
                        {"role": "assistant", "content": [{"type": "text", "text": "(interrupted)"}]},
                        {"role": "user", "content": [result("t1")]}, USER])
    assert [m["role"] for m in parsed.canonical["messages"]] == ["user", "assistant", "assistant", "tool", "user"]


def test_anthropic_accepts_a_system_message_inside_messages():
    """Claude Code sends one with its default tool set; the real API accepts it, also between a
    tool use and its result."""
    anthropic([USER, {"role": "assistant", "content": [use("t1")]}, {"role": "system", "content": "reminder"},
               {"role": "user", "content": [result("t1")]}])


# --- Gemini -------------------------------------------------------------------------------------

def test_gemini_function_responses_pair_with_the_calls_before_them():
    def gemini(contents):
        return wire_for("gemini").parse({"contents": contents}, {"model": "m", "method": "generateContent"})
    user = {"role": "user", "parts": [{"text": "go"}]}
    calls = {"role": "model", "parts": [{"functionCall": {"name": "run", "args": {}}},
                                        {"functionCall": {"name": "run", "args": {"x": 1}}}]}
    one = {"role": "user", "parts": [{"functionResponse": {"name": "run", "response": {"output": "x"}}}]}
    assert "number of function response parts is equal to the number of function call parts" in refused(
        gemini, [user, calls, one])
    assert "function response turn comes immediately after a function call turn" in refused(gemini, [user, one])
    assert "function call turn comes immediately after a user turn" in refused(gemini, [calls])


# --- what the checks see ------------------------------------------------------------------------

async def test_a_refused_history_is_a_record_the_balance_check_reads_as_a_failure(server):
    server.load(scenario(ONE_TEXT))
    bodies = [
        ("/v1/chat/completions", {}, {"model": "m", "messages": [
            USER, {"role": "assistant", "content": None, "tool_calls": [call("a")]}, USER]}),
        ("/v1/messages", {"anthropic-version": "2023-06-01"}, {"model": "m", "max_tokens": 5, "messages": [
            USER, {"role": "assistant", "content": []}, USER]}),
    ]
    async with aiohttp.ClientSession() as http:
        for path, headers, body in bodies:
            async with http.post(server.url + path, json=body, headers=headers) as resp:
                assert resp.status == 400
    for record in server.records.of_kind("request"):
        assert views.refused(record) and (views.unbalanced(record) or not views.parsed(record)), record.error  # C4's
    assert len(server.records.of_kind("error")) == 2
