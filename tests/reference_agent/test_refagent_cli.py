"""``refagent run`` as a real process against the fake server over HTTP.

Kills are real SIGKILLs at checkpoint moments the fake server reports (a chunk flushed, a
window running); interruptions are real signals; every verdict comes from the server's
records, the exit code, the log file and the process table.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess

import pytest
from refagent_testkit import CANARY_KEY, alive, read_events, write_scenario

from fake_server import load_scenario, wire_chat
from reference_agent.log import load

STALLING = """
name = "stalling"
[[responses]]
[[responses.frames]]
text = "Half an answ"
chunk = 4
[[responses.frames]]
stall = true
"""

TWO_CALLS = """
name = "two-calls"
[[responses]]
[[responses.frames]]
text = "Running two commands."
[[responses.frames]]
shell = { window = { id = "w1", depth = 1, fanout = 1, ignore_term = true, escape = true, hold_s = 120 } }
[[responses.frames]]
tool_call = { name = "bash", arguments = { command = "echo second > second.txt" } }
"""

FOLLOW_UP = """
name = "follow-up"
[[responses]]
match = { last = "user" }
[[responses.frames]]
text = "Picking up where we were."
"""


async def wait_exit(proc: subprocess.Popen, timeout: float = 60) -> int:
    loop = asyncio.get_running_loop()
    return await asyncio.wait_for(loop.run_in_executor(None, proc.wait), timeout)


async def run_to_end(agents, server, *args, adapter="http") -> tuple[int, str, str]:
    proc = agents.start(*agents.run_args(server, *args, adapter=adapter))
    code = await wait_exit(proc)
    return code, proc.stdout.read().decode(), proc.stderr.read().decode()


def follow_up_request(server, n):
    request = next(r for r in server.records.of_kind("request") if r.request == n)
    assert request.status == 200, request.error
    wire_chat.parse(request.body)  # balanced, by the server's own rule
    return request


async def test_sigkill_mid_stream_then_resume(agents, server_for, tmp_path):
    server = await server_for(STALLING)
    proc = agents.start(*agents.run_args(server, "first question"))
    session_id, log_path = agents.session_of(proc)
    await asyncio.wait_for(server.records.wait_chunk(request=1, chunk=2), 60)
    proc.send_signal(signal.SIGKILL)
    await wait_exit(proc)
    on_disk = read_events(log_path)
    assert [e["type"] for e in on_disk] == ["turn_started", "model_request"], "the request checkpoint was lost"
    assert on_disk[1]["mono_ns"] < server.records.of_kind("request")[0].mono_ns
    crashed = log_path.read_bytes()

    server.load(load_scenario(write_scenario(tmp_path, FOLLOW_UP, "follow.toml")))
    code, out, _ = await run_to_end(agents, server, "--resume", session_id, "and now?")
    assert code == 0 and "Picking up" in out
    assert log_path.read_bytes().startswith(crashed), "earlier lines changed"
    events = load(log_path).events
    types = [e["type"] for e in events]
    assert types.count("turn_ended") == 1, "the crashed turn's end was written to disk"
    request = follow_up_request(server, 2)
    texts = [m["text"] for m in request.canonical["messages"]]
    assert "first question" in texts and texts[-1] == "and now?"
    assert any("resumed" in t and "Files may have changed" in t for t in texts)


async def test_sigkill_mid_tool_then_resume_repairs_both_classes(agents, server_for, tmp_path):
    server = await server_for(TWO_CALLS)
    proc = agents.start(*agents.run_args(server, "do both"))
    session_id, log_path = agents.session_of(proc)
    window = await asyncio.wait_for(server.records.wait_window("w1"), 60)
    pids = agents.note_window(window)
    proc.send_signal(signal.SIGKILL)
    await wait_exit(proc)
    events = read_events(log_path)
    call = next(e for e in events if e["type"] == "tool_call")
    assert call["mono_ns"] < window.mono_ns, "the tool call was not durable before the body ran"
    assert not any(e["type"] in ("tool_result", "turn_ended") for e in events)

    server.load(load_scenario(write_scenario(tmp_path, FOLLOW_UP, "follow.toml")))
    code, _, _ = await run_to_end(agents, server, "--resume", session_id, "what happened?")
    assert code == 0
    request = follow_up_request(server, 2)
    tool_texts = [m["text"] for m in request.canonical["messages"] if m["role"] == "tool"]
    assert len(tool_texts) == 2
    assert tool_texts[0].startswith("TOOL_OUTCOME_UNKNOWN") and "idempotent" in tool_texts[0]
    assert tool_texts[1].startswith("TOOL_NOT_STARTED")
    assert not (agents.cwd / "second.txt").exists(), "a call that never started was run by the repair"
    # The restarted agent reaped what the killed one left running, and said so.
    assert alive(pids, agents.started) == []
    resumed = next(e for e in load(log_path).events if e["type"] == "session_resumed")
    assert set(resumed["reaped"]) <= set(pids) and resumed["reaped"]
    assert list(agents.sessions.glob("*.out")) == [], "the cut-off call's output file was left behind"


@pytest.mark.parametrize(
    "scenario, reason, code",
    [
        ('name = "c"\n[[responses]]\n[[responses.frames]]\ntext = "done"\n', "completed", 0),
        ('name = "e"\n[[responses]]\n[[responses.frames]]\nhttp_error = 500\n', "error", 2),
        ('name = "d"\n[[responses]]\n[[responses.frames]]\ntext = "half"\n[[responses.frames]]\ndisconnect = true\n',
         "error", 2),
        ('name = "m"\n[[responses]]\n[[responses.frames]]\ntext = "cut"\n[[responses.frames]]\nfinish = "length"\n',
         "max_tokens", 2),
    ],
)
async def test_exit_codes_of_ending_reasons(agents, server_for, scenario, reason, code):
    server = await server_for(scenario)
    got, _, err = await run_to_end(agents, server, "q")
    log = next(agents.sessions.glob("*.jsonl"))
    ending = [e for e in read_events(log) if e["type"] == "turn_ended"]
    assert [e["reason"] for e in ending] == [reason]
    assert got == code, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_stop_by_signal_settles_then_exits_3(agents, server_for, sig):
    server = await server_for(STALLING)
    proc = agents.start(*agents.run_args(server, "q"))
    _, log_path = agents.session_of(proc)
    await asyncio.wait_for(server.records.wait_chunk(request=1, chunk=2), 60)
    proc.send_signal(sig)
    assert await wait_exit(proc) == 3
    await asyncio.wait_for(server.records.wait_disconnect(request=1), 30)
    events = read_events(log_path)
    ending = [e for e in events if e["type"] == "turn_ended"]
    assert [(e["reason"], e.get("source")) for e in ending] == [("aborted", "user")]
    partial = next(e for e in events if e["type"] == "assistant_message")
    assert partial["interrupted"] is True and partial["text"].startswith("Half")


@pytest.mark.slow(reason="the agent runs to its timeout")
async def test_timeout_exits_3_interrupted_with_nothing_left(agents, server_for):
    server = await server_for("""
