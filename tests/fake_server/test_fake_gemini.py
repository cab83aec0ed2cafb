"""The Gemini wire through the official ``google-genai`` SDK: what the scenario said is what the
SDK assembles, history is checked as strictly as the real API, errors have Google's shape."""
import asyncio
import json

import aiohttp
import pytest
from fake_testkit import scenario
from google import genai
from google.genai import errors, types

from fake_server import wire_gemini
from fake_server.errors import ApiError
from fake_server.script import SIDE_TEXT

SHELL = types.Tool(function_declarations=[types.FunctionDeclaration(
    name="run_shell_command", description="Run a shell command",
    parameters_json_schema={"type": "object", "properties": {"command": {"type": "string"},
                                                             "is_background": {"type": "boolean"}},
                            "required": ["command"]})])
CONFIG = types.GenerateContentConfig(tools=[SHELL], system_instruction="You are Gemini CLI.",
                                     automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
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
STALL = '[[responses]]\n[[responses.frames]]\ntext = "wait"\n[[responses.frames]]\nstall = true\n'


def client(server, version: str = "v1beta") -> genai.Client:
    return genai.Client(api_key="gemini-canary-123", http_options=types.HttpOptions(
        base_url=server.url, api_version=version, retry_options=types.HttpRetryOptions(attempts=1)))


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def answered(call: types.FunctionCall, output: str) -> list[types.Content]:
    """The turns after the user's: the model's call, and its result."""
    return [types.Content(role="model", parts=[types.Part(function_call=call)]),
            types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                id=call.id, name=call.name, response={"output": output}))])]


async def test_stream_assembles_thoughts_text_and_a_whole_function_call(server):
    server.load(scenario(TEXT_AND_SHELL))
    chunks = [c async for c in await client(server).aio.models.generate_content_stream(
        model="gemini-x", contents="list the files", config=CONFIG)]
    parts = [p for c in chunks for p in (c.candidates[0].content.parts or [])]
    thoughts = "".join(p.text for p in parts if p.thought)
    text = "".join(p.text or "" for p in parts if not p.thought and not p.function_call)
    calls = [p.function_call for p in parts if p.function_call]
    assert thoughts == "The user wants a listing." and text == "Listing the files now."
    assert [(c.name, c.args) for c in calls] == [("run_shell_command", {"command": "ls -la /tmp"})]
    assert next(p for p in parts if p.function_call).thought_signature     # Gemini 3 sends one with a call
    final = chunks[-1]
    assert final.candidates[0].finish_reason == types.FinishReason.STOP
    usage = final.usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count, usage.total_token_count) == (11, 22, 33)
    assert {c.model_version for c in chunks} == {"gemini-x"} and len({c.response_id for c in chunks}) == 1
    # One frame per numbered chunk: the call's first pieces are frames without parts.
    numbered = server.records.of_kind("chunk")
    assert len(chunks) == len(numbered) + 1
    assert sum(1 for c in chunks if not c.candidates[0].content.parts) == sum(
        1 for r in numbered if r.tool_call_id) - 1
    [response] = server.records.of_kind("response")
    assert response.tool_calls[0]["id"] == calls[0].id == "call_t000001"
    [request] = server.records.of_kind("request")
    assert request.path == "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == "[redacted]"
    assert [(m["role"], m["text"]) for m in request.canonical["messages"]] == [
        ("system", "You are Gemini CLI."), ("user", "list the files")]
    assert request.canonical["shell_tool"] == "run_shell_command"


async def test_a_function_call_round_trip_not_streamed(server):
    server.load(scenario(TEXT_AND_SHELL))
    gemini = client(server, version="v1")
    first = await gemini.aio.models.generate_content(model="m", contents="list the files", config=CONFIG)
    [call] = first.function_calls
    assert first.text == "Listing the files now."
    kinds = [("thought" if p.thought else "call" if p.function_call else "text") for p in first.candidates[0].content.parts]
    assert kinds == ["thought", "text", "call"]      # consecutive pieces merged into one part each
    second = await gemini.aio.models.generate_content(
        model="m", contents=[user("list the files"), *answered(call, "a b c")], config=CONFIG)
    assert second.text == "There are 3 files." and second.candidates[0].finish_reason == types.FinishReason.STOP
    request = await server.records.wait_request(2)
    assert request.path == "/v1/models/m:generateContent" and request.canonical["stream"] is False
    assert [(m["role"], m["tool_call_id"]) for m in request.canonical["messages"]] == [
        ("system", None), ("user", None), ("assistant", None), ("tool", call.id)]
    assert request.canonical["messages"][2]["tool_calls"] == [
        {"id": call.id, "name": "run_shell_command", "arguments": '{"command": "ls -la /tmp"}'}]
    assert request.canonical["messages"][3]["text"] == "a b c"
    assert "gemini-canary-123" not in json.dumps([r.to_json() for r in server.records])


