"""The log halves of the checks that compare captures, on stores recorded from real agents
(tests/fixtures/agents/): what a store holds as written decides "lost" and "changed"."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.checks import run_check
from harness.model import LogCapture, Outcome
from harness.readers import READERS
from tests.harness.checks.observations import RunBuilder, call, msg

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


CODEX_PARALLEL = FIXTURES / "codex-0.171.0" / "kill-tool-parallel"
MIGRATION = "Run the migration."


def codex_killed_beside_a_finished_call() -> RunBuilder:
    """Codex 0.171.0 on interrupt-restart, recorded: the response asks for the window w1 and
    ``echo verify-migration``; Codex ran both at once, the echo finished (its ``item_completed``
    line, exit 0) and the kill came in w1 before Codex wrote any output line. The resumed request
    answers both calls ``aborted``."""
    from harness.profiles import load_profile

    profile = load_profile("codex")
    killed, resumed = recorded(CODEX_PARALLEL / "killed"), recorded(CODEX_PARALLEL / "resumed")
    assert resumed.startswith(killed)
    store = Bytes(killed)
    run = RunBuilder(reader=READERS["codex-rollout"], store=store, log_path="rollout.jsonl")
    run.conventions = dataclasses.replace(run.conventions, repair_outcome_unknown=profile.repair_outcome_unknown,
                                          repair_not_started=profile.repair_not_started)
    window_call = call("call_98a727000001", "python3 -m fake_server.window --id w1")
    echo_call = call("call_98a727000002", "echo verify-migration")
    run.user(MIGRATION)
    run.records.request([msg("user", MIGRATION)])
    run.records.response(1, "Running the migration.", [window_call, echo_call])
    run.records.window("w1", [32148, 32150])
    run.kill("window-opened")
    run.restart()
    run.user("The agent crashed. What happened to the migration?")
    store.data = resumed
    run.records.request([msg("user", MIGRATION), msg("assistant", "Running the migration.", [window_call, echo_call]),
                         msg("tool", "aborted", tool_call_id="call_98a727000001"),
                         msg("tool", "aborted", tool_call_id="call_98a727000002"),
                         msg("user", "The agent crashed. What happened to the migration?")])
    return run


def test_a_call_codex_finished_beside_the_killed_one_is_known_finished():
    """The echo's ``item_completed`` line is the durable record that it ran to its end: C14 fails
    the ``aborted`` answer as a finished call answered with a repair, and does not rest on a
    not-started wording no run showed."""
    obs = codex_killed_beside_a_finished_call().observation()
    (kill,) = obs.kills
    assert kill.log is not None and kill.log.log is not None
    results = {e.get("call_id"): e for e in kill.log.log.of_type("tool_result")}
    assert results["call_98a727000002"].get("output") == "verify-migration\n"
    assert results["call_98a727000002"].get("exit_code") == 0
    assert "call_98a727000001" not in results
    c14 = run_check("C14", obs)
    assert c14.outcome is Outcome.FAIL, c14.evidence
    assert "call_98a727000002 finished before the kill" in c14.evidence.summary, c14.evidence.summary
    assert "one wording for both" not in c14.evidence.summary
    failed = {i.get("call_id") for i in c14.evidence.items if i.get("note")}
    assert failed == {"call_98a727000002"}, c14.evidence.items  # w1's "aborted" is its outcome unknown


def gemini_killed_in_a_tool_it_never_recorded() -> RunBuilder:
    """Gemini CLI 0.61.0 killed while window w1 ran, recorded: the store holds the model's text
    and no call (it writes a call once its tool has finished); the resumed request has the text
    and not the call."""
    folder = FIXTURES / "gemini-cli-0.61.0" / "kill-tool"
    killed, resumed = recorded(folder / "killed"), recorded(folder / "resumed")
    store = Bytes(killed)
    run = RunBuilder(reader=READERS["gemini-cli"], store=store, log_path="session.jsonl")
    c1 = call("call_bcd37b000001", "python3 -m fake_server.window --id w1")
    prompt = "Run the check command in the shell and tell me what it printed."
    run.user(prompt)
    run.records.request([msg("user", prompt)])
    run.records.response(1, "Starting the long check.", [c1])
    run.records.window("w1", [4101, 4102])
    run.kill("window-opened")
    run.restart()
    run.user(FOLLOW_UP)
    store.data = resumed
    run.records.request([msg("user", prompt), msg("assistant", "Starting the long check."), msg("user", FOLLOW_UP)])
    return run


def test_a_call_the_store_never_held_is_one_defect_for_c4_c7_and_c11():
    """The call dropped from the resumed request (C4) is the call the store left by the kill never
    held (C11's log half): one fact, one counted failure; C7 and C11 follow from C4's."""
    from harness.checks import run_checks

    results = {r.check: r for r in run_checks(gemini_killed_in_a_tool_it_never_recorded().observation())}
    assert results["C4"].counts_as_failure, results["C4"].evidence
    assert results["C11"].outcome is Outcome.FAIL, results["C11"].evidence
    assert results["C11"].consequence_of == "C4", [(c, r.facts) for c, r in results.items()
                                                   if r.outcome is Outcome.FAIL]
    assert results["C7"].outcome is not Outcome.FAIL or results["C7"].consequence_of == "C4"
