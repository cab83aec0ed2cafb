"""The native readers on stores recorded from real agents (tests/fixtures/agents/<agent>-<version>/).

Each fixture is what the agent's store held at one moment of a recording (``stopbench agents
record``): ``final`` after a completed turn, ``killed`` / ``stopped`` right after a SIGKILL /
SIGINT, ``resumed`` after a resume with a follow-up. opencode's database is kept as its SQL
dump and rebuilt here.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from harness.model import Capability
from harness.readers import READERS, LogDamaged, get_reader
from harness.readers.base import CannotDamage

from .store_testkit import restore_dump

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents"
AGENTS = {"codex-rollout": "codex-0.171.0", "claude-code": "claude-code-2.1.197", "qwen-code": "qwen-code-0.15.10",
          "opencode": "opencode-1.18.33", "gemini-cli": "gemini-cli-0.61.0"}
JSONL_READERS = ("codex-rollout", "claude-code", "qwen-code", "gemini-cli")
ABBR = {"turn_started": "T", "assistant_message": "A", "tool_call": "C", "tool_started": "S", "tool_result": "R",
        "step_settled": "P", "stop_requested": "Q", "turn_ended": "E"}

# Canonical events of every recorded store: type letter (ABBR) and turn.
EXPECTED = {
    ("codex-rollout", "completed", "final"): "T1 A1 C1 R1 A1 E1",
    ("codex-rollout", "kill-stream", "killed"): "T1",
    ("codex-rollout", "kill-stream", "resumed"): "T1 T2 A2 E2",
    ("codex-rollout", "kill-tool", "killed"): "T1 A1 C1",
    ("codex-rollout", "kill-tool", "resumed"): "T1 A1 C1 T2 A2 E2",
    ("codex-rollout", "stop-tool", "stopped"): "T1 A1 C1 R1 E1",
    ("codex-rollout", "stop-tool", "resumed"): "T1 A1 C1 R1 E1 T2 A2 E2",
    ("claude-code", "completed", "final"): "T1 A1 C1 R1 A1",
    ("claude-code", "kill-stream", "killed"): "T1",
    ("claude-code", "kill-stream", "resumed"): "T1 A1 T2 A2",
    ("claude-code", "kill-tool", "killed"): "T1 A1 C1",
    ("claude-code", "kill-tool", "resumed"): "T1 A1 C1 T2 A2",
    ("claude-code", "stop-tool", "stopped"): "T1 A1 C1 R1 Q1",
    ("claude-code", "stop-tool", "resumed"): "T1 A1 C1 R1 Q1 A1 T2 A2",
    ("qwen-code", "completed", "final"): "T1 A1 C1 R1 A1",
    ("qwen-code", "kill-stream", "killed"): "T1",
    ("qwen-code", "kill-stream", "resumed"): "T1 T2 A2",
    ("qwen-code", "kill-tool", "killed"): "T1 A1 C1",
    ("qwen-code", "kill-tool", "resumed"): "T1 A1 C1 T2 A2",
    ("qwen-code", "stop-tool", "stopped"): "T1 A1 C1 R1",
    ("qwen-code", "stop-tool", "resumed"): "T1 A1 C1 R1 T2 A2",
    # Gemini CLI writes a call only once its tool has finished: a kill or a Stop while it runs
    # leaves the model's text and no call.
    ("gemini-cli", "completed", "final"): "T1 A1 C1 R1 A1",
    ("gemini-cli", "kill-stream", "killed"): "T1",
    ("gemini-cli", "kill-stream", "resumed"): "T1 T2 A2",
    ("gemini-cli", "kill-tool", "killed"): "T1 A1",
    ("gemini-cli", "kill-tool", "resumed"): "T1 A1 T2 A2",
    ("gemini-cli", "stop-tool", "stopped"): "T1 A1",
    ("gemini-cli", "stop-tool", "resumed"): "T1 A1 T2 A2",
    ("opencode", "completed", "final"): "T1 A1 C1 S1 R1 P1 A1 P1 E1",
    ("opencode", "kill-stream", "killed"): "T1 A1",
    ("opencode", "kill-stream", "resumed"): "T1 A1 T2 A2 P2 E2",
    ("opencode", "kill-tool", "killed"): "T1 A1 C1 S1",
    ("opencode", "kill-tool", "resumed"): "T1 A1 C1 S1 T2 A2 P2 E2",
    ("opencode", "stop-tool", "stopped"): "T1 A1 C1 S1",
    ("opencode", "stop-tool", "resumed"): "T1 A1 C1 S1 T2 A2 P2 E2",
}
# Later releases recorded the same way: (reader, fixture folder, case, phase) -> events.
# Claude Code 2.1.332 answers the call a kill left open on resume (R1) instead of dropping it.
NEWER = {
    ("claude-code", "claude-code-2.1.332", "completed", "final"): "T1 A1 C1 R1 A1",
    ("claude-code", "claude-code-2.1.332", "kill-stream", "killed"): "T1",
    ("claude-code", "claude-code-2.1.332", "kill-stream", "resumed"): "T1 A1 T2 A2",
    ("claude-code", "claude-code-2.1.332", "kill-tool", "killed"): "T1 A1 C1",
    ("claude-code", "claude-code-2.1.332", "kill-tool", "resumed"): "T1 A1 C1 R1 A1 T2 A2",
    ("claude-code", "claude-code-2.1.332", "stop-tool", "stopped"): "T1 A1 C1 R1 Q1",
    ("claude-code", "claude-code-2.1.332", "stop-tool", "resumed"): "T1 A1 C1 R1 Q1 A1 T2 A2",
    ("qwen-code", "qwen-code-0.24.4", "completed", "final"): "T1 A1 C1 R1 A1",
    ("qwen-code", "qwen-code-0.24.4", "kill-stream", "killed"): "T1",
    ("qwen-code", "qwen-code-0.24.4", "kill-stream", "resumed"): "T1 T2 A2",
    ("qwen-code", "qwen-code-0.24.4", "kill-tool", "killed"): "T1 A1 C1",
    ("qwen-code", "qwen-code-0.24.4", "kill-tool", "resumed"): "T1 A1 C1 T2 A2",
    ("qwen-code", "qwen-code-0.24.4", "stop-tool", "stopped"): "T1 A1 C1 R1",
    ("qwen-code", "qwen-code-0.24.4", "stop-tool", "resumed"): "T1 A1 C1 R1 T2 A2",
}
PROMPT = "Run the check command in the shell and tell me what it printed."
FOLLOW_UP = "follow-up: the last turn was cut off. What happened?"


def fixture_store(reader: str, case: str, phase: str, release: str | None = None) -> Path:
    folder = FIXTURES / (release or AGENTS[reader]) / case / phase
    found = [p for p in folder.rglob("*") if p.is_file() and p.name.endswith((".jsonl", ".db.sql"))]
    assert len(found) == 1, f"expected one store under {folder}, found {found}"
    return found[0]


def store_copy(reader: str, case: str, phase: str, tmp_path: Path, release: str | None = None) -> str:
    """A writable copy of the recorded store (opencode: the database rebuilt from its dump);
    ``release``: the fixture folder of another release than the reader's first recording."""
    source = fixture_store(reader, case, phase, release)
    tmp_path.mkdir(parents=True, exist_ok=True)
    if source.name.endswith(".db.sql"):
        return restore_dump(source, tmp_path / "opencode.db")
    target = tmp_path / source.name
    shutil.copyfile(source, target)
    return str(target)


