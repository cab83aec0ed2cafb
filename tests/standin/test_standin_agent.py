"""standin-agent driven directly against the fake model server.

Every wait is on an event — a record of the fake server (request, chunk, window, disconnect) or
the agent's exit — never a sleep. Every process a test starts (the agent runs, and the bash
window trees the server reports) is ended by the ``kit`` fixture, also when a test fails.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import secrets
import signal
import sys
import time
import tomllib
from pathlib import Path

import psutil
import pytest

from fake_server import FakeServer
from fake_server.scenario_loader import parse_scenario_text

HERE = Path(__file__).resolve().parent
AGENT = HERE / "standin_agent.py"
PROFILE = HERE / "standin.toml"
WAIT_S = 30


async def waited(waiting):
    """A fake-server record, as the plain dict it exports, within the failsafe."""
    return (await asyncio.wait_for(waiting, WAIT_S)).to_json()

REPORT = "Here is the report, section by section: first the build, then the tests, then the deploy."
STREAMING = f"""
[[responses]]
match = {{ last = "user" }}
[[responses.frames]]
text = "{REPORT}"
chunk = 6
interval_s = 0.05
[[responses.frames]]
stall = true

[[responses]]
[[responses.frames]]
text = "Answer to a request that should not have been sent."
"""

LONG_JOB = """
[[responses]]
match = { last = "user" }
[[responses.frames]]
text = "I will run the long job now."
chunk = 8
[[responses.frames]]
shell = { window = { id = "w1", depth = 2, fanout = 1, ignore_term = true, escape = true, hold_s = 60 } }

[[responses]]
[[responses.frames]]
text = "Answer to a request that should not have been sent."
"""

MIGRATION = """
[[responses]]
match = { last = "user", contains = "Run the migration" }
[[responses.frames]]
text = "Running the migration."
chunk = 8
[[responses.frames]]
shell = { window = { id = "w1", depth = 1, fanout = 1, hold_s = 60 } }
[[responses.frames]]
shell = "echo verify-migration"

[[responses]]
match = { last = "user", contains = "What happened" }
[[responses.frames]]
text = "The migration's outcome is unknown; I will check the state first."
"""

HELLO = """
[[responses]]
match = { last = "user", contains = "Say hello" }
[[responses.frames]]
text = "Hello from the model: the answer is 42."
chunk = 7