async def test_cancelling_a_stream_mid_read_is_recorded_as_a_disconnect(server):
    server.load(scenario(STALL))
    stream = await client(server).aio.models.generate_content_stream(model="m", contents="hi")
    seen = []

    async def consume():
        async for chunk in stream:
            seen.append(chunk.text)

    task = asyncio.create_task(consume())
    first = await server.records.wait_chunk(request=1, chunk=1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await stream.aclose()
    async with asyncio.timeout(10):
        gone = await server.records.wait_disconnect(request=1)
    assert gone.after_chunk == 1 and gone.mono_ns > first.mono_ns
    assert not server.records.of_kind("stream_end")


@pytest.mark.parametrize("contents, wording", [
    ([user("list"), types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
        id="c1", name="run_shell_command", args={"command": "ls"}))]), user("well?")], wire_gemini.COUNTS_DIFFER),
    ([user("list"), types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
        id="c1", name="run_shell_command", response={"output": "x"}))])], wire_gemini.RESPONSE_AFTER_CALL),
    ([types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
        name="run_shell_command", args={}))]), user("x")], wire_gemini.CALL_AFTER_USER),
], ids=["call not answered", "response without a call", "history opens with a call"])
async def test_an_unbalanced_history_gets_the_real_apis_400(server, contents, wording):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "never"\n'))
    with pytest.raises(errors.ClientError) as info:
        await client(server).aio.models.generate_content(model="m", contents=contents, config=CONFIG)
    assert (info.value.code, info.value.status, info.value.message) == (400, "INVALID_ARGUMENT", wording)
    [request] = server.records.of_kind("request")
    assert (request.status, request.error) == (400, wording)
    assert not server.records.of_kind("response")


@pytest.mark.parametrize("status, error_class, google_status", [
    (429, errors.ClientError, "RESOURCE_EXHAUSTED"), (503, errors.ServerError, "UNAVAILABLE")])
async def test_an_http_error_frame_has_googles_body(server, status, error_class, google_status):
    server.load(scenario(f'[[responses]]\n[[responses.frames]]\nhttp_error = {status}\nretry_after = 3\n'))
    with pytest.raises(error_class) as info:
        await client(server).aio.models.generate_content(model="m", contents="hi")
    assert (info.value.code, info.value.status) == (status, google_status)
    assert info.value.details["error"]["details"] == [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}]


async def test_a_mid_stream_error_raises_after_the_text_before_it(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "partial"\n'
                         '[[responses.frames]]\nerror = "overloaded"\nmessage = "busy now"\n'))
    seen = []
    with pytest.raises(errors.APIError, match="busy now"):
        async for chunk in await client(server).aio.models.generate_content_stream(model="m", contents="hi"):
            seen.append(chunk.text)
    assert seen == ["partial"]
    end = await server.records.wait_for(lambda r: r.kind == "stream_end", "stream_end")
    assert end.complete is False


async def test_a_disconnect_after_some_chunks_breaks_the_stream_after_them(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "abcdefghij"\nchunk = 2\n'
                         '[[responses.frames]]\ndisconnect = true\n'))
    seen = []
    with pytest.raises(aiohttp.ClientError):
        async for chunk in await client(server).aio.models.generate_content_stream(model="m", contents="hi"):
            seen.append(chunk.text)
    assert "".join(seen) == "abcdefghij" and [r.chunk for r in server.records.of_kind("chunk")] == [1, 2, 3, 4, 5]
    [end] = server.records.of_kind("stream_end")
    assert end.complete is False