name = "t"
[[responses]]
repeat = true
[[responses.frames]]
shell = { window = { id = "w1", depth = 1, fanout = 1, ignore_term = true, escape = true, hold_s = 120 } }
""")
    # The timeout must fall while the tool runs; on a machine slow enough that it fell before
    # the window opened (the agent then exits 3 with no tool run), try again with three times more.
    for timeout in ("1.5", "4.5", "13.5"):
        proc = agents.start(*agents.run_args(server, "--timeout", timeout, "q"))
        _, log_path = agents.session_of(proc)
        opened = asyncio.ensure_future(server.records.wait_window("w1"))
        exited = asyncio.ensure_future(wait_exit(proc))
        await asyncio.wait({opened, exited}, return_when=asyncio.FIRST_COMPLETED, timeout=60)
        if opened.done():
            break
        opened.cancel()
        assert await exited == 3
    window = await opened
    pids = agents.note_window(window)
    assert await exited == 3
    assert alive(pids, agents.started) == []
    events = read_events(log_path)
    assert [e.get("source") for e in events if e["type"] == "stop_requested"] == ["timeout"]
    assert [e["reason"] for e in events if e["type"] == "turn_ended"] == ["interrupted"]
    assert next(e for e in events if e["type"] == "tool_result")["aborted"] is True


async def test_api_key_reaches_no_file(agents, server_for, tmp_path):
    server = await server_for("""
