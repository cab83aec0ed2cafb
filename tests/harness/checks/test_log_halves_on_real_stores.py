"""The log halves of the checks that compare captures, on stores recorded from real agents
(tests/fixtures/agents/): what a store holds as written decides "lost" and "changed"."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.checks import run_check
from harness.checks.testing import RunBuilder, msg
from harness.model import LogCapture, Outcome
from harness.readers import READERS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents"
CLAUDE_KILL_TOOL = FIXTURES / "claude-code-2.1.197" / "kill-tool"
FOLLOW_UP = "follow-up: the last turn was cut off. What happened?"


class Bytes:
    """A store that is whatever bytes it was last given."""

    def __init__(self, data: bytes):
        self.data = data

    def to_bytes(self) -> bytes:
        return self.data


def recorded(folder: Path) -> bytes:
    (store,) = [p for p in folder.rglob("*.jsonl")]
    return store.read_bytes()


def claude_resume_after_kill() -> RunBuilder:
    """Claude Code killed in a tool, resumed with a follow-up: the resume parents the follow-up
    past the killed call, so the call's records leave the reloaded chain, untouched on disk."""
    killed, resumed = recorded(CLAUDE_KILL_TOOL / "killed"), recorded(CLAUDE_KILL_TOOL / "resumed")
    assert resumed.startswith(killed)  # the agent rewrote nothing
    store = Bytes(killed)
    run = RunBuilder(reader=READERS["claude-code"], store=store, log_path="claude.jsonl")
    run.user("Run the check command in the shell and tell me what it printed.")
    run.kill("window-opened")
    run.restart()
    run.user(FOLLOW_UP)
    store.data = resumed
    run.records.request([msg("user", "Run the check command in the shell and tell me what it printed."),
                         msg("user", FOLLOW_UP)])
    return run


def test_a_resume_that_reparents_rewrites_nothing():
    """C10 and C7's log half: the final store starts byte for byte with every capture, so no
    line was lost or rewritten, though the reader now reads the killed call as off the chain."""
    run = claude_resume_after_kill()
    obs = run.observation()
    assert obs.log is not None and any(e.get("off_chain") for e in obs.log.events)
    c10 = run_check("C10", obs)
    assert c10.outcome is Outcome.PASS, c10.evidence
    c7 = run_check("C7", obs)
    notes = [str(item.get("note")) for item in c7.evidence.items]
    assert not any("lost or changed" in n for n in notes), notes
    assert any("continued session" in n for n in notes), notes


def qwen_of_another_version() -> RunBuilder:
    """Qwen Code killed in a tool and resumed, its records stamped with a version the reader
    was not written for."""
    folder = FIXTURES / "qwen-code-0.15.10" / "kill-tool"
    killed, resumed = (recorded(folder / phase).replace(b'"version":"0.15.10"', b'"version":"0.99.1"')
                       for phase in ("killed", "resumed"))
    store = Bytes(killed)
    run = RunBuilder(reader=READERS["qwen-code"], store=store, log_path="qwen.jsonl")
    run.user("Run the check command in the shell and tell me what it printed.")
    run.kill("window-opened")
    run.restart()
    store.data = resumed
    return run


def test_a_store_version_the_reader_does_not_know_is_unknown_never_the_agents_failure():
    obs = qwen_of_another_version().observation()
    assert obs.log is None and obs.log_error is not None
    for check in ("C10", "C11", "C1", "C7"):
        verdict = run_check(check, obs)
        assert verdict.outcome is not Outcome.FAIL, (check, verdict.evidence)
    c10 = run_check("C10", obs)
    assert c10.outcome is Outcome.UNKNOWN
    assert "0.99.1" in c10.evidence.summary and "Qwen Code 0.15.x" in c10.evidence.summary


def test_a_torn_tail_left_in_place_before_a_new_line_is_read_not_refused():
    """Codex on log-torn-tail: the restart leaves the torn bytes and starts a new line, which
    its reader's continuation rule accepts; C10 and C7 read the store instead of failing.
    (C1 compares the store's wall-clock times with the kill's, which a hand-made run cannot line up.)"""
    reader = READERS["codex-rollout"]
    folder = FIXTURES / "codex-0.171.0" / "kill-tool"
    killed, resumed = recorded(folder / "killed"), recorded(folder / "resumed")
    store = Bytes(killed)
    run = RunBuilder(reader=reader, store=store, log_path="rollout.jsonl")
    run.user("Run the check command in the shell and tell me what it printed.")
    run.kill("window-opened")
    store.data = killed + reader.torn_fragment
    run.restart(damage="torn-tail", damage_line=killed.count(b"\n") + 1)
    store.data = killed + reader.torn_fragment + b"\n" + resumed[len(killed):]
    obs = run.observation()
    assert obs.log is not None and obs.log.cut_records
    assert run_check("C10", obs).outcome is Outcome.PASS, run_check("C10", obs).evidence
    assert run_check("C7", obs).outcome is not Outcome.FAIL, run_check("C7", obs).evidence


def test_no_store_at_a_kill_at_request_received_is_c11s_failure():
    """Killed as its first request arrived, the agent had written no store at all: that is the
    evidence that the request was not durable, not a capture the harness missed."""
    from .check_runs import kill_at_request

    run = kill_at_request("no-restart")
    (kill,) = run.kills
    run.kills[0] = dataclasses.replace(kill, log=run.capture("after kill 1", None))
    verdict = run_check("C11", run.observation())
    assert verdict.outcome is Outcome.FAIL, verdict.evidence
    assert "no session store at s-test.jsonl" in verdict.evidence.summary
    not_looked = dataclasses.replace(kill, log=LogCapture(moment="after kill 1", snapshot=None))
    run.kills[0] = not_looked
    assert run_check("C11", run.observation()).outcome is Outcome.UNKNOWN


def test_a_message_written_again_with_its_calls_rewrites_no_line():
    """Gemini CLI writes a model message when its text is complete and again, with its calls,
    once its tools have run: the reader's event for it grows, the lines written before stay."""
    lines = recorded(FIXTURES / "gemini-cli-0.61.0" / "completed").splitlines(keepends=True)
    first_version = b"".join(lines[:6])  # the message without its calls (line 5); line 7 repeats it
    store = Bytes(first_version)
    run = RunBuilder(reader=READERS["gemini-cli"], store=store, log_path="session.jsonl")
    run.user("Run the check command in the shell and tell me what it printed.")
    run.kill("chunk-flushed")
    store.data = b"".join(lines)
    obs = run.observation()
    assert obs.kills[0].log is not None and obs.kills[0].log.log is not None
    assert obs.kills[0].log.log.events[1].get("tool_calls") != obs.log.events[1].get("tool_calls")
    c10 = run_check("C10", obs)
    assert c10.outcome is Outcome.PASS, c10.evidence