[[responses]]
match = { last = "user" }
[[responses.frames]]
text = "A second answer."
"""


def scenario(body: str):
    return parse_scenario_text('name = "standin"\n' + body)


def load_agent_module():
    spec = importlib.util.spec_from_file_location("standin_agent_under_test", AGENT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wordings() -> dict:
    return tomllib.loads(PROFILE.read_text())["repair"]


def alive(p: dict) -> bool:
    """Whether a PID a window reported is still that process (a zombie counts as gone)."""
    try:
        proc = psutil.Process(p["pid"])
        return abs(proc.create_time() - p["create_time"]) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def requests(server) -> list[dict]:
    return [r.to_json() for r in server.records.of_kind("request")]


def texts(request: dict, role: str) -> list[str]:
    return [m["text"] for m in request["canonical"]["messages"] if m["role"] == role]


class Run:
    """One agent process."""

    def __init__(self, proc: asyncio.subprocess.Process, spawned: float):
        self.proc = proc
        self.spawned = spawned
        self.exited: float | None = None
        self._first = b""

    async def first_line(self) -> str:
        if not self._first:
            self._first = await asyncio.wait_for(self.proc.stderr.readline(), WAIT_S)
        return self._first.decode()

    async def session_id(self) -> str:
        line = await self.first_line()
        assert line.startswith("session: "), f"first stderr line is {line!r}"
        return line.split()[1]

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    async def finish(self) -> tuple[int, str, str]:
        out, err = await asyncio.wait_for(self.proc.communicate(), WAIT_S)
        self.exited = time.monotonic()
        return self.proc.returncode, out.decode(), (self._first + err).decode()


class Kit:
    """A store, a working folder, and every process started on them."""

    def __init__(self, root: Path):
        self.store = root / "store"
        self.cwd = root / "work"
        self.cwd.mkdir()
        self.key = f"sk-standin-canary-{secrets.token_hex(12)}"
        self.runs: list[Run] = []
        self.window_pids: list[dict] = []

    async def start(self, server, prompt: str, *, resume: str | None = None, timeout: float | None = None,
                    faults: tuple[str, ...] = ()) -> Run:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STANDIN_")}
        env.update(STANDIN_API_KEY=self.key, STANDIN_STORE=str(self.store), STANDIN_FAULTS=",".join(faults))
        argv = [sys.executable, str(AGENT), "--base-url", server.base_url, "--model", "stopbench-1",
                "--cwd", str(self.cwd)]
        if resume:
            argv += ["--resume", resume]
        if timeout:
            argv += ["--timeout", f"{timeout:g}"]
        spawned = time.monotonic()
        proc = await asyncio.create_subprocess_exec(*argv, "--", prompt, env=env, cwd=str(self.cwd),
                                                    stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE, start_new_session=True)
        run = Run(proc, spawned)
        self.runs.append(run)
        return run

    async def window(self, server, window_id: str = "w1") -> list[dict]:
        record = await waited(server.records.wait_window(window_id))
        self.window_pids.extend(record["pids"])
        return record["pids"]

    def document(self, session_id: str) -> dict:
        return json.loads(self.path(session_id).read_text())

    def path(self, session_id: str) -> Path:
        return self.store / f"{session_id}.json"

    async def close(self) -> None:
        for run in self.runs:
            if run.proc.returncode is None:
                try:
                    run.proc.kill()
                except ProcessLookupError:
                    pass
            await run.proc.wait()
        victims = []
        for p in self.window_pids:
            if alive(p):  # a zombie is dead already: whoever adopted it reaps it
                try:
                    proc = psutil.Process(p["pid"])
                    proc.kill()
                    victims.append(proc)
                except psutil.NoSuchProcess:
                    pass
        deadline = time.monotonic() + 10
        while [p for p in victims if running(p)]:
            assert time.monotonic() < deadline, f"processes survived SIGKILL: {victims}"
            await asyncio.sleep(0.01)


@pytest.fixture
async def kit(tmp_path):
    k = Kit(tmp_path)
    try:
        yield k
    finally:
        await k.close()


def serve(body: str) -> FakeServer:
    return FakeServer(scenario(body), seed="standin")


# --- completed turns --------------------------------------------------------------------------


async def test_completed_turn_exits_0_with_the_text(kit):
    async with serve(HELLO) as server:
        run = await kit.start(server, "Say hello.")
        session = await run.session_id()
        code, out, err = await run.finish()
    assert code == 0, err
    assert out == "Hello from the model: the answer is 42.\n"
    doc = kit.document(session)
    assert (doc["format"], doc["version"], doc["id"], doc["model"]) == ("standin-session", 1, session, "stopbench-1")
    assert doc["cwd"] == str(kit.cwd)
    assert [m["role"] for m in doc["messages"]] == ["system", "user", "assistant"]
    assert doc["messages"][-1]["content"] == "Hello from the model: the answer is 42."
    assert [(t["outcome"], t["first_message"]) for t in doc["turns"]] == [("completed", 1)]
    [request] = requests(server)
    assert request["canonical"]["stream"] is True and request["canonical"]["tools"] == ["bash"]
    assert request["headers"]["authorization"] == "[redacted]"
    assert kit.key not in json.dumps(request)
    assert not [f for f in kit.store.parent.rglob("*") if f.is_file() and kit.key.encode() in f.read_bytes()]


async def test_tool_round_trip_and_the_key_stays_out_of_tools(kit):
    body = """
[[responses]]
match = { last = "user" }
[[responses.frames]]
shell = "echo standin-$((6*7)) key=${STANDIN_API_KEY:-unset}"
[[responses]]
match = { last = "tool" }
[[responses.frames]]
text = "It printed standin-42."
"""
    async with serve(body) as server:
        run = await kit.start(server, "Run the echo.")
        session = await run.session_id()
        await waited(server.records.wait_request(2))
        code, out, err = await run.finish()
    assert code == 0, err
    assert out.strip() == "It printed standin-42."
    second = requests(server)[1]
    [result] = texts(second, "tool")
    assert result == "standin-42 key=unset\n[exit code 0]"
    doc = kit.document(session)
    call_id = doc["messages"][2]["tool_calls"][0]["id"]
    assert doc["tool_starts"][call_id]["pid"] > 0
    assert doc["messages"][3] | {"mono_ns": 0} == {"role": "tool", "tool_call_id": call_id, "content": result,
                                                   "exit_code": 0, "mono_ns": 0}


async def test_http_error_exits_2(kit):
    body = """
