"""Records, waiters, the HTTP long-poll and beacon, in-process reporting, determinism."""
import asyncio
import json
import re
import time

import aiohttp
import openai
import pytest
from fake_testkit import BASH_TOOL, scenario

from fake_server import FakeServer
from fake_server.play import Playback
from fake_server.records import RECORDS_VERSION, Chunk, WindowDone, read_jsonl

USER = [{"role": "user", "content": "hi"}]
PACED = '''
[[responses]]
[[responses.frames]]
text = "one two three four"
chunk = 4
[[responses.frames]]
pause = 0.01
[[responses.frames]]
shell = "echo done"
'''


DONE_W1 = {"kind": "window_done", "window": "w1", "finished": True}


async def test_long_poll_returns_new_records_and_beacon_appends(server):
    async with aiohttp.ClientSession() as http:
        poll = asyncio.create_task(http.get(server.url + "/_stopbench/records?after=0&wait=30"))
        async with http.post(server.beacon_url + "/_stopbench/beacon", json=DONE_W1) as resp:
            stored = await resp.json()
        assert stored["index"] == 1 and stored["kind"] == "window_done" and isinstance(stored["mono_ns"], int)
        assert stored["source"] == "beacon"
        async with await poll as resp:
            answer = await resp.json()
        assert answer["records_version"] == RECORDS_VERSION
        assert [r["window"] for r in answer["records"]] == ["w1"]
        async with http.get(server.url + "/_stopbench/records?after=1&wait=0") as resp:
            assert await resp.json() == {"records_version": RECORDS_VERSION, "records": []}
        async with http.get(server.url + "/_stopbench/records?after=1&wait=0.05") as resp:
            assert (await resp.json())["records"] == []     # the poll's own bound ends an empty wait
        async with http.get(server.url + "/_stopbench/records?after=x") as resp:
            assert resp.status == 400
        async with http.get(server.base_url + "/models") as resp:
            assert (await resp.json())["data"][0]["id"] == "stopbench-fake"
    assert isinstance(server.records[0], WindowDone) and server.records[0].finished is True


@pytest.mark.parametrize("body, problem", [
    (b"[1]", "the body must be a JSON object"),
    (b"{nope", "the body must be a JSON object"),
    (json.dumps({"kind": "note", "x": 1}).encode(), "unknown record kind 'note'"),
    (json.dumps({"kind": "window_done", "window": "w1"}).encode(), "missing field(s) finished"),
    (json.dumps({**DONE_W1, "finished": "yes"}).encode(), "field 'finished': must be a boolean, not a string"),
    (json.dumps({**DONE_W1, "extra": 1}).encode(), "unknown field(s) extra"),
])
async def test_beacon_refuses_a_malformed_record_naming_the_problem(server, body, problem):
    async with aiohttp.ClientSession() as http:
        async with http.post(server.url + "/_stopbench/beacon", data=body) as resp:
            assert resp.status == 400
            assert problem in (await resp.json())["error"]
    [error] = server.records
    assert error.kind == "error" and problem in error.problem
    assert error.problem.startswith("beacon POST /_stopbench/beacon")


async def test_a_wait_has_no_deadline_of_its_own_and_a_callers_deadline_cancels_it_cleanly(server):
    server.records.append(WindowDone(window="w0", finished=True))
    waiting = asyncio.create_task(server.records.wait_chunk(request=7, chunk=1))
    with pytest.raises(TimeoutError) as info:
        async with asyncio.timeout(0.05):
            await server.records.wait_chunk(request=7, chunk=1)
    note = "".join(getattr(info.value.__cause__, "__notes__", []))
    assert "waiting for chunk 1 of request 7; records so far:\n  #1 window_done window='w0'" in note
    assert len(server.records._waiters) == 1            # the cancelled wait left no waiter behind
    assert not waiting.done()                            # another wait for the same record goes on
    server.records.append(Chunk(request=7, chunk=1, text="x"))
    assert (await waiting).text == "x"
    assert server.records._waiters == []


async def test_inproc_playback_reports_each_chunk_before_yielding_it(server):
    pb = Playback(scenario(PACED), report_to=server.beacon_url, seed="p")
    seen_by_agent = []
    async with pb:
        request = {"model": "m", "messages": USER, "tools": [BASH_TOOL], "stream": True}
        async for _chunk in pb.chat_chunks(request):
            records = server.records.of_kind("chunk")
            seen_by_agent.append(len(records))
    # 5 text chunks of 4 characters, 2 of tool arguments, then the finish chunk (not numbered)
    assert seen_by_agent == [1, 2, 3, 4, 5, 6, 7, 7]
    kinds = [r.kind for r in server.records if r.kind != "late"]  # a busy machine's late pause is told too
    assert kinds == ["request", "response"] + ["chunk"] * 7 + ["stream_end"]
    assert {r.source for r in server.records} == {"inproc"}
    assert server.records.of_kind("request")[0].request == 1
    assert server.records.of_kind("request")[0].canonical["shell_tool"] == "bash"
    command = json.loads(server.records.of_kind("response")[0].tool_calls[0]["arguments"])["command"]
    assert command == "echo done"


