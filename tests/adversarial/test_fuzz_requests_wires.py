"""Malformed requests on the four wires: never a server error, never an unrecorded refusal.

Every request a client can send gets either an answer or the provider's own 4xx body, and the
server keeps a record of it (a refusal also an error record naming the problem) — the records
are what the harness judges an agent by, so a refusal that leaves none would hide the agent's
malformed history from the checks. ``STOPBENCH_FUZZ_REQUESTS`` sets how many seeded requests go
to one running server (3,000 by default, a couple of seconds).
"""
import json
import os

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from malformed_requests import FAMILY, VALID, WIRES, _dumps, _paths, _set, requests

from fake_server import FakeServer
from fake_server.canonical import restore_ids
from fake_server.errors import ApiError
from fake_server.scenario_loader import parse_scenario_text
from fake_server.strict import BodyProblem, load_body
from fake_server.wire import wire_for

FUZZ_REQUESTS = int(os.environ.get("STOPBENCH_FUZZ_REQUESTS", "3000"))
REPEAT_TEXT = 'name = "fuzz"\n[[responses]]\nrepeat = true\n[[responses.frames]]\ntext = "fine"\n'
SHELL_THEN_TEXT = 'name = "fuzz"\n[[responses]]\nrepeat = true\n[[responses.frames]]\nshell = "ls"\n'
GEMINI_ROUTE = {"model": "m", "method": "streamGenerateContent"}


def provider_shaped(family: str, answer: dict) -> str | None:
    """The message of a provider-shaped error body, or None when it is not one."""
    error = answer.get("error")
    if not isinstance(error, dict):
        return None
    keys = {"openai": {"message", "type", "param", "code"}, "anthropic": {"type", "message"},
            "google": {"code", "message", "status"}}[family]
    if not keys <= set(error) or (family == "anthropic" and answer.get("type") != "error"):
        return None
    return error["message"]


@pytest.mark.slow(reason="hundreds of seeded malformed requests on every wire")
async def test_seeded_malformed_requests_get_provider_4xx_and_a_record_each():
    sent = requests(seed=20261201, n=FUZZ_REQUESTS)
    statuses: list[int] = []
    server_errors: list[str] = []
    async with FakeServer(parse_scenario_text(REPEAT_TEXT), seed="f") as server, aiohttp.ClientSession() as http:
        for m in sent:
            async with http.post(server.url + m.path, data=m.data, headers=m.headers) as resp:
                data = await resp.read()
                statuses.append(resp.status)
            if resp.status >= 500:
                server_errors.append(f"{resp.status} for {m.label}: {data[:120]!r}")
            elif resp.status >= 400:
                message = provider_shaped(FAMILY[m.wire], json.loads(data))
                assert message, f"{m.label}: not a {FAMILY[m.wire]} error body: {data[:200]!r}"
        records = list(server.records)
    assert server_errors == [], f"{len(server_errors)} server errors, e.g. {server_errors[:5]}"
    recorded = [r for r in records if r.kind == "request"]
    assert [r.status for r in recorded] == statuses, "a request without its record, or recorded with another status"
    refused = {r.request for r in recorded if r.status >= 400}
    explained = {r.request for r in records if r.kind == "error"}
    assert refused == explained, f"refusals with no error record: {sorted(refused - explained)[:10]}"
    assert len(refused) > FUZZ_REQUESTS // 2     # the generator does make malformed requests


@pytest.mark.parametrize("label, wire, path, value, words", [
    ("role that is a list", "chat", ("messages", 1, "role"), ["user"], "messages[1].role"),
    ("tool call id that is an object", "anthropic", ("messages", 1, "content", 1, "id"), {},
     "messages.1.content.1.tool_use.id"),
    ("call id that is a list", "responses", ("input", 1, "call_id"), [], "input[1].call_id"),
    ("role that is an object", "gemini", ("contents", 0, "role"), {}, "valid role"),
    ("schema whose properties are a list", "chat", ("tools", 0, "function", "parameters", "properties"), [1],
     "Invalid schema for function 'bash': properties must be an object"),
    ("schema whose required is a string", "anthropic", ("tools", 0, "input_schema", "required"), "command",
     "tools.0.custom.input_schema: JSON schema is invalid: required must be an array of strings"),
    ("empty text block", "anthropic", ("messages", 2, "content", 1, "text"), "",
     "text content blocks must be non-empty"),
])
def test_a_malformed_field_is_refused_by_name(label, wire, path, value, words):
    body = _set(json.loads(json.dumps(VALID[wire][1])), path, value)
    with pytest.raises(ApiError) as info:
        wire_for(wire).parse(body, GEMINI_ROUTE if wire == "gemini" else {})
    assert info.value.status == 400 and words in info.value.message, (label, info.value.message)


@pytest.mark.parametrize("raw, words", [
    (b"[" * 5000 + b"]" * 5000, "nested more than 128 levels"),
    (b'{"model": ' + b"9" * 5000 + b"}", "4300 digits"),
    (b'{"model": NaN}', "NaN is not a JSON value"),
    (b'{"model": "\\ud800"}', "the string at model is not valid Unicode"),
    (b'{"a": \xff}', "not UTF-8"),
])
def test_json_no_provider_parses_is_a_body_problem(raw, words):
    with pytest.raises(BodyProblem, match=words):
        load_body(raw)


# Odd JSON values: any type, nested, with the extremes a strict parser must refuse or survive.
ODD_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["role", "type", "id", "name", "content", "text", "properties", "required", "x"]),
        inner, max_size=3),
    max_leaves=8)


@pytest.mark.slow(reason="hypothesis: hundreds of requests on every wire")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wire=st.sampled_from(WIRES), where=st.integers(min_value=0), value=ODD_JSON, shell=st.booleans())
def test_any_value_anywhere_is_parsed_or_refused_with_a_400(wire, where, value, shell):
    """A valid body with one node replaced by any JSON value: the wire parses it into a
    canonical request every later step can use (JSON, ids restored, a plan made), or refuses it
    with its provider's 400 — never another exception."""
    from fake_server.playout import prepare
    from fake_server.script import Ids, ScenarioCursor

    body = json.loads(json.dumps(VALID[wire][1]))
    paths = _paths(body)
    body = _set(body, paths[where % len(paths)], value)
    try:
        loaded = load_body(_dumps(body).encode())
    except BodyProblem:
        return
    if not isinstance(loaded, dict):    # refused by the server before any wire reads it
        return
    try:
        parsed = wire_for(wire).parse(loaded, GEMINI_ROUTE if wire == "gemini" else {})
    except ApiError as exc:
        assert exc.status == 400, exc.message
        return
    restore_ids(parsed.canonical, [])
    json.dumps(parsed.canonical).encode()
    cursor = ScenarioCursor(parse_scenario_text(SHELL_THEN_TEXT if shell else REPEAT_TEXT))
    try:
        prepare(parsed, cursor, Ids("h"), None)
    except ApiError as exc:     # e.g. the request offers no shell tool: the scenario cannot answer it
        assert exc.status in (400, 404, 500), exc.message


def test_the_generator_is_deterministic():
    assert requests(seed=7, n=50) == requests(seed=7, n=50)
    assert requests(seed=7, n=50) != requests(seed=8, n=50)
