"""``refagent search``: an FTS5 index rebuilt from the log on every load, never written.

The index holds user and assistant text, tool commands and tool outputs; a search lists
the matching events in the order they happened. Loading for a search tolerates a torn tail,
refuses damage naming file and line, and writes nothing: not to the log, not beside it.
"""

from __future__ import annotations

import os

import pytest

from reference_agent.cli import main
from reference_agent.log import LogDamage, LogWriter, load
from reference_agent.search import Indexer, SearchIndex

HEADER = {"format": "contract-log", "version": 1, "session_id": "s-find", "created": "2026-11-29T00:00:00.000000Z",
          "cwd": "/tmp", "model": "m", "adapter": "inproc", "parent": None}


def make_session(tmp_path):
    """Two turns with a bash call each; returns the log's path."""
    path = tmp_path / "s-find.jsonl"
    w = LogWriter.create(path, HEADER)
    w.append("turn_started", turn=1, input="the parser chokes on nested quotes", inbox=[])  # 1
    w.append("model_request", turn=1, step=1, request={"model": "m", "messages": [], "stream": True})  # 2
    w.append("assistant_message", turn=1, step=1, text="Let me run the parser tests.", finish_reason="tool_calls",
             interrupted=False, tool_calls=[{"id": "c1", "name": "bash", "arguments": '{"command": "pytest -q"}'}])  # 3
    w.append("tool_call", turn=1, step=1, call_id="c1", name="bash",
             arguments={"command": "pytest -q tests/test_parser.py"})  # 4
    w.append("tool_started", turn=1, call_id="c1", pid=1, pgid=1)  # 5
    w.append("tool_result", turn=1, call_id="c1", output="FAILED test_nested_quotes - ValueError\n1 failed",
             exit_code=1, aborted=False)  # 6
    w.append("step_settled", turn=1, step=1)  # 7
    w.append("turn_ended", turn=1, reason="completed")  # 8
    w.append("inbox_queued", item_id="q-1", text="also check the tokenizer")  # 9
    w.append("turn_started", turn=2, input="and the lexer", inbox=["q-1"])  # 10
    w.append("assistant_message", turn=2, step=1, text="The tokenizer splits on quotes too.", finish_reason="stop",
             interrupted=True, tool_calls=[])  # 11
    w.append("tool_call", turn=2, step=1, call_id="c2", name="read_file", arguments={"path": "src/lexer.py"})  # 12
    w.append("turn_ended", turn=2, reason="aborted", source="user")  # 13
    w.close()
    return path


def found(index, query, **kw):
    hits, _ = index.search(query, **kw)
    return [(h.seq, h.type) for h in hits]


def test_search_finds_user_assistant_command_and_output_text(tmp_path):
    index = SearchIndex.of_log(make_session(tmp_path))
    try:
        assert found(index, "parser") == [(1, "turn_started"), (3, "assistant_message"), (4, "tool_call")]
        assert found(index, "nested quotes") == [(1, "turn_started"), (6, "tool_result")]  # every word must occur
        assert found(index, "tokenizer") == [(9, "inbox_queued"), (11, "assistant_message")]
        assert found(index, "tests/test_parser.py") == [(4, "tool_call")]  # punctuation is no query syntax
        assert found(index, "lexer.py") == [(12, "tool_call")]  # another tool's arguments
        assert found(index, "model_request") == [] and found(index, "bash") == []  # only the texts, not the envelope
        assert found(index, "tokenizer OR lexer", raw=True) == [(9, "inbox_queued"), (10, "turn_started"),
                                                                 (11, "assistant_message"), (12, "tool_call")]
        (hit,), total = index.search("ValueError")
        assert total == 1 and hit.snippet == "FAILED test_nested_quotes - [ValueError]\n1 failed"
        with pytest.raises(ValueError, match="bad search query"):
            index.search('"unbalanced', raw=True)
    finally:
        index.close()


def test_a_limit_keeps_the_latest_matches_in_order_and_counts_them_all(tmp_path):
    index = SearchIndex.of_log(make_session(tmp_path))
    try:
        hits, total = index.search("the", limit=2)
        assert total == 5 and [h.seq for h in hits] == [10, 11]
    finally:
        index.close()


def test_rows_collected_while_loading_are_those_of_the_loaded_events(tmp_path):
    path = make_session(tmp_path)
    from_load = load(path, replay=Indexer).replayed
    from_events = Indexer.of_events(load(path).events)
    assert from_load.rows == from_events.rows and from_load.types == from_events.types
    assert [seq for seq, _ in from_load.rows] == [1, 3, 4, 6, 9, 10, 11, 12]


def test_search_survives_a_torn_tail_and_writes_nothing(tmp_path, capsys):
    path = make_session(tmp_path)
    path.write_bytes(path.read_bytes() + b'{"seq": 14, "type": "turn_started", "input": "parser ag')
    before, listing, mtime = path.read_bytes(), sorted(os.listdir(tmp_path)), path.stat().st_mtime_ns
    assert main(["search", str(path), "parser"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in out] == [["1", "turn_started"], ["3", "assistant_message"],
                                                 ["4", "tool_call"]]
    assert "[parser]" in out[0]
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert sorted(os.listdir(tmp_path)) == listing, "the index must not be written beside the log"


def test_search_refuses_damage_naming_file_and_line_and_leaves_the_log_untouched(tmp_path, capsys):
    path = make_session(tmp_path)
    lines = path.read_bytes().split(b"\n")
    lines[5] = lines[5][:20]  # event 5 cut short, mid-file
    path.write_bytes(b"\n".join(lines))
    before = path.read_bytes()
    with pytest.raises(LogDamage) as err:
        SearchIndex.of_log(path)
    assert err.value.line == 6 and str(path) in str(err.value)
    assert main(["search", str(path), "parser"]) == 2
    assert f"{path}:6" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_search_command_by_session_id_exit_codes_and_the_count_of_what_was_cut(tmp_path, capsys):
    make_session(tmp_path)
    assert main(["search", "s-find", "parser", "--sessions-dir", str(tmp_path), "--limit", "1"]) == 0
    out, err = capsys.readouterr()
    assert out.split()[:2] == ["4", "tool_call"] and "3 matching events, the latest 1 shown" in err
    assert main(["search", "s-find", "nowhere", "--sessions-dir", str(tmp_path)]) == 1
    assert main(["search", "s-find", "a AND (", "--raw", "--sessions-dir", str(tmp_path)]) == 2
    assert main(["search", "s-nope", "x", "--sessions-dir", str(tmp_path)]) == 2
    assert "no session log" in capsys.readouterr().err
