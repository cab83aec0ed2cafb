"""``refagent acp``: the agent driven over the Agent Client Protocol on its stdio.

Each test starts the agent against the fake server and speaks JSON-RPC to it. Waits are on
messages, the server's records (chunks sent, windows running) and process state; a bound
only as a failsafe. "Nothing after the response" is shown by a later request's answer:
the agent handles messages in order, so whatever it would send for the turn comes first.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import psutil
import pytest
from refagent_testkit import CANARY_KEY, REFAGENT, alive, kill_pids, read_events, reset_signals, started_of

from reference_agent.acp_updates import replay_updates
from reference_agent.state import NOT_STARTED_TEXT, OUTCOME_UNKNOWN_TEXT

SCENARIO = """
name = "acp"
[[responses]]
match = { contains = "tool please" }
[[responses.frames]]
text = "Starting the job."
[[responses.frames]]
shell = { window = { id = "w1", depth = 2, fanout = 1, ignore_term = true, escape = true, hold_s = 120 } }
[[responses]]
match = { contains = "second tool" }
[[responses.frames]]
shell = { window = { id = "w2", depth = 1, fanout = 1, hold_s = 120 } }
[[responses]]
match = { contains = "quick tool" }
[[responses.frames]]
shell = "echo hi"
[[responses]]
match = { last = "tool" }
[[responses.frames]]
text = "Tool done."
[[responses]]
match = { contains = "stream please" }
[[responses.frames]]
text = "Streaming a long answer"
chunk = 4
[[responses.frames]]
stall = true
[[responses]]
match = { last = "user" }
repeat = true
[[responses.frames]]
text = "Plain answer."
"""

WAIT_S = 60  # failsafe only


class Client:
    """The test's side of the connection: requests out, every message in, kept in order."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.received: list[dict] = []
        self.last_id = 0

    async def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict | None = None) -> int:
        self.last_id += 1
        await self.send({"id": self.last_id, "method": method, "params": params or {}})
        return self.last_id

    async def notify(self, method: str, params: dict) -> None:
        await self.send({"method": method, "params": params})

    async def receive(self) -> dict | None:
        """The next message, or None at the end of the agent's output."""
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), WAIT_S)
        if not line:
            return None
        message = json.loads(line)
        self.received.append(message)
        return message

    async def until(self, predicate) -> dict:
        while True:
            message = await self.receive()
            assert message is not None, f"the agent's output ended; received: {self.received}"
            if predicate(message):
                return message

    async def response(self, request_id: int) -> dict:
        return await self.until(lambda m: m.get("id") == request_id and "method" not in m)

    async def call(self, method: str, params: dict | None = None) -> dict:
        return await self.response(await self.request(method, params))

    async def session_line(self) -> tuple[str, Path]:
        assert self.proc.stderr is not None
        line = (await asyncio.wait_for(self.proc.stderr.readline(), WAIT_S)).decode()
        assert line.startswith("refagent: session "), line
        _, _, session_id, path = line.split()
        return session_id, Path(path)

    def updates(self, since: int = 0) -> list[dict]:
        return [m["params"]["update"] for m in self.received[since:] if m.get("method") == "session/update"]


def text_of(updates: list[dict], kind: str) -> list[str]:
    return [u["content"]["text"] for u in updates if u["sessionUpdate"] == kind]


@pytest.fixture
async def acp(tmp_path, server_for):
    """``await acp(failpoints=...)`` → (Client, server): an agent serving ACP (killed at teardown)."""
    server = await server_for(SCENARIO)
    work = tmp_path / "work"
    work.mkdir()
    procs: list[asyncio.subprocess.Process] = []
    window_pids: list[int] = []
    started: dict[int, float] = {}  # PID -> create time, of the windows' processes

    async def start(failpoints: str = "") -> Client:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "REFAGENT_"))}
        if failpoints:
            env["REFAGENT_FAILPOINTS"] = failpoints
        proc = await asyncio.create_subprocess_exec(
            REFAGENT, "acp", "--adapter", "http", "--base-url", server.base_url, "--api-key", CANARY_KEY,
            "--sessions-dir", str(tmp_path / "sessions"), "--cwd", str(work),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=env, start_new_session=True, preexec_fn=reset_signals,
        )
        procs.append(proc)
        client = Client(proc)
        client.server, client.work = server, work  # type: ignore[attr-defined]
        client.window_pids, client.started = window_pids, started  # type: ignore[attr-defined]
        return client

    try:
        yield start
    finally:
        for proc in procs:  # end of input: the agent stops what runs and exits by itself
            if proc.returncode is None and proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.close()
        for proc in procs:
            try:
                await asyncio.wait_for(proc.wait(), WAIT_S)
            except TimeoutError:
                kill_pids([proc.pid])
                await proc.wait()
        kill_pids(alive(window_pids, started))
        assert alive(window_pids, started) == []