def copy_one(folder: Path, pattern: str, tmp_path: Path, name: str | None = None) -> str:
    """A writable copy of the one file under ``folder`` matching ``pattern`` (its own name, or ``name``)."""
    found = list(folder.rglob(pattern))
    assert len(found) == 1, f"expected one {pattern} under {folder}, found {found}"
    tmp_path.mkdir(parents=True, exist_ok=True)
    target = tmp_path / (name or found[0].name)
    shutil.copyfile(found[0], target)
    return str(target)


def parse(reader: str, path: str):
    r = get_reader(reader)
    assert r is not None
    snap = r.snapshot(path)
    assert snap is not None
    return r.parse(snap)


def signature(log) -> str:
    return " ".join(f"{ABBR[e.type]}{e.turn}" for e in log.events)


def case_json(reader: str, case: str, release: str | None = None) -> dict:
    return json.loads((FIXTURES / (release or AGENTS[reader]) / case / "case.json").read_text(encoding="utf-8"))


# --- registry and declarations --------------------------------------------------------


def test_registered_with_honest_declarations():
    for name in AGENTS:
        reader = READERS[name]
        assert reader.name == name
        assert reader.agent_versions
        assert Capability.REQUESTS not in reader.capabilities  # none records a request before its stream
        assert Capability.INBOX not in reader.capabilities
    for name in JSONL_READERS:
        assert READERS[name].damage_kinds == {"torn-tail", "mid-file"}
        assert Capability.APPEND_ONLY in READERS[name].capabilities
        assert Capability.MONO_TIMES in READERS[name].capabilities  # from their wall-clock timestamps
    assert Capability.MONO_TIMES not in READERS["opencode"].capabilities
    assert Capability.TURN_ENDS not in READERS["claude-code"].capabilities
    assert Capability.TURN_ENDS not in READERS["qwen-code"].capabilities
    assert Capability.TURN_ENDS in READERS["codex-rollout"].capabilities
    assert READERS["opencode"].damage_kinds == {"mid-file"}
    assert Capability.APPEND_ONLY not in READERS["opencode"].capabilities
    assert Capability.TOOL_STARTS in READERS["opencode"].capabilities