async def test_a_tool_less_request_is_a_side_request(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\nshell = "echo task"\n'))
    side = await client(server).aio.models.generate_content(model="flash-lite", contents="Summarize this session")
    task = await client(server).aio.models.generate_content(model="m", contents="run it", config=CONFIG)
    assert side.text == SIDE_TEXT and task.function_calls[0].name == "run_shell_command"
    [record] = server.records.of_kind("side")
    assert (record.api, record.stream, record.path) == ("gemini", False, "/v1beta/models/flash-lite:generateContent")


async def test_the_key_as_a_query_parameter_never_reaches_a_record(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\ntext = "ok"\n'))
    body = {"contents": [{"parts": [{"text": "hi"}]}]}
    async with aiohttp.ClientSession() as http:
        url = f"{server.url}/v1beta/models/m:streamGenerateContent?alt=sse&key=query-canary-9"
        async with http.post(url, json=body) as resp:
            frames = [json.loads(line[6:]) for line in (await resp.text()).splitlines() if line.startswith("data: ")]
    assert resp.status == 200 and "".join(p["text"] for f in frames for p in f["candidates"][0]["content"]["parts"]) == "ok"
    assert frames[-1]["candidates"][0]["finishReason"] == "STOP"
    [request] = server.records.of_kind("request")
    assert "query-canary-9" not in json.dumps([r.to_json() for r in server.records])
    assert request.path.startswith("/v1beta/models/m:streamGenerateContent?alt=sse&key=")


async def test_an_unknown_method_or_path_gets_a_google_shaped_404(server):
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{server.url}/v1beta/models/m:countTokens", json={"contents": []}) as resp:
            method = await resp.json()
        async with http.post(f"{server.url}/v1beta/cachedContents", json={}) as resp:
            path = await resp.json()
    assert method["error"]["code"] == 404 and method["error"]["status"] == "NOT_FOUND"
    assert "countTokens" in method["error"]["message"]
    assert path["error"]["status"] == "NOT_FOUND" and "Invalid URL" in path["error"]["message"]


# --- parsing, without HTTP -------------------------------------------------------------------

ROUTE = {"model": "m", "method": "generateContent"}


def parse(body):
    return wire_gemini.parse(body, ROUTE)


def refusal(body) -> str:
    with pytest.raises(ApiError) as info:
        parse(body)
    assert info.value.status == 400 and info.value.body["error"]["status"] == "INVALID_ARGUMENT"
    return info.value.message


def call_turn(*names, ids=True):
    return {"role": "model", "parts": [{"functionCall": {**({"id": f"id-{n}"} if ids else {}), "name": n, "args": {}}}
                                       for n in names]}


def result_turn(*names, ids=True):
    return {"role": "user", "parts": [{"functionResponse": {**({"id": f"id-{n}"} if ids else {}), "name": n,
                                                            "response": {"output": f"out-{n}"}}} for n in names]}


PROMPT = {"role": "user", "parts": [{"text": "go"}]}


@pytest.mark.parametrize("contents, wording", [
    ([PROMPT, call_turn("a", "b"), result_turn("a")], wire_gemini.COUNTS_DIFFER),
    ([PROMPT, call_turn("a")], wire_gemini.COUNTS_DIFFER),
    ([PROMPT, {"role": "model", "parts": [{"text": "thinking aloud"}]}, call_turn("a"), result_turn("a")],
     wire_gemini.CALL_AFTER_USER),
    ([PROMPT, call_turn("a"), result_turn("a"), result_turn("a")], wire_gemini.RESPONSE_AFTER_CALL),
    ([{"role": "system", "parts": [{"text": "x"}]}], "Please use a valid role: user, model."),
    ([{"role": "user", "parts": []}], "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty."),
    ([], "* GenerateContentRequest.contents: contents is not specified"),
], ids=["fewer results", "trailing call", "call after a model turn", "results twice", "role", "no parts",
        "no contents"])
def test_history_rules(contents, wording):
    assert refusal({"contents": contents}) == wording


def test_results_pair_with_calls_by_id_else_by_name_else_in_order():
    contents = [PROMPT, call_turn("a", "b", "c"),
                {"role": "user", "parts": [result_turn("b")["parts"][0], result_turn("a", ids=False)["parts"][0],
                                           {"functionResponse": {"name": "zzz", "response": {"error": "boom"}}},
                                           {"text": "and then?"}]}]
    messages = parse({"contents": contents}).canonical["messages"]
    assert [(m["role"], m["tool_call_id"], m["text"]) for m in messages[2:]] == [
        ("tool", "id-b", "out-b"), ("tool", "id-a", "out-a"), ("tool", "id-c", "boom"), ("user", None, "and then?")]


def test_snake_case_fields_and_openapi_parameters_are_read_like_camel_case():
    body = {"contents": [{"role": "user", "parts": [{"text": "go"}]},
                         {"role": "model", "parts": [{"text": "hm", "thought": True},
                                                     {"function_call": {"name": "Shell", "args": {"command": "ls"}}}]},
                         {"role": "user", "parts": [{"function_response": {"name": "Shell", "response": {"n": 1}}}]}],
            "system_instruction": {"parts": [{"text": "sys"}]},
            "tools": [{"function_declarations": [{"name": "Shell", "parameters": {
                "type": "OBJECT", "properties": {"command": {"type": "ARRAY", "items": {"type": "STRING"}}}}}]},
                {"googleSearch": {}}]}
    parsed = parse(body)
    assert [(m["role"], m["text"]) for m in parsed.canonical["messages"]] == [
        ("system", "sys"), ("user", "go"), ("assistant", ""), ("tool", '{"n": 1}')]
    assert parsed.canonical["tools"] == ["Shell"]
    assert parsed.tool_defs[0].parameters["properties"]["command"] == {"type": "array", "items": {"type": "string"}}


@pytest.mark.parametrize("body, wording", [
    ({"contents": [PROMPT], "tools": [{"functionDeclarations": [{"description": "no name"}]}]},
     "* GenerateContentRequest.tools[0].function_declarations[0].name: Name cannot be empty."),
    ({"contents": [PROMPT, {"role": "model", "parts": [{"functionCall": {"args": {}}}]}]},
     "* GenerateContentRequest.contents[1].parts[0].function_call.name: Name cannot be empty."),
    ({"contents": [PROMPT], "systemInstruction": "be brief"},
     "Invalid value at 'system_instruction', must be a Content object"),
])
def test_malformed_parts_are_refused_naming_the_field(body, wording):
    assert refusal(body) == wording