async def opened(client: Client) -> tuple[str, Path]:
    """initialize, then session/new: the session's id and log."""
    init = await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert init["result"]["protocolVersion"] == 1
    assert init["result"]["agentCapabilities"]["loadSession"] is True
    new = await client.call("session/new", {"cwd": str(client.work), "mcpServers": []})  # type: ignore[attr-defined]
    session_id, log = await client.session_line()
    assert new["result"] == {"sessionId": session_id}
    return session_id, log


def prompt(session_id: str, text: str) -> dict:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


async def answered_without_updates_after(client: Client, request_id: int) -> dict:
    """The prompt's response, and proof that nothing of its turn follows it (a later
    request's answer comes with no update before it)."""
    answer = await client.response(request_id)
    mark = len(client.received)
    await client.call("refagent/ping")
    assert client.updates(mark) == [], "a session/update came after the prompt's response"
    return answer


async def streaming(client: Client, session_id: str) -> int:
    """A prompt whose answer is streaming (its first update received, a second chunk sent,
    the rest stalled): its request id."""
    request_id = await client.request("session/prompt", prompt(session_id, "stream please"))
    await client.until(lambda m: m.get("method") == "session/update")
    await asyncio.wait_for(client.server.records.wait_chunk(request=1, chunk=2), WAIT_S)  # type: ignore[attr-defined]
    return request_id


async def cancelled_mid_stream(client: Client, session_id: str) -> dict:
    request_id = await streaming(client, session_id)
    await client.notify("session/cancel", {"sessionId": session_id})
    return await client.response(request_id)


async def cancelled_in_window(client: Client, session_id: str, cancel: bool = True) -> tuple[int, list[int]]:
    """A prompt whose bash window is running when session/cancel arrives (with ``cancel``):
    (request id, window PIDs)."""
    request_id = await client.request("session/prompt", prompt(session_id, "tool please"))
    record = await asyncio.wait_for(client.server.records.wait_window("w1"), WAIT_S)  # type: ignore[attr-defined]
    pids = [p.pid for p in record.pids]
    client.window_pids += pids  # type: ignore[attr-defined]
    client.started.update(started_of(record.to_json()))  # type: ignore[attr-defined]
    if cancel:
        await client.notify("session/cancel", {"sessionId": session_id})
    return request_id, pids


async def test_a_prompt_streams_its_answer_and_ends_the_turn(acp):
    client = await acp()
    session_id, log = await opened(client)
    answer = await answered_without_updates_after(
        client, await client.request("session/prompt", prompt(session_id, "hello")))
    assert answer["result"] == {"stopReason": "end_turn"}
    assert "".join(text_of(client.updates(), "agent_message_chunk")) == "Plain answer."
    assert all(m["params"]["sessionId"] == session_id for m in client.received if m.get("method"))
    ended = [e for e in read_events(log) if e["type"] == "turn_ended"]
    assert [e["reason"] for e in ended] == ["completed"]


async def test_a_bash_call_is_announced_run_and_completed_with_its_output(acp):
    client = await acp()
    session_id, _ = await opened(client)
    answer = await client.call("session/prompt", prompt(session_id, "quick tool"))
    assert answer["result"] == {"stopReason": "end_turn"}
    updates = client.updates()
    assert [(u["sessionUpdate"], u.get("status")) for u in updates] == [
        ("tool_call", "pending"), ("tool_call_update", "in_progress"), ("tool_call_update", "completed"),
        ("agent_message_chunk", None)]
    assert updates[0]["title"] == "bash: echo hi" and updates[0]["rawInput"] == {"command": "echo hi"}
    assert updates[2]["content"] == [{"type": "content", "content": {"type": "text", "text": "hi\n"}}]
    assert updates[2]["rawOutput"] == {"exitCode": 0, "aborted": False}
    assert updates[3]["content"]["text"] == "Tool done."


