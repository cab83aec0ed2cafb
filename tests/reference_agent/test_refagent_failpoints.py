"""Every failpoint really changes the agent's behaviour, in the way its catalog entry says.

Each test runs the same scenario as the clean agent's test and shows the difference the
failpoint makes; together with the clean tests they show the break is the only change.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from refagent_testkit import CANARY_KEY, REFAGENT, alive, kill_pids, read_events, reset_signals, write_scenario

from fake_server import wire_chat
from reference_agent import failpoints
from reference_agent.api import new_state, open_session
from reference_agent.cli import exit_code_for
from reference_agent.log import LogDamage, LogWriter, load
from reference_agent.tools import ToolRun, tree_of

STALLING = 'name = "s"\n[[responses]]\nrepeat = true\n[[responses.frames]]\ntext = "partial words"\nchunk = 4\n[[responses.frames]]\nstall = true\n'
HEADER = {"format": "contract-log", "version": 1, "session_id": "s-f", "created": "2026-11-29T00:00:00.000000Z",
          "cwd": "/tmp", "model": "m", "adapter": "inproc", "parent": None}


@pytest.fixture
def failpoint():
    def enable(*names):
        failpoints.enable(frozenset(names))

    try:
        yield enable
    finally:
        failpoints.enable(frozenset())


async def inproc(tmp_path, text=STALLING, server=None, **kw):
    (tmp_path / "work").mkdir(exist_ok=True)
    scenario = write_scenario(tmp_path, text, f"sc{len(list(tmp_path.glob('sc*.toml')))}.toml")
    return await open_session(sessions_dir=tmp_path / "sessions", cwd=tmp_path / "work", adapter="inproc",
                              scenario=str(scenario), base_url=server.beacon_url if server else None, **kw)


async def stopped_mid_stream(session, source="user"):
    seen = asyncio.Event()
    session.subscribe(lambda e: e["type"] == "text_delta" and seen.set())
    turn = session.start_turn("q")
    await asyncio.wait_for(seen.wait(), 30)
    turn.stop(source)
    return await turn.settled()


def test_catalog_lists_every_failpoint_of_the_contract_with_its_checks():
    out = subprocess.run([REFAGENT, "failpoints", "--json"], capture_output=True, text=True, check=True,
                         start_new_session=True, preexec_fn=reset_signals).stdout
    listed = json.loads(out)
    assert set(listed) == set(failpoints.CATALOG) and len(listed) == 26
    assert all(entry["checks"] and entry["description"] for entry in listed.values())
    assert failpoints.active() == frozenset()


def test_an_unknown_failpoint_is_refused_clearly():
    env = dict(os.environ, REFAGENT_FAILPOINTS="no-tree-kil")
    done = subprocess.run([REFAGENT, "run", "--adapter", "inproc", "--scenario", "x.toml", "q"], env=env,
                          capture_output=True, text=True, start_new_session=True, preexec_fn=reset_signals)
    assert done.returncode == 2 and "unknown failpoint(s) no-tree-kil" in done.stderr


async def _tree_then_abort(tmp_path, command):
    """Run ``command`` (which writes to the FIFO ``ready`` once its child runs) as a bash
    tool, then Stop it; returns the tree's PIDs as they were and the tool's result."""
    ready = tmp_path / "ready"
    if not ready.exists():
        os.mkfifo(ready)
    run = ToolRun("bash", {"command": command}, tmp_path, "c1", tmp_path / "c1.out")
    started = asyncio.Event()
    task = asyncio.create_task(run.run(lambda pid, pgid: started.set()))
    await started.wait()
    await asyncio.to_thread(ready.read_bytes)  # returns once the command wrote and closed it
    pids = tree_of(run.proc.pid, run.tag)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    result = await run.abort()
    return pids, result


@pytest.mark.slow(reason="a process tree started and ended")
async def test_no_tree_kill_leaves_the_children(tmp_path, failpoint):
    failpoint("no-tree-kill")
    pids, result = await _tree_then_abort(tmp_path, "sleep 300 & echo > ready; wait")
    try:
        assert result.aborted and alive(pids[1:]), "the child should have survived"
    finally:
        kill_pids(pids)


@pytest.mark.slow(reason="waits out the agent's grace period")
async def test_term_then_wait_sends_sigterm_first(tmp_path, failpoint):
    command = "trap 'echo term > got-term; exit 0' TERM; sleep 300 & echo > ready; wait"
    pids, _ = await _tree_then_abort(tmp_path, command)
    assert not (tmp_path / "got-term").exists() and not alive(pids)
    failpoint("term-then-wait")
    pids, _ = await _tree_then_abort(tmp_path, command)
    kill_pids(pids)
    assert (tmp_path / "got-term").exists()


def test_exit_code_failpoints(failpoint):
    assert exit_code_for({"reason": "interrupted"}, "timeout") == 3
    assert exit_code_for({"reason": "aborted"}, "user") == 3
    failpoint("exit-1-on-timeout", "exit-0-on-stop")
    assert exit_code_for({"reason": "interrupted"}, "timeout") == 1
    assert exit_code_for({"reason": "aborted"}, "user") == 0


@pytest.mark.parametrize("name", ["drop-partial-text", "no-interrupted-flag"])
async def test_partial_text_failpoints(tmp_path, failpoint, name):
    failpoint(name)
    session = await inproc(tmp_path)
    await stopped_mid_stream(session)
    await session.close()
    messages = [e for e in read_events(session.log_path) if e["type"] == "assistant_message"]
    if name == "drop-partial-text":
        assert messages == []
    else:
        assert messages[0]["text"] and messages[0]["interrupted"] is False


def _dangling_history():
    state = new_state(HEADER)
    state.apply({"type": "turn_started", "turn": 1, "input": "go", "inbox": []})
    state.apply({"type": "assistant_message", "text": "", "tool_calls": [
        {"id": "a", "name": "bash", "arguments": "{}"}]})
    state.apply({"type": "tool_call", "call_id": "a"})
    state.apply({"type": "turn_started", "turn": 2, "input": "again", "inbox": []})
    return state.history.messages()


def test_no_repair_and_drop_dangling_call(failpoint):
    wire_chat.parse({"model": "m", "messages": _dangling_history()})
    failpoint("no-repair")
    with pytest.raises(Exception, match="tool_call_ids did not have response messages: a"):
        wire_chat.parse({"model": "m", "messages": _dangling_history()})
    failpoint("drop-dangling-call")
    messages = _dangling_history()
    assert not any(m.get("tool_calls") for m in messages) and not any(m["role"] == "tool" for m in messages)


async def test_repair_writes_disk(tmp_path, failpoint):
    path = tmp_path / "sessions" / "s-f.jsonl"
    w = LogWriter.create(path, HEADER)
    w.append("turn_started", turn=1, input="x", inbox=[])  # then a crash: the turn never ended
    w.close()
    before = path.read_bytes()
    (await inproc(tmp_path, resume="s-f")).writer.close()
    assert path.read_bytes() == before
    failpoint("repair-writes-disk")
    (await inproc(tmp_path, resume="s-f")).writer.close()
    assert path.read_bytes() != before and read_events(path)[-1]["type"] == "turn_ended"


@pytest.mark.parametrize("name, count", [("double-settle", 2), ("no-settle-on-stop", 0)])
async def test_settlement_failpoints(tmp_path, failpoint, name, count):
    failpoint(name)
    session = await inproc(tmp_path)
    ending = await stopped_mid_stream(session)
    await session.close()
    assert ending["reason"] == "aborted"  # the process itself still learns the outcome
    assert [e["type"] for e in read_events(session.log_path)].count("turn_ended") == count


async def test_seq_gap_and_no_header_make_logs_the_format_refuses(tmp_path, failpoint):
    failpoint("seq-gap", "no-header")
    session = await inproc(tmp_path)
    await stopped_mid_stream(session)
    await session.close()
    failpoint()
    with pytest.raises(LogDamage):
        load(session.log_path)
    first = session.log_path.read_bytes().split(b"\n")[0]
    assert b'"format"' not in first
    seqs = [json.loads(line)["seq"] for line in session.log_path.read_bytes().splitlines()]
    assert seqs[:2] == [1, 3]


def _torn_log(tmp_path):
    path = tmp_path / "s-f.jsonl"
    w = LogWriter.create(path, HEADER)
    w.append("turn_started", turn=1, input="x", inbox=[])
    w.close()
    with open(path, "ab") as f:
        f.write(b'{"seq": 2, "ty')
    return path


def test_append_after_torn_line(tmp_path, failpoint):
    failpoint("append-after-torn-line")
    path = _torn_log(tmp_path)
    w = LogWriter.reopen(load(path))
    w.append("turn_ended", turn=1, reason="completed")
    w.append("turn_started", turn=2, input="y", inbox=[])
    w.close()
    assert b'"ty{"seq"' in path.read_bytes()
    failpoint()  # the line written onto the torn one is now damage before the last line
    with pytest.raises(LogDamage):
        load(path)


def test_accept_mid_file_damage(tmp_path, failpoint):
    path = _torn_log(tmp_path)
    w = LogWriter.reopen(load(path))
    w.append("turn_ended", turn=1, reason="completed")
    w.close()
    lines = path.read_bytes().split(b"\n")
    lines[1] = b"{damaged"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(LogDamage):
        load(path)
    failpoint("accept-mid-file-damage")
    assert load(path).skipped_lines == [2]


async def test_late_tool_checkpoint(tmp_path, failpoint):
    scenario = 'name = "t"\n[[responses]]\nmatch = { last = "user" }\n[[responses.frames]]\nshell = "true"\n' \
               '[[responses]]\n[[responses.frames]]\ntext = "ok"\n'
    failpoint("late-tool-checkpoint")
    session = await inproc(tmp_path, scenario)
    await session.start_turn("q").settled()
    await session.close()
    types = [e["type"] for e in read_events(session.log_path)]
    assert types.index("tool_call") > types.index("tool_started")


async def test_no_request_checkpoint(tmp_path, failpoint):
    failpoint("no-request-checkpoint")
    session = await inproc(tmp_path)
    on_disk_at_first_text = []
    session.subscribe(lambda e: e["type"] == "text_delta" and not on_disk_at_first_text and on_disk_at_first_text.append(
        [x["type"] for x in read_events(session.log_path)]))
    await stopped_mid_stream(session)
    await session.close()
    assert "model_request" not in on_disk_at_first_text[0]


async def test_stream_error_as_error(tmp_path, failpoint):
    failpoint("stream-error-as-error")
    session = await inproc(tmp_path)
    ending = await stopped_mid_stream(session)
    await session.close()
    assert ending["reason"] == "error"


async def test_keep_going_after_stop(tmp_path, failpoint, server_for):
    server = await server_for('name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "x"\n')
    failpoint("keep-going-after-stop")
    stall_then_answer = STALLING.replace("repeat = true\n", "") + '[[responses]]\n[[responses.frames]]\ntext = "more"\n'
    session = await inproc(tmp_path, stall_then_answer, server=server)
    await stopped_mid_stream(session)
    await session.close()
    assert len(server.records.of_kind("request")) == 2


async def test_lose_inbox(tmp_path, failpoint):
    session = await inproc(tmp_path)
    session.queue("remember me")
    await session.close()
    resumed = await inproc(tmp_path, resume=session.id)
    assert [i.text for i in resumed.state.pending_inbox()] == ["remember me"]
    await resumed.close()
    failpoint("lose-inbox")
    resumed = await inproc(tmp_path, resume=session.id)
    assert resumed.state.pending_inbox() == []
    seen = asyncio.Event()
    resumed.subscribe(lambda e: e["type"] == "text_delta" and seen.set())
    turn = resumed.start_turn("q")
    await asyncio.wait_for(seen.wait(), 30)
    resumed.queue("typed during the turn")
    turn.stop("user")
    await turn.settled()
    assert resumed.state.pending_inbox() == [], "a stopped turn should have dropped the queued item"
    await resumed.close()


async def test_leak_api_key_and_resume_forks(tmp_path, failpoint):
    failpoint("leak-api-key", "resume-forks")
    session = await inproc(tmp_path, api_key=CANARY_KEY)
    await session.close()
    assert CANARY_KEY.encode() in session.log_path.read_bytes()
    resumed = await inproc(tmp_path, resume=session.id)
    await resumed.close()
    assert resumed.id != session.id and resumed.log_path != session.log_path


def test_failpoints_are_read_from_the_environment_once_at_start():
    code = "from reference_agent import failpoints; print(sorted(failpoints.active()))"
    env = dict(os.environ, REFAGENT_FAILPOINTS="seq-gap, no-header")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         start_new_session=True, preexec_fn=reset_signals).stdout
    assert out.strip() == "['no-header', 'seq-gap']"


def test_every_failpoint_has_a_test_here():
    here = Path(__file__).parent  # the ACP mode's failpoints are tested with it
    source = "".join((here / name).read_text(encoding="utf-8") for name in ("test_refagent_failpoints.py",
                                                                            "test_acp_mode.py"))
    untested = [name for name in failpoints.CATALOG if f'"{name}"' not in source]
    assert untested == []
