"""Property: each wire encoder's ``delta_sse`` (a template with only the text escaped in) and
``burst_sse`` (a run of them at once) give byte for byte what ``sse`` makes of their ``delta``
events, and leave the encoder in the same state (the same closing events, the same non-streamed
body) — whatever the text, its chunking, reasoning and calls between texts, and a model name
that contains the template's marker."""
import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from fake_server import wire_anthropic, wire_chat, wire_gemini, wire_responses
from fake_server.record_store import Records
from fake_server.records import Chunk
from fake_server.scenario import Reasoning, Response, Text, ToolCall
from fake_server.script import Delta, Ids, Parsed, build_plan
from fake_server.sse import NUMBER, TEXT, Template, sse_all

WIRES = (wire_chat, wire_responses, wire_anthropic, wire_gemini)
texts = st.text(min_size=1, max_size=40)  # any code point: quotes, backslashes, controls, surrogates' neighbours
sizes = st.integers(min_value=1, max_value=9)
models = st.sampled_from(["m", f"odd{TEXT}model", f"n{NUMBER}"])


def plan_for(api, model, text, chunk, usage):
    frames = (Reasoning(text[::-1], chunk=chunk), Text(text, chunk=chunk),
              ToolCall("f", json.dumps({"a": text}), chunk=chunk), ToolCall("g", json.dumps({"b": 1}), chunk=chunk),
              Text(text + "!", chunk=chunk))
    parsed = Parsed(api, {"messages": [{"role": "user", "text": "hi"}]}, [], True, include_usage=usage, model=model)
    return build_plan(0, Response(frames), parsed, None, Ids("h"), None), parsed


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(WIRES), models, texts, sizes, st.booleans())
def test_templated_deltas_are_the_encoded_events(wire, model, text, chunk, usage):
    plan, parsed = plan_for(wire.NAME, model, text, chunk, usage)
    whole, templated = wire.Encoder(plan, parsed, Ids("e")), wire.Encoder(plan, parsed, Ids("e"))
    assert sse_all(whole.start()) == sse_all(templated.start())
    for step in plan.steps:
        if isinstance(step, Delta):
            assert templated.delta_sse(step) == sse_all(whole.delta(step)), step
    assert sse_all(templated.finish()) == sse_all(whole.finish())
    assert templated.body() == whole.body()


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(WIRES), models, texts, sizes, st.booleans(), st.integers(min_value=1, max_value=70))
def test_a_burst_of_deltas_is_their_encoded_events_joined(wire, model, text, chunk, usage, burst):
    plan, parsed = plan_for(wire.NAME, model, text, chunk, usage)
    whole, bursts = wire.Encoder(plan, parsed, Ids("e")), wire.Encoder(plan, parsed, Ids("e"))
    assert sse_all(whole.start()) == sse_all(bursts.start())
    deltas = [step for step in plan.steps if isinstance(step, Delta)]
    for start in range(0, len(deltas), burst):
        part = deltas[start:start + burst]
        assert bursts.burst_sse(part) == b"".join(sse_all(whole.delta(d)) for d in part), part
    assert sse_all(bursts.finish()) == sse_all(whole.finish())
    assert bursts.body() == whole.body()


def test_a_marker_found_twice_makes_no_template():
    assert Template.of([(None, {"a": TEXT, "b": TEXT})]) is None
    assert Template.of([(None, {"a": TEXT})], numbered=True) is None     # no number to put in
    template = Template.of([("e", {"t": TEXT, "n": NUMBER})], numbered=True)
    assert template is not None
    odd = 'a"\\\n\u2028\x00é'
    expected = json.dumps({"t": odd, "n": 7}, ensure_ascii=False, separators=(",", ":"))
    assert template.fill_numbered(odd, 7) == f"event: e\ndata: {expected}\n\n".encode()


def test_chunks_appended_as_rows_are_the_records_append_would_store():
    fast, slow = Records(), Records()
    for store in (fast, slow):
        store.append(Chunk(request=9, chunk=0, text="before"))
    fast.append_chunks(1, 1, [("ab", None, None), ("", "call_1", None)])
    fast.append_chunks(1, 3, [("", None, "hm")])
    slow.append(Chunk(request=1, chunk=1, text="ab"))
    slow.append(Chunk(request=1, chunk=2, text="", tool_call_id="call_1"))
    slow.append(Chunk(request=1, chunk=3, text="", reasoning="hm"))
    assert len(fast) == len(slow) == 4
    for a, b in zip(fast, slow, strict=True):
        assert type(a) is type(b) is Chunk
        assert {**a.to_json(), "mono_ns": 0} == {**b.to_json(), "mono_ns": 0}
        assert a == Chunk(**{k: v for k, v in a.to_json().items() if k != "kind"})   # every field set
    assert [r.index for r in fast.of_kind("chunk")] == [1, 2, 3, 4]
    assert fast[-1].mono_ns >= fast[1].mono_ns


async def test_a_waiter_is_woken_by_a_chunk_appended_in_a_burst_of_rows():
    store = Records()
    task = asyncio.ensure_future(store.wait_chunk(1, 2))
    await asyncio.sleep(0)          # one loop pass: the waiter is registered
    store.append_chunks(1, 1, [("a", None, None), ("b", None, None)])
    async with asyncio.timeout(5):
        record = await task
    assert (record.index, record.text) == (2, "b")
    assert store.to_json()["records"][1] == record.to_json()