name = "k"
[[responses]]
match = { last = "user" }
[[responses.frames]]
shell = "env > env.txt; echo done"
[[responses]]
match = { last = "tool" }
[[responses.frames]]
text = "ok"
""")
    env = agents.env(OPENAI_API_KEY=CANARY_KEY)
    proc = agents.start("run", "--adapter", "http", "--base-url", server.base_url, "--sessions-dir",
                        str(agents.sessions), "--cwd", str(agents.cwd), "q", env=env)
    assert await wait_exit(proc) == 0
    assert (agents.cwd / "env.txt").exists()
    sent = server.records.of_kind("request")[0].headers
    assert "[redacted]" in str(sent)  # the key was really used on the wire
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert CANARY_KEY.encode() not in path.read_bytes(), f"the API key leaked into {path}"


async def test_inproc_adapter_reports_to_the_server(agents, server_for, tmp_path):
    server = await server_for('name = "x"\n[[responses]]\n[[responses.frames]]\ntext = "unused"\n')
    scenario = write_scenario(tmp_path, 'name = "i"\n[[responses]]\n[[responses.frames]]\ntext = "from inproc"\n',
                              "inproc.toml")
    code, out, _ = await run_to_end(agents, server, "--scenario", str(scenario), "q", adapter="inproc")
    assert code == 0 and "from inproc" in out
    request = server.records.of_kind("request")[0]
    assert request.source == "inproc" and request.canonical["messages"][-1]["text"] == "q"


async def test_continue_resumes_the_latest_session(agents, server_for):
    server = await server_for('name = "c"\n[[responses]]\nrepeat = true\n[[responses.frames]]\ntext = "done"\n')
    first = agents.start(*agents.run_args(server, "one"))
    session_id, log_path = agents.session_of(first)
    assert await wait_exit(first) == 0
    second = agents.start(*agents.run_args(server, "--continue", "two"))
    assert agents.session_of(second) == (session_id, log_path)
    assert await wait_exit(second) == 0
    inputs = [e["input"] for e in read_events(log_path) if e["type"] == "turn_started"]
    assert inputs == ["one", "two"]


def _stat(start_ticks: int) -> bytes:
    """A ``/proc/<pid>/stat`` line whose field 22 (starttime) is ``start_ticks``; the command
    name holds a space and a parenthesis, as a process name may."""
    fields = ["S"] + ["0"] * 18 + [str(start_ticks)] + ["0"] * 30
    return b"4242 (ref agent) x) " + " ".join(fields).encode()


@pytest.mark.parametrize("into_tick", [0.004, 0.0099])
def test_the_time_since_start_never_exceeds_what_passed_so_the_timeout_never_falls_before_t(into_tick):
    """The kernel rounds the start down to a clock tick: a process started ``into_tick`` seconds
    into tick 12345 (100 ticks a second) and asked at that very moment has run for no time."""
    from reference_agent.cli import _elapsed_since_start

    started = 12345 / 100 + into_tick
    assert _elapsed_since_start(_stat(12345), started, 100) == 0.0
    assert 2.0 - 0.01 <= _elapsed_since_start(_stat(12345), started + 2.0, 100) <= 2.0