[[responses]]
[[responses.frames]]
http_error = 400
message = "Invalid request: the prompt is refused."
"""
    async with serve(body) as server:
        run = await kit.start(server, "Do something refused.")
        session = await run.session_id()
        code, _, err = await run.finish()
    assert code == 2
    assert "HTTP 400" in err and "the prompt is refused" in err
    assert [t["outcome"] for t in kit.document(session)["turns"]] == ["error"]
    assert len(requests(server)) == 1


# --- Stop and timeout ---------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_stop_inside_a_window_kills_the_whole_tree(kit, sig):
    async with serve(LONG_JOB) as server:
        run = await kit.start(server, "Run the long job.")
        session = await run.session_id()
        pids = await kit.window(server)
        assert {p["role"] for p in pids} == {"root", "child", "term-ignorer", "escapee"}
        assert all(alive(p) for p in pids)
        run.signal(sig)
        code, out, err = await run.finish()
        assert len(requests(server)) == 1, "a model request was sent after Stop"
    assert code == 3, err
    assert not [p for p in pids if alive(p)], "window processes outlived the Stop"
    assert not (kit.cwd / "stopbench-window-w1.done").exists()
    assert out.strip() == "I will run the long job now."
    doc = kit.document(session)
    assistant, result = doc["messages"][-2:]
    assert assistant["content"] == "I will run the long job now." and len(assistant["tool_calls"]) == 1
    assert result["tool_call_id"] == assistant["tool_calls"][0]["id"] and result["aborted"] is True
    assert result["content"].startswith(f"[aborted: the user stopped the turn ({sig.name})")
    assert f"its processes ({len(pids)}) were killed" in result["content"]
    [turn] = doc["turns"]
    assert (turn["outcome"], turn["stop"]["cause"]) == ("aborted", sig.name)
    assert turn["started_ns"] < turn["stop"]["at_ns"] < result["mono_ns"] <= turn["ended_ns"]


async def test_stop_in_the_first_call_starts_no_other(kit):
    async with serve(MIGRATION) as server:
        run = await kit.start(server, "Run the migration.")
        session = await run.session_id()
        pids = await kit.window(server)
        run.signal(signal.SIGINT)
        code, _, err = await run.finish()
        assert len(requests(server)) == 1
    assert code == 3, err
    assert not [p for p in pids if alive(p)]
    doc = kit.document(session)
    calls = doc["messages"][-3]["tool_calls"]
    first, second = doc["messages"][-2:]
    assert [first["tool_call_id"], second["tool_call_id"]] == [c["id"] for c in calls]
    assert first["aborted"] is True and first["content"].startswith("[aborted: the user stopped the turn (SIGINT)")
    assert second == {"role": "tool", "tool_call_id": calls[1]["id"], "aborted": True, "mono_ns": second["mono_ns"],
                      "content": "[not run: the turn was stopped before this command started]"}
    assert list(doc["tool_starts"]) == [calls[0]["id"]]
    assert "$ echo verify-migration" not in err


async def test_stop_mid_stream_keeps_the_partial_text(kit):
    async with serve(STREAMING) as server:
        run = await kit.start(server, "Write the report.")
        session = await run.session_id()
        await waited(server.records.wait_chunk(request=1, chunk=3))
        run.signal(signal.SIGINT)
        await waited(server.records.wait_disconnect(1))
        code, out, err = await run.finish()
        assert len(requests(server)) == 1, "a model request was sent after Stop"
    assert code == 3, err
    kept = kit.document(session)["messages"][-1]
    assert kept["role"] == "assistant" and kept["interrupted"] is True
    assert REPORT.startswith(kept["content"]) and len(kept["content"]) >= 18  # chunks 1-3 arrived before Stop
    assert len(kept["content"]) < len(REPORT)
    assert out.strip() == kept["content"].strip()
    assert [t["outcome"] for t in kit.document(session)["turns"]] == ["aborted"]


async def test_stop_mid_stream_then_resume_sends_the_partial_text_as_history(kit):
    async with serve(STREAMING) as server:
        run = await kit.start(server, "Write the report.")
        session = await run.session_id()
        await waited(server.records.wait_chunk(request=1, chunk=3))
        run.signal(signal.SIGINT)
        assert (await run.finish())[0] == 3
        kept = kit.document(session)["messages"][-1]["content"]
        server.load(scenario(HELLO))
        again = await kit.start(server, "Say hello again.", resume=session)
        assert await again.session_id() == session
        code, _, err = await again.finish()
    assert code == 0, err
    messages = requests(server)[1]["canonical"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "user"]
    assert messages[2]["text"] == kept
    assert "resumed" in messages[3]["text"] and messages[4]["text"] == "Say hello again."


@pytest.mark.slow(reason="the agent runs to its timeout")
async def test_timeout_exits_3_and_kills_the_tool(kit):
    async with serve(LONG_JOB) as server:
        run = await kit.start(server, "Run the long job.", timeout=1.5)
        session = await run.session_id()
        pids = await kit.window(server)
        code, _, err = await run.finish()
        assert len(requests(server)) == 1
    assert code == 3, err
    assert 1.5 <= run.exited - run.spawned < 1.5 + 1.5
    assert not [p for p in pids if alive(p)]
    doc = kit.document(session)
    assert doc["messages"][-1]["aborted"] is True
    assert doc["messages"][-1]["content"].startswith("[aborted: the run's timeout (1.5 s) expired")
    assert [(t["outcome"], t["stop"]["cause"]) for t in doc["turns"]] == [("interrupted", "timeout")]


# --- kill and resume ------------------------------------------------------------------------------


async def kill_in_window_then_resume(kit, server, faults=()) -> tuple[str, bytes, list[dict], Run]:
    """SIGKILL the agent inside window w1, then resume the session with a follow-up (not awaited)."""
    run = await kit.start(server, "Run the migration.", faults=faults)
    session = await run.session_id()
    pids = await kit.window(server)
    run.signal(signal.SIGKILL)
    code, _, _ = await run.finish()
    assert code == -signal.SIGKILL
    before = kit.path(session).read_bytes()
    assert all(alive(p) for p in pids), "the window should outlive a SIGKILLed agent"
    again = await kit.start(server, "The agent crashed. What happened to the migration?", resume=session,
                            faults=faults)
    return session, before, pids, again


async def test_sigkill_mid_tool_then_resume_is_balanced_and_repaired_in_memory(kit):
    repair = wordings()
    async with serve(MIGRATION) as server:
        session, before, pids, again = await kill_in_window_then_resume(kit, server)
        assert await again.session_id() == session
        request = await waited(server.records.wait_request(2))
        code, out, err = await again.finish()
    assert code == 0, err
    assert request["status"] == 200
    messages = request["canonical"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user", "user"]
    calls = messages[2]["tool_calls"]
    assert len(calls) == 2 and messages[2]["text"] == "Running the migration."
    assert [m["tool_call_id"] for m in messages[3:5]] == [c["id"] for c in calls]
    assert messages[3]["text"].startswith(repair["outcome_unknown"])
    assert messages[4]["text"].startswith(repair["not_started"])
    assert "session was resumed" in messages[5]["text"] and "may have changed" in messages[5]["text"]
    assert "Run the migration." in texts(request, "user")
    assert messages[6]["text"] == "The agent crashed. What happened to the migration?"
    assert out.strip() == "The migration's outcome is unknown; I will check the state first."
    # the resumed agent reaped what the unfinished command left running (advisory A2)
    assert not [p for p in pids if alive(p)]
    assert "were killed" in messages[5]["text"]
    # the disk keeps the honest record: earlier messages as they were, the crashed turn still open,
    # no repair result ever written
    old, new = json.loads(before), kit.document(session)
    assert new["messages"][:len(old["messages"])] == old["messages"]
    assert new["turns"][0] == old["turns"][0] and new["turns"][0]["ended"] is None
    assert [t["outcome"] for t in new["turns"]] == [None, "completed"]
    assert not [m for m in new["messages"] if m["role"] == "tool"]
    assert not [m for m in new["messages"] if str(m.get("content")).startswith("[interrupted")]
    assert list(old["tool_starts"]) == [calls[0]["id"]]


async def test_sigkill_mid_stream_then_resume_continues_the_session(kit):
    async with serve(STREAMING) as server:
        run = await kit.start(server, "Write the report.")
        session = await run.session_id()
        await waited(server.records.wait_chunk(request=1, chunk=3))
        run.signal(signal.SIGKILL)
        assert (await run.finish())[0] == -signal.SIGKILL
        server.load(scenario(HELLO))
        again = await kit.start(server, "Crashed again. Carry on.", resume=session)
        code, _, err = await again.finish()
    assert code == 0, err
    messages = requests(server)[1]["canonical"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "user", "user"]
    assert messages[1]["text"] == "Write the report." and "stopped before its turn ended" in messages[2]["text"]


async def test_a_model_that_cannot_be_reached_is_an_error(kit):
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    server = type("Nowhere", (), {"base_url": f"http://127.0.0.1:{port}/v1"})()
    run = await kit.start(server, "Say hello.")
    session = await run.session_id()
    code, _, err = await run.finish()
    assert code == 2 and "cannot connect to 127.0.0.1" in err
    assert [t["outcome"] for t in kit.document(session)["turns"]] == ["error"]


async def test_resume_of_an_unknown_session_exits_2(kit):
    async with serve(HELLO) as server:
        run = await kit.start(server, "Carry on.", resume="no-such-session")
        code, _, err = await run.finish()
        assert not requests(server)
    assert code == 2
    assert "no session 'no-such-session'" in err


@pytest.mark.parametrize("damage, problem", [
    ('"role": "us', "invalid JSON at line"),  # a cut string: not JSON at all
    ('"role": "usr"', "messages[1] is not a message with a known role"),  # JSON, but not a session
], ids=["invalid-json", "bad-message"])
async def test_resume_of_a_damaged_document_is_refused_and_left_untouched(kit, damage, problem):
    async with serve(HELLO) as server:
        run = await kit.start(server, "Say hello.")
        session = await run.session_id()
        assert (await run.finish())[0] == 0
        path = kit.path(session)
        text = path.read_text()
        middle = text.index('"role": "user"')
        damaged = (text[:middle] + damage + text[middle + len('"role": "user"'):]).encode()
        path.write_bytes(damaged)
        again = await kit.start(server, "Carry on.", resume=session)
        code, _, err = await again.finish()
        assert len(requests(server)) == 1
    assert code == 2
    assert f"{path}: damaged session document" in err and problem in err and "left as it is" in err
    assert path.read_bytes() == damaged
    assert sorted(p.name for p in kit.store.iterdir()) == [path.name]


# --- the profile and the switches -------------------------------------------------------------------


def test_profile_declares_the_agents_own_repair_wordings():
    from harness.profiles import parse_profile

    data = tomllib.loads(PROFILE.read_text())
    agent = load_agent_module()
    assert data["repair"] == {"outcome_unknown": agent.OUTCOME_UNKNOWN, "not_started": agent.NOT_STARTED}
    assert data["log_reader"] == "none" and "interactive" not in data and "inproc" not in data
    assert data["env"]["STANDIN_API_KEY"] == "{api_key}"
    assert not [a for a in data["headless"]["command"] if "api_key" in a]
    profile = parse_profile(data, PROFILE)
    assert profile.exit_codes["aborted"] == profile.exit_codes["interrupted"] == 3
    assert (profile.repair_outcome_unknown, profile.repair_not_started) == (agent.OUTCOME_UNKNOWN, agent.NOT_STARTED)


def test_list_faults_names_each_switch_and_its_check():
    import subprocess

    out = subprocess.run([sys.executable, str(AGENT), "--list-faults"], capture_output=True, text=True, timeout=WAIT_S)
    assert out.returncode == 0
    listed = {name: value["checks"] for name, value in json.loads(out.stdout).items()}
    assert listed == {"orphan-tools": ["C3"], "wrong-exit-codes": ["C8"], "key-leak": ["C13"],
                      "drop-dangling": ["C4"], "unanswered-dangling": ["C4"], "same-repair-wording": ["C14"],
                      "lose-partial": ["C5"], "request-after-stop": ["C9"], "blank-fork": ["C7"]}


async def test_an_unknown_fault_is_refused(kit):
    async with serve(HELLO) as server:
        run = await kit.start(server, "Say hello.", faults=("no-such-fault",))
        code, _, err = await run.finish()
        assert not requests(server)
    assert code == 2 and "unknown fault 'no-such-fault'" in err


# --- each fault switch produces its fault --------------------------------------------------------------


async def test_fault_orphan_tools_leaves_the_tree_alive(kit):
    async with serve(LONG_JOB) as server:
        run = await kit.start(server, "Run the long job.", faults=("orphan-tools",))
        pids = await kit.window(server)
        run.signal(signal.SIGINT)
        code, _, _ = await run.finish()
    assert code == 3
    assert all(alive(p) for p in pids)  # the kit kills them


@pytest.mark.slow(reason="the agent runs to its timeout")
@pytest.mark.parametrize("how", ["stop", "timeout"])
async def test_fault_wrong_exit_codes_exits_0_when_stopped(kit, how):
    async with serve(STREAMING) as server:
        run = await kit.start(server, "Write the report.", faults=("wrong-exit-codes",),
                              timeout=1.0 if how == "timeout" else None)
        session = await run.session_id()
        await waited(server.records.wait_chunk(request=1, chunk=3))
        if how == "stop":
            run.signal(signal.SIGINT)
        code, _, _ = await run.finish()
    assert code == 0
    assert [t["outcome"] for t in kit.document(session)["turns"]] == ["aborted" if how == "stop" else "interrupted"]


async def test_fault_key_leak_writes_the_key_into_the_store(kit):
    async with serve(HELLO) as server:
        run = await kit.start(server, "Say hello.", faults=("key-leak",))
        assert (await run.finish())[0] == 0
    leaks = [f.name for f in kit.store.parent.rglob("*") if f.is_file() and kit.key.encode() in f.read_bytes()]
    assert leaks == ["debug-requests.txt"]


async def test_fault_drop_dangling_drops_the_calls(kit):
    async with serve(MIGRATION) as server:
        session, _, _, again = await kill_in_window_then_resume(kit, server, ("drop-dangling",))
        request = await waited(server.records.wait_request(2))
        assert (await again.finish())[0] == 0
    messages = request["canonical"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "user"]
    assert messages[2]["tool_calls"] == [] and messages[2]["text"] == "Running the migration."
    assert len(kit.document(session)["messages"][2]["tool_calls"]) == 2  # the calls are in the session


async def test_fault_unanswered_dangling_sends_an_unbalanced_request(kit):
    async with serve(MIGRATION) as server:
        _, _, _, again = await kill_in_window_then_resume(kit, server, ("unanswered-dangling",))
        request = await waited(server.records.wait_request(2))
        code, _, err = await again.finish()
    assert request["status"] == 400 and "did not have response messages" in request["error"]
    assert code == 2 and "HTTP 400" in err


async def test_fault_same_repair_wording_answers_both_classes_alike(kit):
    repair = wordings()
    async with serve(MIGRATION) as server:
        _, _, _, again = await kill_in_window_then_resume(kit, server, ("same-repair-wording",))
        request = await waited(server.records.wait_request(2))
        assert (await again.finish())[0] == 0
    results = texts(request, "tool")
    assert len(results) == 2 and all(r.startswith(repair["outcome_unknown"]) for r in results)
    assert not [r for r in results if r.startswith(repair["not_started"])]


async def test_fault_lose_partial_discards_the_streamed_text(kit):
    async with serve(STREAMING) as server:
        run = await kit.start(server, "Write the report.", faults=("lose-partial",))
        session = await run.session_id()
        await waited(server.records.wait_chunk(request=1, chunk=3))
        run.signal(signal.SIGINT)
        code, out, _ = await run.finish()
    assert code == 3
    assert REPORT.startswith(out.strip()) and len(out.strip()) >= 18  # it was shown …
    assert [m["role"] for m in kit.document(session)["messages"]] == ["system", "user"]  # … and not kept


async def test_fault_request_after_stop_sends_one_more_request(kit):
    async with serve(STREAMING) as server:
        run = await kit.start(server, "Write the report.", faults=("request-after-stop",))
        await waited(server.records.wait_chunk(request=1, chunk=3))
        stop_ns = time.monotonic_ns()
        run.signal(signal.SIGINT)
        stray = await waited(server.records.wait_request(2))
        code, _, _ = await run.finish()
    assert code == 3
    assert stray["mono_ns"] > stop_ns and len(requests(server)) == 2


async def test_fault_blank_fork_starts_a_new_conversation(kit):
    async with serve(HELLO) as server:
        run = await kit.start(server, "Say hello.")
        session = await run.session_id()
        assert (await run.finish())[0] == 0
        again = await kit.start(server, "Carry on.", resume=session, faults=("blank-fork",))
        forked = await again.session_id()
        assert (await again.finish())[0] == 0
    assert forked != session
    assert texts(requests(server)[1], "user") == ["Carry on."]
