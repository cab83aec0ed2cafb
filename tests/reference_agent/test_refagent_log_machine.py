"""A state machine over the log: append, crash by truncating at any byte, reload.

Whatever the crash point: the log always reloads, every turn is settled in memory after
the reload, the next append never lands on a torn line, and no complete line written
before the crash ever changes.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fake_server import wire_chat
from reference_agent.api import replay
from reference_agent.log import LogWriter, load

HEADER = {"format": "contract-log", "version": 1, "session_id": "s-m", "created": "2026-11-29T00:00:00.000000Z",
          "cwd": "/tmp", "model": "m", "adapter": "inproc", "parent": None}


class LogMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="refagent-machine-"))
        self.path = self.dir / "s-m.jsonl"
        self.writer = LogWriter.create(self.path, HEADER)
        self.stable = self.path.read_bytes()  # complete lines that must never change
        self.turn = 0
        self.open = False
        self.calls = 0

    def teardown(self):
        self.writer.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _appended(self):
        data = self.path.read_bytes()
        assert data.endswith(b"\n"), "an append left a line unterminated"
        self.stable = data

    @precondition(lambda self: not self.open)
    @rule(text=st.text(max_size=30))
    def start_turn(self, text):
        self.turn += 1
        self.open = True
        self.writer.append("turn_started", turn=self.turn, input=text, inbox=[])
        self._appended()

    @precondition(lambda self: self.open)
    @rule(text=st.text(max_size=60), with_call=st.booleans(), started=st.booleans(), finished=st.booleans())
    def step(self, text, with_call, started, finished):
        self.calls += 1
        call_id = f"c{self.calls}"
        calls = [{"id": call_id, "name": "bash", "arguments": '{"command": "true"}'}] if with_call else []
        self.writer.append("model_request", turn=self.turn, step=1, request={"messages": []})
        self.writer.append("assistant_message", turn=self.turn, step=1, text=text, tool_calls=calls,
                           finish_reason="tool_calls" if calls else "stop", interrupted=False)
        if with_call and started:
            self.writer.append("tool_call", turn=self.turn, step=1, call_id=call_id, name="bash", arguments={})
            if finished:
                self.writer.append("tool_result", turn=self.turn, call_id=call_id, output="ok", exit_code=0, aborted=False)
        self._appended()

    @precondition(lambda self: self.open)
    @rule(reason=st.sampled_from(["completed", "aborted", "interrupted", "error"]))
    def end_turn(self, reason):
        self.writer.append("turn_ended", turn=self.turn, reason=reason)
        self.open = False
        self._appended()

    @rule(where=st.floats(min_value=0.0, max_value=1.0))
    def crash_and_reload(self, where):
        self.writer.close()
        data = self.path.read_bytes()
        header_end = data.index(b"\n") + 1
        cut = header_end + int((len(data) - header_end) * where)
        self.path.write_bytes(data[:cut])
        kept = data[: data.rindex(b"\n", 0, cut) + 1] if cut > header_end else data[:header_end]
        before = self.path.read_bytes()
        loaded = load(self.path)
        assert self.path.read_bytes() == before, "loading wrote to the log"
        state = replay(loaded)
        assert state.open_turn is None
        for turn in range(1, state.last_turn + 1):
            assert turn in state.endings, f"turn {turn} has no ending after reload"
        # The next request is balanced: the fake server's own strictness accepts it.
        wire_chat.parse({"model": "m", "messages": state.history.messages(), "stream": True})
        self.stable = kept
        self.turn = state.last_turn
        self.open = False
        self.writer = LogWriter.reopen(loaded)

    @invariant()
    def earlier_lines_never_change(self):
        assert self.path.read_bytes().startswith(self.stable)


TestLogMachine = LogMachine.TestCase
TestLogMachine.settings = settings(max_examples=40, stateful_step_count=25, deadline=None,
                                   suppress_health_check=[HealthCheck.too_slow])
TestLogMachine.pytestmark = [pytest.mark.slow(reason="hypothesis: forty runs of a state machine over the log")]