# --- exact events ---------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(EXPECTED) + sorted(NEWER), ids=lambda k: "-".join(k))
def test_events_of_every_recording(key, tmp_path):
    reader, release, case, phase = key if len(key) == 4 else (key[0], None, *key[1:])
    log = parse(reader, store_copy(reader, case, phase, tmp_path, release))
    assert signature(log) == (NEWER[key] if release else EXPECTED[key])
    assert [e.seq for e in log.events] == list(range(1, len(log.events) + 1))
    assert log.torn_tail is None
    assert get_reader(reader).format_problems(log) == []
    sid = case_json(reader, case, release).get("session_id")
    assert log.header.session_id == sid
    assert log.header.cwd and log.header.cwd.endswith("/work")
    first = log.events[0]
    assert first.type == "turn_started"
    assert first.get("input").strip('"') in (PROMPT, "Explain, at length, what this folder is for.")
    if log.header.model is not None:
        assert log.header.model == "fake-model"


@pytest.mark.parametrize("reader", sorted(AGENTS))
def test_completed_turn_content(reader, tmp_path):
    log = parse(reader, store_copy(reader, "completed", "final", tmp_path))
    call = log.of_type("tool_call")[0]
    result = log.of_type("tool_result")[0]
    assert result.get("call_id") == call.get("call_id")
    assert "stopbench-hello" in json.dumps(call.get("arguments"))
    assert "stopbench-hello" in result.get("output")
    assert result.get("aborted") is False
    messages = log.of_type("assistant_message")
    assert [m.get("text") for m in messages] == ["I will run the check.", "The command printed stopbench-hello. Done."]
    assert messages[0].get("tool_calls")[0]["id"] == call.get("call_id")
    assert all(m.get("interrupted") is False for m in messages)
    ends = log.of_type("turn_ended")
    if Capability.TURN_ENDS in get_reader(reader).capabilities:
        assert [e.get("reason") for e in ends] == ["completed"]
    else:
        assert ends == []  # the store records no turn end: none is invented


def test_codex_stop_and_kill(tmp_path):
    stopped = parse("codex-rollout", store_copy("codex-rollout", "stop-tool", "stopped", tmp_path / "a"))
    result = stopped.of_type("tool_result")[0]
    assert result.get("aborted") is True and result.get("output").endswith("aborted by user")
    end = stopped.of_type("turn_ended")[0]
    assert (end.get("reason"), end.get("source"), end.get("native_reason")) == ("aborted", "user", "interrupted")
    resumed = parse("codex-rollout", store_copy("codex-rollout", "kill-tool", "resumed", tmp_path / "b"))
    # the killed turn never ended and the resume wrote no result for its call: the disk stays honest
    assert [e.turn for e in resumed.of_type("turn_ended")] == [2]
    assert resumed.of_type("tool_result") == []
    assert resumed.of_type("turn_started")[1].get("input") == FOLLOW_UP


