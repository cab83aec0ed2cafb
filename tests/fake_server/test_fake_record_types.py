"""Typed records: the JSON form is exactly the dict each kind has always had, and it parses
back to an equal record; what is not a record of a known kind is refused, naming the problem."""
import json

import pytest

from fake_server.record_store import Records
from fake_server.records import (
    KINDS,
    RECORDS_VERSION,
    Chunk,
    Disconnect,
    Error,
    Late,
    Record,
    RecordError,
    Request,
    Response,
    Side,
    StreamEnd,
    Window,
    WindowDone,
    WindowProc,
    read_jsonl,
)

CANONICAL = {"model": "m", "stream": True, "tools": ["bash"], "shell_tool": "bash",
             "messages": [{"role": "user", "text": "hi", "tool_calls": [], "tool_call_id": None}]}
STAMP = {"mono_ns": 5, "source": "server", "index": 3}
EXAMPLES = [
    (Request(request=1, api="chat", path="/v1/chat/completions", headers={"authorization": "[redacted]"},
             body={"model": "m"}, canonical=CANONICAL, status=200, **STAMP),
     {"kind": "request", "request": 1, "api": "chat", "path": "/v1/chat/completions",
      "headers": {"authorization": "[redacted]"}, "status": 200, "body": {"model": "m"}, "canonical": CANONICAL,
      **STAMP}),
    (Request(request=2, api="chat", path="/v1/chat/completions", headers={}, body_text="{", status=400,
             error="bad", **STAMP),
     {"kind": "request", "request": 2, "api": "chat", "path": "/v1/chat/completions", "headers": {}, "status": 400,
      "body_text": "{", "error": "bad", **STAMP}),
    (Response(request=1, response_index=0, text="t", tool_calls=[{"id": "c1", "name": "bash", "arguments": "{}"}],
              finish_reason="tool_calls", ending="stall", **STAMP),
     {"kind": "response", "request": 1, "response_index": 0, "text": "t",
      "tool_calls": [{"id": "c1", "name": "bash", "arguments": "{}"}], "finish_reason": "tool_calls",
      "ending": "stall", **STAMP}),
    (Chunk(request=1, chunk=2, text="", tool_call_id="c1", **STAMP),
     {"kind": "chunk", "request": 1, "chunk": 2, "text": "", "tool_call_id": "c1", **STAMP}),
    (StreamEnd(request=1, complete=False, **STAMP), {"kind": "stream_end", "request": 1, "complete": False, **STAMP}),
    (Disconnect(request=1, after_chunk=4, **STAMP), {"kind": "disconnect", "request": 1, "after_chunk": 4, **STAMP}),
    (Late(request=1, chunk=3, late_ns=250_000_000, **STAMP),
     {"kind": "late", "request": 1, "chunk": 3, "late_ns": 250_000_000, **STAMP}),
    (Window(window="w1", pids=(WindowProc(10, 9, 10, 8, 1700000000.25, "root"),), marker="/tmp/m",
            **{**STAMP, "source": "window"}),
     {"kind": "window", "window": "w1", "pids": [{"pid": 10, "ppid": 9, "pgid": 10, "sid": 8,
                                                  "create_time": 1700000000.25, "role": "root"}],
      "marker": "/tmp/m", **STAMP, "source": "window"}),
    (WindowDone(window="w1", finished=False, signal="SIGTERM", **STAMP),
     {"kind": "window_done", "window": "w1", "finished": False, "signal": "SIGTERM", **STAMP}),
    (Error(problem="p", request=3, **STAMP), {"kind": "error", "problem": "p", "request": 3, **STAMP}),
    (Side(api="anthropic", path="/v1/messages", stream=False, reason="r", messages=[{"role": "user", "text": "x"}],
          tools=[], text="stopbench side answer", **STAMP),
     {"kind": "side", "api": "anthropic", "path": "/v1/messages", "stream": False, "reason": "r",
      "messages": [{"role": "user", "text": "x"}], "tools": [], "text": "stopbench side answer", **STAMP}),
]


def test_every_kind_has_an_example():
    assert {type(record) for record, _ in EXAMPLES} == set(KINDS.values())


@pytest.mark.parametrize("record, shape", EXAMPLES, ids=[type(r).__name__ for r, _ in EXAMPLES])
def test_to_json_is_the_dict_shape_and_from_json_gives_it_back(record, shape):
    assert record.to_json() == shape
    assert json.loads(json.dumps(record.to_json())) == shape
    assert Record.from_json(shape) == record
    assert Record.from_json(json.loads(json.dumps(shape))) == record


def test_integral_create_time_parses_as_a_float():
    proc = Record.from_json({"kind": "window", "window": "w", "marker": "m", "mono_ns": 1,
                             "pids": [{"pid": 1, "ppid": 0, "pgid": 1, "sid": 1, "create_time": 17, "role": "root"}]})
    assert isinstance(proc, Window) and proc.pids[0].create_time == 17.0
    assert isinstance(proc.pids[0].create_time, float)


@pytest.mark.parametrize("data, problem", [
    ({"kind": "note"}, "unknown record kind 'note' (known: chunk, disconnect, error, late, request, response, "
                       "side, "
                       "stream_end, window, window_done)"),
    ({"window": "w1"}, "unknown record kind None"),
    ([1], "a record must be a JSON object, not an array"),
    ({"kind": "chunk", "request": 1, "text": ""}, "(chunk record): missing field(s) chunk"),
    ({"kind": "stream_end", "request": "1", "complete": True}, "field 'request': must be an integer, not a string"),
    ({"kind": "stream_end", "request": True, "complete": True}, "field 'request': must be an integer, not a boolean"),
    ({"kind": "window", "window": "w", "marker": "m", "pids": [{"pid": 1}]},
     "(window record): field 'pids'[0]: missing field(s) ppid, pgid, sid, create_time, role"),
    ({"kind": "side", "api": "chat", "path": "/", "stream": True, "reason": "r", "messages": {}, "tools": [],
      "text": ""}, "field 'messages': must be an array, not an object"),
])
def test_from_json_refuses_what_is_not_a_record(data, problem):
    with pytest.raises(RecordError) as info:
        Record.from_json(data, "beacon #4")
    assert str(info.value).startswith("beacon #4") and problem in str(info.value)


def test_a_request_without_a_number_is_numbered_by_the_store():
    records = Records()
    first = records.append(Record.from_json({"kind": "request", "api": "chat", "path": "/p", "headers": {},
                                             "status": 200, "source": "inproc"}))
    assert isinstance(first, Request) and (first.request, first.index, first.source) == (1, 1, "inproc")
    assert records.next_request_number() == 2
    with pytest.raises(ValueError, match="unknown record kind 'requests'"):
        records.of_kind("requests")


def test_read_jsonl_refuses_a_file_without_the_version_line_naming_file_and_line(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(EXAMPLES[4][1]) + "\n")
    with pytest.raises(RecordError, match=rf"old.jsonl line 1: expected the header {{\"records_version\": "
                                          rf"{RECORDS_VERSION}}}"):
        read_jsonl(path)
    path.write_text(json.dumps({"records_version": RECORDS_VERSION}) + "\n" + json.dumps({"kind": "x"}) + "\n")
    with pytest.raises(RecordError, match=r"old.jsonl line 2: unknown record kind 'x'"):
        read_jsonl(path)
