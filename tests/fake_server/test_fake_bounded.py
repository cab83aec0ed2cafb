"""A large request's record keeps what the checks read, bounded: the canonical history with long
texts cut around a marker, the body's size and digest, what was cut, and any credential leaked
into what was left out."""
import hashlib
import json

import aiohttp
from fake_testkit import BASH_TOOL, scenario

from fake_server.bounded import KEEP_BODY_BYTES, KEEP_TEXT_CHARS

ONE_TEXT = '[[responses]]\nrepeat = true\n[[responses.frames]]\ntext = "fine"\n'
KEY = "sk-canary-0123456789abcdef"
USER = {"role": "user", "content": "go on"}


def history(output: str, arguments: str = '{"command": "ls"}') -> list[dict]:
    return [{"role": "user", "content": "run it"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": output},
            {"role": "user", "content": "and now?"}]


async def post(server, messages: list[dict]) -> None:
    body = {"model": "m", "messages": messages, "tools": [BASH_TOOL]}
    async with aiohttp.ClientSession() as http:
        async with http.post(server.base_url + "/chat/completions", json=body,
                             headers={"Authorization": f"Bearer {KEY}"}) as resp:
            assert resp.status == 200, await resp.text()


async def test_a_small_body_is_kept_whole(server):
    server.load(scenario(ONE_TEXT))
    await post(server, history("a.txt"))
    [record] = server.records.of_kind("request")
    assert record.body["messages"][2]["content"] == "a.txt"
    assert record.elided is None and record.body_bytes is None


async def test_a_large_body_keeps_the_history_with_long_texts_cut_and_says_so(server):
    server.load(scenario(ONE_TEXT))
    output = "".join(f"line {n:07d}\n" for n in range(KEEP_BODY_BYTES // 10))  # past the body limit
    arguments = json.dumps({"command": "echo " + "y" * (KEEP_TEXT_CHARS + 5)})
    await post(server, history(output, arguments))
    [record] = server.records.of_kind("request")
    assert record.body is None and record.body_bytes > KEEP_BODY_BYTES and len(record.body_sha256) == 64
    messages = record.canonical["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user"]
    assert messages[2]["tool_call_id"] == "call_1" and messages[3]["text"] == "and now?"
    kept = messages[2]["text"]
    half = KEEP_TEXT_CHARS // 2
    assert kept.startswith(output[:half]) and kept.endswith(output[-half:])
    assert f"{len(output) - 2 * half} characters elided" in kept
    assert hashlib.sha256(output.encode()).hexdigest() in kept
    assert messages[1]["tool_calls"][0]["id"] == "call_1" and "characters elided" in messages[1]["tool_calls"][0][
        "arguments"]
    assert record.elided[0].startswith(f"body ({record.body_bytes} bytes): not kept")
    assert any(e.startswith("messages[2].text") for e in record.elided)
    assert any(e.startswith("messages[1].tool_calls[0].arguments") for e in record.elided)
    assert len(json.dumps(record.to_json())) < 4 * KEEP_TEXT_CHARS


async def test_a_credential_in_a_large_body_is_still_in_its_record(server):
    """The canary scan reads records: a key leaked into the middle of a large tool output is
    kept in an excerpt, while the authorization header stays redacted."""
    server.load(scenario(ONE_TEXT))
    filler = "z" * KEEP_BODY_BYTES
    await post(server, history(f"{filler} OPENAI_API_KEY={KEY} {filler}"))
    [record] = server.records.of_kind("request")
    assert record.headers["authorization"] == "[redacted]"
    assert record.body is None and KEY not in record.canonical["messages"][2]["text"]
    [excerpt] = record.body_excerpts
    assert f"OPENAI_API_KEY={KEY}" in excerpt
    without_headers = {k: v for k, v in record.to_json().items() if k != "headers"}
    assert KEY in json.dumps(without_headers)


async def test_records_stay_small_however_many_large_requests_come(server):
    server.load(scenario(ONE_TEXT))
    for n in range(5):
        await post(server, history(f"{n}" * (2 * KEEP_BODY_BYTES)))
    size = len(json.dumps(server.records.to_json()))
    assert size < 5 * 4 * KEEP_TEXT_CHARS, f"{size} bytes of records for 5 requests"


async def test_a_long_text_reads_the_same_in_a_small_and_a_large_request(server):
    """Checks compare one history across requests (before and after a kill): a long tool
    output is cut alike whether its request's body was kept whole or not."""
    server.load(scenario(ONE_TEXT))
    output = "".join(f"row {n:06d}\n" for n in range(KEEP_TEXT_CHARS // 8))     # past the text limit only
    await post(server, history(output))
    await post(server, history(output) + [{"role": "assistant", "content": "z" * KEEP_BODY_BYTES}, USER])
    small, large = server.records.of_kind("request")
    assert small.body is not None and large.body is None
    assert small.canonical["messages"][2]["text"] == large.canonical["messages"][2]["text"] != output
    assert small.elided == [f"messages[2].text ({len(output)} characters): start and end kept"]