def test_claude_code_stop_rejects_and_resume_drops_the_call(tmp_path):
    stopped = parse("claude-code", store_copy("claude-code", "stop-tool", "stopped", tmp_path / "a"))
    result = stopped.of_type("tool_result")[0]
    assert result.get("aborted") is False and result.get("rejected") is True
    assert stopped.of_type("stop_requested")[0].get("source") == "user"
    resumed = parse("claude-code", store_copy("claude-code", "kill-tool", "resumed", tmp_path / "b"))
    call = resumed.of_type("tool_call")[0]
    assert call.get("off_chain") is True  # the follow-up was parented past the tool_use
    assert not any(e.get("off_chain") for e in resumed.events if e is not call)
    invented = parse("claude-code", store_copy("claude-code", "kill-stream", "resumed", tmp_path / "c"))
    message = invented.of_type("assistant_message")[0]
    assert message.get("synthetic") is True and message.get("text") == "No response requested."


def test_claude_code_2_1_332_answers_the_killed_call_as_interrupted(tmp_path):
    release = "claude-code-2.1.332"
    resumed = parse("claude-code", store_copy("claude-code", "kill-tool", "resumed", tmp_path / "a", release))
    call, result = resumed.of_type("tool_call")[0], resumed.of_type("tool_result")[0]
    assert result.get("call_id") == call.get("call_id") and result.get("aborted") is True
    assert result.get("output").startswith("[Tool call interrupted: the session ended before this call's result")
    assert not any(e.get("off_chain") for e in resumed.events)  # the call stays in the conversation
    assert resumed.of_type("assistant_message")[1].get("synthetic") is True
    stopped = parse("claude-code", store_copy("claude-code", "stop-tool", "stopped", tmp_path / "b", release))
    rejected = stopped.of_type("tool_result")[0]  # a Stop still reads as the user's rejection
    assert rejected.get("aborted") is False and rejected.get("rejected") is True


def test_qwen_code_cancelled_result(tmp_path):
    log = parse("qwen-code", store_copy("qwen-code", "stop-tool", "stopped", tmp_path))
    result = log.of_type("tool_result")[0]
    assert result.get("aborted") is True and result.get("status") == "cancelled"
    assert result.get("output").startswith("[Operation Cancelled]")


def test_qwen_code_0_24_records_are_read_like_0_15s(tmp_path):
    path = store_copy("qwen-code", "stop-tool", "stopped", tmp_path, "qwen-code-0.24.4")
    assert b'"provenance":"real_user"' in Path(path).read_bytes()  # the field 0.24 added
    log = parse("qwen-code", path)
    assert log.header.raw["version"] == "0.24.4"
    result = log.of_type("tool_result")[0]
    assert result.get("aborted") is True and result.get("status") == "cancelled"
    assert result.get("output").startswith("[Operation Cancelled]")


def test_opencode_running_tool_and_unfinished_text(tmp_path):
    killed = parse("opencode", store_copy("opencode", "kill-tool", "killed", tmp_path / "a"))
    started = killed.of_type("tool_started")[0]
    assert started.get("call_id") == killed.of_type("tool_call")[0].get("call_id")
    assert started.get("pid") is None  # opencode stores no pid
    assert killed.of_type("tool_result") == [] and killed.of_type("turn_ended") == []
    assert started.where.startswith("row ") and "table part" in started.where
    stream = parse("opencode", store_copy("opencode", "kill-stream", "killed", tmp_path / "b"))
    message = stream.of_type("assistant_message")[0]
    assert message.get("interrupted") is True and message.get("text") == ""  # the streamed text was not kept


# --- stores as they grow: append-only, lost, changed ------------------------------------


@pytest.mark.parametrize("reader", sorted(AGENTS))
@pytest.mark.parametrize("case,first", [("kill-tool", "killed"), ("kill-stream", "killed"), ("stop-tool", "stopped")])
def test_resume_keeps_every_durable_record(reader, case, first, tmp_path):
    r = get_reader(reader)
    before = r.snapshot(store_copy(reader, case, first, tmp_path / "before"))
    after = r.snapshot(store_copy(reader, case, "resumed", tmp_path / "after"))
    assert r.lost(before, after) is None
    assert r.changed(before, after) is not None
    assert r.changed(before, before) is None


