"""Property: whatever the text, arguments and chunk sizes, each wire encoder's deltas
reassemble exactly the scripted text and tool arguments, and its closing events agree."""
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from fake_server import wire_anthropic, wire_chat, wire_gemini, wire_responses
from fake_server.scenario import Response, Text, ToolCall
from fake_server.script import Delta, Ids, Parsed, build_plan

texts = st.text(min_size=1, max_size=60)
sizes = st.integers(min_value=1, max_value=20)
argument_objects = st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=20), min_size=1, max_size=3)


def plan_for(api, text, text_chunk, args, args_chunk):
    frames = (Text(text, chunk=text_chunk), ToolCall("f", json.dumps(args), chunk=args_chunk),
              Text(text, chunk=text_chunk))
    parsed = Parsed(api, {"messages": [{"role": "user", "text": "hi"}]}, [], True, model="m")
    return build_plan(0, Response(frames), parsed, None, Ids("h"), None), parsed


def played(encoder, plan):
    events = list(encoder.start())
    for step in plan.steps:
        if isinstance(step, Delta):
            events += encoder.delta(step)
    return events + encoder.finish()


@settings(max_examples=60, deadline=None)
@given(texts, sizes, argument_objects, sizes)
def test_chat_chunks_reassemble(text, text_chunk, args, args_chunk):
    plan, parsed = plan_for("chat", text, text_chunk, args, args_chunk)
    events = played(wire_chat.Encoder(plan, parsed, Ids("h")), plan)
    chunks = [data for _, data in events if isinstance(data, dict)]
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    pieces = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls") or []]
    assert content == text + text
    assert json.loads("".join(p["function"]["arguments"] for p in pieces)) == args
    assert events[-1] == (None, "[DONE]")


@settings(max_examples=60, deadline=None)
@given(texts, sizes, argument_objects, sizes)
def test_responses_events_reassemble(text, text_chunk, args, args_chunk):
    plan, parsed = plan_for("responses", text, text_chunk, args, args_chunk)
    events = [data for _, data in played(wire_responses.Encoder(plan, parsed, Ids("h")), plan)]
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    arguments = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert "".join(deltas) == text + text and json.loads(arguments) == args
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    final = events[-1]["response"]["output"]
    assert [item["type"] for item in final] == ["message", "function_call", "message"]
    assert [final[0]["content"][0]["text"], final[2]["content"][0]["text"]] == [text, text]
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    done = [e["output_index"] for e in events if e["type"] == "response.output_item.done"]
    assert added == done == [0, 1, 2]


@settings(max_examples=60, deadline=None)
@given(texts, sizes, argument_objects, sizes)
def test_anthropic_events_reassemble(text, text_chunk, args, args_chunk):
    plan, parsed = plan_for("anthropic", text, text_chunk, args, args_chunk)
    events = [data for _, data in played(wire_anthropic.Encoder(plan, parsed, Ids("h")), plan)]
    by_block: dict[int, str] = {}
    for e in events:
        if e["type"] == "content_block_delta":
            delta = e["delta"]
            by_block[e["index"]] = by_block.get(e["index"], "") + delta.get("text", delta.get("partial_json", ""))
    assert by_block[0] == by_block[2] == text and json.loads(by_block[1]) == args
    starts = [e["index"] for e in events if e["type"] == "content_block_start"]
    stops = [e["index"] for e in events if e["type"] == "content_block_stop"]
    assert starts == stops == [0, 1, 2]
    assert [e["type"] for e in events[-2:]] == ["message_delta", "message_stop"]
    assert events[-2]["delta"]["stop_reason"] == "tool_use"


@settings(max_examples=60, deadline=None)
@given(texts, sizes, argument_objects, sizes)
def test_gemini_frames_reassemble(text, text_chunk, args, args_chunk):
    plan, parsed = plan_for("gemini", text, text_chunk, args, args_chunk)
    encoder = wire_gemini.Encoder(plan, parsed, Ids("h"))
    frames = [data for _, data in played(encoder, plan)]
    parts = [p for f in frames for p in f["candidates"][0]["content"]["parts"]]
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    assert "".join(p.get("text", "") for p in parts) == text + text
    assert [(c["name"], c["args"]) for c in calls] == [("f", args)] and calls[0]["id"] == plan.tool_calls[0]["id"]
    assert len(frames) == sum(isinstance(s, Delta) for s in plan.steps) + 1    # a frame per chunk, then the end
    assert [f["candidates"][0].get("finishReason") for f in frames][-2:] == [None, "STOP"]
    body = encoder.body()["candidates"][0]["content"]["parts"]
    assert [list(p)[0] for p in body] == ["text", "functionCall", "text"] and body[0]["text"] == body[2]["text"] == text


def test_a_request_that_forbids_parallel_tool_calls_gets_one_call_per_response():
    """`parallel_tool_calls: false` (chat and responses wires) is honoured as the provider does:
    a response scripted with two calls sends only the first; without it, both."""
    frames = (ToolCall("first", "{}"), ToolCall("second", "{}"))
    bodies = {wire_chat: {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
              wire_responses: {"model": "m", "input": "hi"}}
    for wire, body in bodies.items():
        for parallel, names in ((False, ["first"]), (True, ["first", "second"]), (None, ["first", "second"])):
            request = body if parallel is None else {**body, "parallel_tool_calls": parallel}
            plan = build_plan(0, Response(frames), wire.parse(request), None, Ids("h"), None)
            assert [c["name"] for c in plan.tool_calls] == names, (wire.NAME, parallel)
