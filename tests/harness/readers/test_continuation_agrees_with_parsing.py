"""A reader's continuation rule and its parser agree: every way of continuing after a torn
tail that the rule accepts gives a store the reader parses, and a continuation that writes
onto the torn line is never accepted silently. For every reader with a continuation rule
about torn tails (the JSONL stores), on stores recorded from the real agents."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.model import LogCapture, Snapshot
from harness.readers import READERS, LogDamaged
from harness.readers.jsonl import JsonlStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents"
# One recorded store per reader (a session that was killed and resumed, where there is one).
STORES = {
    "codex-rollout": "codex-0.171.0/kill-tool/resumed",
    "claude-code": "claude-code-2.1.197/kill-tool/resumed",
    "qwen-code": "qwen-code-0.15.10/kill-tool/resumed",
    "gemini-cli": "gemini-cli-0.61.0/kill-tool/resumed",
    "pi": "pi-0.73.1/kill-tool/resumed",
    "copilot": "copilot-1.0.102/kill-tool/resumed",
    "gptme": "gptme-0.35.1/kill-tool/resumed",
    "kimi-cli": "kimi-cli-1.51.0/interrupt-restart",
}


def test_every_reader_with_a_torn_tail_rule_is_covered():
    assert {name for name, r in READERS.items() if isinstance(r, JsonlStore)} == set(STORES)


def recorded_lines(reader: str) -> list[bytes]:
    (store,) = list((FIXTURES / STORES[reader]).rglob("*.jsonl"))
    data = store.read_bytes()
    assert data.endswith(b"\n")
    return [line + b"\n" for line in data[:-1].split(b"\n")]


def snapshot(reader: str, data: bytes) -> Snapshot:
    return Snapshot(reader=reader, path="store.jsonl", data=data, mono_ns=1)


@st.composite
def crashes(draw: st.DrawFn, reader: str) -> tuple[bytes, bytes, bytes]:
    """A store cut mid-record by a crash — (its complete records, the torn bytes) — and the
    records a restart then writes."""
    lines = recorded_lines(reader)
    k = draw(st.integers(min_value=1, max_value=len(lines) - 1), label="complete records")
    record = lines[k].rstrip(b"\n")
    torn = record[:draw(st.integers(min_value=1, max_value=len(record) - 1), label="torn bytes")]
    return b"".join(lines[:k]), torn, b"".join(lines[k:])


@pytest.mark.parametrize("reader_name", sorted(STORES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_what_the_continuation_rule_accepts_the_reader_parses(reader_name, data):
    reader = READERS[reader_name]
    complete, torn, later = data.draw(crashes(reader_name))
    before_snap = snapshot(reader_name, complete + torn)
    before_log = reader.parse(before_snap)
    assert before_log.torn_tail == torn
    before = LogCapture(moment="before restart 1", snapshot=before_snap, log=before_log)
    accepted = {"cut the torn bytes": complete + later,
                "left the torn bytes and started a new line": complete + torn + b"\n" + later}
    for how, after in accepted.items():
        try:
            log = reader.parse(snapshot(reader_name, after))
        except LogDamaged as exc:
            pytest.fail(f"{reader_name}: a restart that {how} wrote a store its reader refuses: {exc}")
        assert reader.continuation_problems(before, log) == [], how
    onto = complete + torn + later
    try:
        log = reader.parse(snapshot(reader_name, onto))
    except LogDamaged:
        return  # refused: never accepted silently
    if log.torn_tail is None and not log.cut_records:
        return  # the torn bytes and what followed happen to make whole records
    assert reader.continuation_problems(before, log), "appending onto the torn line was accepted"


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                           | st.text(), lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(record=st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=4), ascii_only=st.booleans(),
       cut=st.floats(min_value=0, max_value=1, exclude_max=True))
def test_a_cut_record_is_any_proper_prefix_of_an_object_and_nothing_else(record, ascii_only, cut):
    import json

    from harness.readers.jsonl import is_cut_record

    raw = json.dumps(record, ensure_ascii=ascii_only).encode()
    assert not is_cut_record(raw)
    prefix = raw[:max(1, int(len(raw) * cut))]
    assert is_cut_record(prefix) == (prefix != raw)
    assert not is_cut_record(prefix + b"\x00")  # bytes no JSON text holds are damage