def test_lost_names_a_rewritten_line(tmp_path):
    r = get_reader("codex-rollout")
    path = store_copy("codex-rollout", "completed", "final", tmp_path)
    before = r.snapshot(path)
    data = Path(path).read_bytes().replace(b"I will run the check.", b"I will run the tests.")
    Path(path).write_bytes(data)
    change = r.lost(before, r.snapshot(path))
    assert change is not None and change.line is not None and change.line > 1


def test_opencode_lost_names_a_vanished_part(tmp_path):
    r = get_reader("opencode")
    path = store_copy("opencode", "completed", "final", tmp_path)
    before = r.snapshot(path)
    con = sqlite3.connect(path)
    con.execute("delete from part where rowid = (select max(rowid) from part)")
    con.commit()
    con.close()
    change = r.lost(before, r.snapshot(path))
    assert change is not None and "table part" in change.where


# --- torn tails and damage ------------------------------------------------------------


@pytest.mark.parametrize("reader", JSONL_READERS)
@pytest.mark.parametrize("case,phase", [("completed", "final"), ("kill-tool", "killed")])
def test_torn_tail_is_tolerated(reader, case, phase, tmp_path):
    path = store_copy(reader, case, phase, tmp_path)
    r = get_reader(reader)
    intact = r.parse(r.snapshot(path))
    damage = r.damage(path, "torn-tail")
    torn = r.parse(r.snapshot(path))
    assert torn.torn_tail == r.torn_fragment
    assert signature(torn) == signature(intact)
    assert damage.line == Path(path).read_bytes().count(b"\n") + 1
    with pytest.raises(CannotDamage):
        r.damage(path, "torn-tail")  # already torn


@pytest.mark.parametrize("reader", JSONL_READERS)
def test_partial_line_appended_by_hand(reader, tmp_path):
    path = store_copy(reader, "completed", "final", tmp_path)
    with open(path, "ab") as f:
        f.write(b'{"type": "assistant", "mess')
    log = parse(reader, path)
    assert log.torn_tail == b'{"type": "assistant", "mess'


@pytest.mark.parametrize("reader", JSONL_READERS)
def test_mid_file_damage_is_refused_naming_file_and_line(reader, tmp_path):
    path = store_copy(reader, "completed", "final", tmp_path)
    before = Path(path).read_bytes()
    damage = get_reader(reader).damage(path, "mid-file")
    assert damage.line is not None and 1 < damage.line < before.count(b"\n")
    with pytest.raises(LogDamaged) as caught:
        parse(reader, path)
    assert caught.value.path == path and caught.value.line == damage.line
    assert f"{path}:{damage.line}:" in str(caught.value)


def test_opencode_damage_is_refused_naming_table_and_row(tmp_path):
    path = store_copy("opencode", "completed", "final", tmp_path)
    r = get_reader("opencode")
    damage = r.damage(path, "mid-file")
    assert damage.where.startswith("row ") and damage.where.endswith("of table part")
    with pytest.raises(LogDamaged) as caught:
        parse("opencode", path)
    assert damage.where in str(caught.value) and path in str(caught.value)
    with pytest.raises(CannotDamage):
        r.damage(path, "torn-tail")


def test_opencode_refuses_a_file_that_is_no_database(tmp_path):
    path = tmp_path / "opencode.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    with pytest.raises(LogDamaged):
        parse("opencode", str(path))


# --- unknown versions and missing fields ----------------------------------------------


def _rewrite_first(path: str, old: bytes, new: bytes) -> None:
    data = Path(path).read_bytes()
    assert old in data
    Path(path).write_bytes(data.replace(old, new))


@pytest.mark.parametrize("reader,old,new,wanted", [
    ("codex-rollout", b'"cli_version":"0.171.0"', b'"cli_version":"0.999.0"', "Codex CLI 0.171.x"),
    ("claude-code", b'"version":"2.1.197"', b'"version":"3.0.0"', "Claude Code 2.1.x"),
    ("qwen-code", b'"version":"0.15.10"', b'"version":"0.99.1"', "Qwen Code 0.15.x"),
    ("gemini-cli", b'"type":"gemini"', b'"type":"model"', "Gemini CLI 0.61.x"),  # no version field: shapes
])
def test_unknown_version_is_refused_clearly(reader, old, new, wanted, tmp_path):
    path = store_copy(reader, "completed", "final", tmp_path)
    _rewrite_first(path, old, new)
    with pytest.raises(LogDamaged) as caught:
        parse(reader, path)
    message = str(caught.value)
    assert wanted in message and new.split(b'"')[-2].decode() in message and path in message