async def test_cancel_mid_stream_answers_cancelled_and_keeps_the_partial_text(acp):
    client = await acp()
    session_id, log = await opened(client)
    request_id = await streaming(client, session_id)
    await client.notify("session/cancel", {"sessionId": session_id})
    answer = await answered_without_updates_after(client, request_id)
    assert answer["result"] == {"stopReason": "cancelled"}
    events = read_events(log)
    partial = next(e for e in events if e["type"] == "assistant_message")
    assert partial["interrupted"] is True and partial["text"].startswith("Stre")
    assert "".join(text_of(client.updates(), "agent_message_chunk")) == partial["text"]
    assert [(e["reason"], e.get("source")) for e in events if e["type"] == "turn_ended"] == [("aborted", "user")]
    await asyncio.wait_for(client.server.records.wait_disconnect(request=1), WAIT_S)


async def test_cancel_in_a_bash_window_ends_its_tree_and_fails_the_call_before_the_answer(acp):
    client = await acp()
    session_id, log = await opened(client)
    request_id, pids = await cancelled_in_window(client, session_id)
    answer = await answered_without_updates_after(client, request_id)
    assert answer["result"] == {"stopReason": "cancelled"}
    assert alive(pids, client.started) == []
    calls = [u for u in client.updates() if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert calls[0]["sessionUpdate"] == "tool_call" and calls[0]["kind"] == "execute"
    assert calls[0]["status"] == "pending" and "fake_server.window" in calls[0]["rawInput"]["command"]
    assert [u.get("status") for u in calls[1:]] == ["in_progress", "failed"]
    assert calls[-1]["rawOutput"] == {"exitCode": None, "aborted": True}
    assert "aborted by Stop" in calls[-1]["content"][0]["content"]["text"]
    result = next(e for e in read_events(log) if e["type"] == "tool_result")
    assert result["aborted"] is True


async def test_end_of_input_stops_the_running_turn_answers_it_and_exits_0(acp):
    client = await acp()
    session_id, log = await opened(client)
    request_id = await streaming(client, session_id)
    client.proc.stdin.close()
    answer = await client.response(request_id)
    assert answer["result"] == {"stopReason": "cancelled"}
    assert await client.receive() is None
    assert await asyncio.wait_for(client.proc.wait(), WAIT_S) == 0
    assert [e["reason"] for e in read_events(log) if e["type"] == "turn_ended"] == ["aborted"]


async def test_sigterm_stops_the_running_turn_answers_it_and_exits_3(acp):
    client = await acp()
    session_id, _ = await opened(client)
    request_id = await streaming(client, session_id)
    client.proc.send_signal(signal.SIGTERM)
    assert (await client.response(request_id))["result"] == {"stopReason": "cancelled"}
    assert await asyncio.wait_for(client.proc.wait(), WAIT_S) == 3


async def test_sigint_stops_the_running_turn_and_serving_goes_on(acp):
    client = await acp()
    session_id, log = await opened(client)
    request_id = await streaming(client, session_id)
    client.proc.send_signal(signal.SIGINT)
    assert (await client.response(request_id))["result"] == {"stopReason": "cancelled"}
    assert (await client.call("session/prompt", prompt(session_id, "hello")))["result"] == {"stopReason": "end_turn"}
    ended = [(e["reason"], e.get("source")) for e in read_events(log) if e["type"] == "turn_ended"]
    assert ended == [("aborted", "user"), ("completed", None)]


async def test_cancel_request_naming_the_prompt_stops_its_turn(acp):
    client = await acp()
    session_id, log = await opened(client)
    request_id = await streaming(client, session_id)
    await client.notify("$/cancel_request", {"requestId": request_id + 1})  # another request: nothing happens
    await client.notify("$/cancel_request", {"requestId": request_id})
    assert (await answered_without_updates_after(client, request_id))["result"] == {"stopReason": "cancelled"}
    assert [e["reason"] for e in read_events(log) if e["type"] == "turn_ended"] == ["aborted"]


async def test_session_close_cancels_the_running_prompt_first(acp):
    client = await acp()
    session_id, _ = await opened(client)
    request_id, pids = await cancelled_in_window(client, session_id, cancel=False)
    close_id = await client.request("session/close", {"sessionId": session_id})
    answer = await client.response(request_id)
    assert answer["result"] == {"stopReason": "cancelled"}
    assert (await client.response(close_id))["result"] == {}
    assert alive(pids, client.started) == []
    assert (await client.call("session/prompt", prompt(session_id, "hello")))["error"]["code"] == -32002


async def test_after_kill_9_session_load_replays_every_turn_with_how_it_ended(acp):
    client = await acp()
    session_id, log = await opened(client)
    request_id, _ = await cancelled_in_window(client, session_id)
    await client.response(request_id)
    assert (await client.call("session/prompt", prompt(session_id, "hello")))["result"] == {"stopReason": "end_turn"}
    await client.request("session/prompt", prompt(session_id, "second tool"))
    record = await asyncio.wait_for(client.server.records.wait_window("w2"), WAIT_S)
    client.window_pids += [p.pid for p in record.pids]
    client.started.update(started_of(record.to_json()))
    client.proc.kill()  # SIGKILL mid-tool: the log never records this call's result
    await client.proc.wait()

    again = await acp()
    await again.call("initialize", {"protocolVersion": 1})
    loaded = await again.call("session/load", {"sessionId": session_id, "cwd": str(again.work), "mcpServers": []})
    assert loaded["result"] is None
    assert (await again.session_line())[0] == session_id
    replay = again.updates()
    assert all(m["params"]["sessionId"] == session_id for m in again.received if m.get("method"))
    assert text_of(replay, "user_message_chunk") == ["tool please", "hello", "second tool"]
    assert text_of(replay, "agent_message_chunk") == ["Starting the job.", "Plain answer."]
    calls = [u for u in replay if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert [(u["sessionUpdate"], u["status"]) for u in calls] == [
        ("tool_call", "pending"), ("tool_call_update", "failed"), ("tool_call", "pending"), ("tool_call_update", "failed")]
    assert calls[1]["rawOutput"] == {"exitCode": None, "aborted": True}  # as the Stop recorded it
    assert calls[3]["content"][0]["content"]["text"] == OUTCOME_UNKNOWN_TEXT  # the kill's repair
    # The resume SIGKILLed what the killed run left running (it does not wait for the ends).
    left = [psutil.Process(pid) for pid in alive(client.window_pids, client.started)]
    assert psutil.wait_procs(left, timeout=WAIT_S)[1] == []
    # The session goes on where it was: same log, and the next request carries the history.
    answer = await again.call("session/prompt", prompt(session_id, "follow-up"))
    assert answer["result"] == {"stopReason": "end_turn"}
    messages = again.server.records.of_kind("request")[-1].canonical["messages"]
    assert "tool please" in str(messages) and OUTCOME_UNKNOWN_TEXT[:40] in str(messages)
    assert [e["reason"] for e in read_events(log) if e["type"] == "turn_ended"] == ["aborted", "completed", "completed"]


async def test_session_load_of_a_damaged_log_is_an_error_naming_the_damage(acp):
    client = await acp()
    session_id, log = await opened(client)
    await client.call("session/prompt", prompt(session_id, "hello"))
    await client.call("session/close", {"sessionId": session_id})
    lines = log.read_bytes().split(b"\n")
    lines[2] = b"{not json"
    log.write_bytes(b"\n".join(lines))
    before = log.read_bytes()
    answer = await client.call("session/load", {"sessionId": session_id, "cwd": str(client.work), "mcpServers": []})
    assert answer["error"]["code"] == -32603
    assert f"{log}:3: not a JSON object" in answer["error"]["message"]
    assert answer["error"]["data"]["line"] == 3
    assert log.read_bytes() == before


async def test_protocol_errors_name_the_problem(acp):
    client = await acp()
    session_id, _ = await opened(client)
    assert (await client.call("session/fly", {}))["error"]["code"] == -32601
    assert (await client.call("session/prompt", prompt("s-none", "x")))["error"]["code"] == -32002
    image = {"sessionId": session_id, "prompt": [{"type": "image", "data": "", "mimeType": "image/png"}]}
    assert "prompt[0] is a 'image' block" in (await client.call("session/prompt", image))["error"]["message"]
    client.proc.stdin.write(b"{oops\n")
    assert (await client.receive())["error"]["code"] == -32700
    await client.notify("session/unknown_notification", {})  # a notification gets no answer
    mark = len(client.received)
    assert "result" in await client.call("session/new", {"cwd": str(client.work), "mcpServers": []})
    assert len(client.received) == mark + 1


def test_replay_closes_each_call_the_model_asked_for_as_its_history_does():
    """Two calls asked for; a kill after the first one's tool_call was recorded: the first
    one's outcome is unknown, the second never started (what the next request tells the model)."""
    calls = [{"id": "a", "name": "bash", "arguments": '{"command": "make"}'},
             {"id": "b", "name": "read_file", "arguments": '{"path": "out.txt"}'}]
    events = [
        {"type": "turn_started", "turn": 1, "input": "build it", "inbox": []},
        {"type": "assistant_message", "turn": 1, "text": "Building.", "tool_calls": calls},
        {"type": "tool_call", "turn": 1, "call_id": "a", "name": "bash", "arguments": {"command": "make"}},
        {"type": "tool_started", "turn": 1, "call_id": "a", "pid": 1, "pgid": 1, "tag": "t"},
        {"type": "turn_started", "turn": 2, "input": "again?", "inbox": []},
    ]
    replay = replay_updates(events)
    assert [(u["sessionUpdate"], u.get("toolCallId"), u.get("status")) for u in replay] == [
        ("user_message_chunk", None, None), ("agent_message_chunk", None, None),
        ("tool_call", "a", "pending"), ("tool_call", "b", "pending"),
        ("tool_call_update", "a", "failed"), ("tool_call_update", "b", "failed"),
        ("user_message_chunk", None, None)]
    assert replay[2]["kind"] == "execute" and replay[2]["rawInput"] == {"command": "make"}
    assert replay[3]["kind"] == "read" and replay[3]["locations"] == [{"path": "out.txt"}]
    assert [u["content"][0]["content"]["text"] for u in replay[4:6]] == [OUTCOME_UNKNOWN_TEXT, NOT_STARTED_TEXT]


async def test_a_request_that_fails_inside_the_agent_is_answered_and_serving_goes_on(acp, tmp_path):
    (tmp_path / "sessions").write_text("")  # a file where the sessions folder should be
    client = await acp()
    await client.call("initialize", {"protocolVersion": 1})
    answer = await client.call("session/new", {"cwd": str(client.work), "mcpServers": []})
    assert answer["error"]["code"] == -32603 and "sessions" in answer["error"]["message"]
    assert "result" in await client.call("initialize", {"protocolVersion": 1})


# --- the failpoints: each is a wrong behaviour the harness must catch ----------------------

async def test_failpoint_acp_cancel_ends_turn_answers_end_turn(acp):
    client = await acp("acp-cancel-ends-turn")
    session_id, _ = await opened(client)
    assert (await cancelled_mid_stream(client, session_id))["result"] == {"stopReason": "end_turn"}


async def test_failpoint_acp_updates_after_cancel_sends_the_failed_call_after_the_answer(acp):
    client = await acp("acp-updates-after-cancel")
    session_id, _ = await opened(client)
    request_id, _ = await cancelled_in_window(client, session_id)
    answer = await client.response(request_id)
    assert answer["result"] == {"stopReason": "cancelled"}
    late = await client.receive()
    assert late["method"] == "session/update" and late["params"]["update"]["status"] == "failed"


async def test_failpoint_acp_prompt_never_resolves_leaves_the_cancelled_prompt_unanswered(acp):
    client = await acp("acp-prompt-never-resolves")
    session_id, log = await opened(client)
    request_id = await streaming(client, session_id)
    await client.notify("session/cancel", {"sessionId": session_id})
    client.proc.stdin.close()  # the agent settles the turn and exits: its whole output is then known
    while await client.receive() is not None:
        pass
    assert [m for m in client.received if m.get("id") == request_id] == []
    assert [e["reason"] for e in read_events(log) if e["type"] == "turn_ended"] == ["aborted"]


async def test_failpoint_acp_load_forgets_interrupted_replays_only_the_completed_turns(acp):
    client = await acp("acp-load-forgets-interrupted")
    session_id, _ = await opened(client)
    request_id, _ = await cancelled_in_window(client, session_id)
    await client.response(request_id)
    await client.call("session/prompt", prompt(session_id, "hello"))
    mark = len(client.received)
    await client.call("session/load", {"sessionId": session_id, "cwd": str(client.work), "mcpServers": []})
    assert text_of(client.updates(mark), "user_message_chunk") == ["hello"]