async def test_inproc_cancel_is_reported_as_disconnect(server):
    pb = Playback(scenario('[[responses]]\n[[responses.frames]]\ntext = "x"\n[[responses.frames]]\nstall = true\n'),
                  report_to=server.beacon_url)

    async def consume():
        async for _ in pb.chat_chunks({"model": "m", "messages": USER}):
            pass

    async with pb:
        task = asyncio.create_task(consume())
        await server.records.wait_chunk(request=1, chunk=1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        gone = await server.records.wait_disconnect(request=1)
    assert gone.after_chunk == 1 and gone.source == "inproc"


async def test_window_frame_bakes_in_the_beacon_url(server):
    server.load(scenario('[[responses]]\n[[responses.frames]]\nshell = { window = { id = "w9", hold_s = 5 } }\n'))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        answer = await client.chat.completions.create(model="m", messages=USER, tools=[BASH_TOOL])
    command = json.loads(answer.choices[0].message.tool_calls[0].function.arguments)["command"]
    assert re.search(r"-m fake_server\.window --id w9 .*--hold 5 --beacon " + re.escape(server.url), command)


async def test_two_runs_send_identical_streams_apart_from_timestamps(tmp_path, openapi):
    streams = []
    for run in range(2):
        async with FakeServer(scenario(PACED), seed="same", keep_wire=True) as srv:
            async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="k", max_retries=0) as client:
                stream = await client.chat.completions.create(model="m", messages=USER, tools=[BASH_TOOL],
                                                              stream=True)
                async for _ in stream:
                    pass
            if openapi is not None:
                openapi.check_exchange(1, srv.wire[1])
            raw = b"".join(srv.wire[1]["payloads"]).decode()
            streams.append(re.sub(r'"created":\d+', '"created":0', raw))
            srv.records.to_jsonl(tmp_path / f"run{run}.jsonl")
            assert read_jsonl(tmp_path / f"run{run}.jsonl") == list(srv.records)
    assert streams[0] == streams[1] and '"content":"one "' in streams[0]
    lines = [json.loads(line) for line in (tmp_path / "run0.jsonl").read_text().splitlines()]
    assert lines[0] == {"records_version": RECORDS_VERSION}
    assert [r["kind"] for r in lines[1:4]] == ["request", "response", "chunk"]
    assert all(isinstance(r["mono_ns"], int) for r in lines[1:])


async def test_model_lookup_and_anthropic_token_count(server):
    async with aiohttp.ClientSession() as http:
        async with http.get(server.base_url + "/models/any-model") as resp:
            assert (await resp.json())["id"] == "any-model"
        async with http.post(server.base_url + "/messages/count_tokens?beta=true",
                             json={"model": "c", "messages": [{"role": "user", "content": "x" * 40}]}) as resp:
            assert (await resp.json()) == {"input_tokens": 10}
        async with http.post(server.base_url + "/messages/count_tokens", data=b"{") as resp:
            assert resp.status == 400 and (await resp.json())["type"] == "error"
    assert server.records.of_kind("request") == []


async def test_load_restarts_the_scenario_and_numbering_goes_on(server):
    once = scenario('[[responses]]\n[[responses.frames]]\ntext = "first"\n')
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        for expected in ("first", "first"):
            server.load(once)
            answer = await client.chat.completions.create(model="m", messages=USER)
            assert answer.choices[0].message.content == expected
    assert [r.request for r in server.records.of_kind("request")] == [1, 2]
    assert [r.response_index for r in server.records.of_kind("response")] == [0, 0]


async def test_a_held_server_stops_scripted_time_until_released():
    """While held (its task run paused for another's timing), a paced stream waits at its
    next scripted pause: no chunk is flushed until the release."""
    paced = '[[responses]]\n[[responses.frames]]\ntext = "abcdefgh"\nchunk = 2\ninterval_s = 0.001\n'
    async with FakeServer(scenario(paced)) as srv:
        srv.hold()
        async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="k", max_retries=0) as client:
            stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
            reading = asyncio.ensure_future(stream.__anext__())
            async with asyncio.timeout(30):  # until the stream waits at a scripted pause
                while not srv._flowing._waiters:  # type: ignore[attr-defined]
                    await asyncio.sleep(0.001)
            held = [r.chunk for r in srv.records if isinstance(r, Chunk)]
            await asyncio.sleep(0.05)  # scripted time would flush four chunks in this while; held, none
            assert [r.chunk for r in srv.records if isinstance(r, Chunk)] == held
            released_ns = time.monotonic_ns()
            srv.release()
            after = await asyncio.wait_for(srv.records.wait_chunk(request=1, chunk=len(held) + 1), 30)
            assert after.mono_ns > released_ns
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            await stream.close()