def test_codex_refuses_a_rollout_without_session_meta(tmp_path):
    path = store_copy("codex-rollout", "completed", "final", tmp_path)
    lines = Path(path).read_bytes().split(b"\n")
    Path(path).write_bytes(b"\n".join(lines[1:]))
    with pytest.raises(LogDamaged, match="not a Codex CLI rollout.*0.171"):
        parse("codex-rollout", path)


def test_claude_code_refuses_a_record_without_uuid(tmp_path):
    path = store_copy("claude-code", "completed", "final", tmp_path)
    lines = Path(path).read_text().splitlines()
    record = json.loads(lines[2])
    del record["uuid"]
    lines[2] = json.dumps(record)
    Path(path).write_text("\n".join(lines) + "\n")
    with pytest.raises(LogDamaged, match=r":3: user record lacks 'uuid'"):
        parse("claude-code", path)


def test_opencode_refuses_an_unknown_schema(tmp_path):
    path = store_copy("opencode", "completed", "final", tmp_path)
    con = sqlite3.connect(path)
    con.execute("insert into migration (id, time_completed) values ('20270101000000_future', 0)")
    con.commit()
    con.close()
    with pytest.raises(LogDamaged, match="20270101000000_future.*opencode 1.18.x"):
        parse("opencode", path)


def test_opencode_refuses_a_session_of_another_version(tmp_path):
    path = store_copy("opencode", "completed", "final", tmp_path)
    con = sqlite3.connect(path)
    con.execute("update session set version = '2.0.1'")
    con.commit()
    con.close()
    with pytest.raises(LogDamaged, match="opencode 2.0.1.*opencode 1.18.x"):
        parse("opencode", path)


# --- opencode's snapshot: a consistent copy, never a write lock -------------------------


def test_opencode_snapshot_reads_while_the_agent_writes(tmp_path):
    path = store_copy("opencode", "kill-tool", "killed", tmp_path)
    agent = sqlite3.connect(path, isolation_level=None)
    agent.execute("pragma journal_mode=wal")
    agent.execute("begin immediate")  # the agent holds the write lock, mid-transaction
    agent.execute("update part set time_updated = time_updated + 1")
    r = get_reader("opencode")
    snap = r.snapshot(path)
    assert snap is not None
    assert signature(r.parse(snap)) == EXPECTED[("opencode", "kill-tool", "killed")]
    agent.execute("commit")  # the snapshot never blocked the agent
    agent.close()


def test_opencode_snapshot_leaves_the_file_alone(tmp_path):
    path = store_copy("opencode", "completed", "final", tmp_path)
    before = Path(path).read_bytes()
    r = get_reader("opencode")
    r.parse(r.snapshot(path))
    assert Path(path).read_bytes() == before


def test_opencode_session_by_id(tmp_path):
    path = store_copy("opencode", "completed", "final", tmp_path)
    sid = case_json("opencode", "completed")["session_id"]
    assert parse("opencode", f"{path}#{sid}").header.session_id == sid
    with pytest.raises(LogDamaged, match="no session 'ses_missing'"):
        parse("opencode", f"{path}#ses_missing")


# --- the fixtures themselves ----------------------------------------------------------


def test_fixtures_hold_no_key():
    for path in FIXTURES.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"sk-stopbench-" not in data.replace(b"sk-stopbench-REDACTED", b""), path


def test_wall_clock_timestamps_land_on_the_harness_clock():
    """An ISO timestamp a store wrote on this host becomes CLOCK_MONOTONIC ns, so a store's
    events can be ordered against the kills and Stops the harness stamped."""
    import datetime as dt
    import time

    from harness.readers.jsonl import Events

    events = Events()
    before = time.monotonic_ns()
    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    stamped = events.add("turn_started", 2, timestamp=now)
    after = time.monotonic_ns()
    assert stamped.mono_ns is not None
    assert before - 2_000_000 <= stamped.mono_ns <= after + 2_000_000  # the store's millisecond resolution
    assert events.add("turn_ended", 3, timestamp="not a time").mono_ns is None
    assert events.add("turn_ended", 4).mono_ns is None
