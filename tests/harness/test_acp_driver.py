"""The acp driver end to end: stopbench as an ACP client of the stand-in agent's ACP mode
(``standin_agent.py --acp``, an ACP implementation written apart from the driver), against
the fake server. A conformant agent passes what the protocol shows (C1 prompts answered
once, C3 a stopped tool reported failed, C5, C9, C12 a cancel answered ``cancelled``) and
what its session/load replay keeps (C7, C11); each fault switch fails the check it breaks
and no other mandatory check; a protocol breach is recorded, never a crash."""

import asyncio
import dataclasses
import json
import re
from pathlib import Path

import pytest

from harness.contract import STOPPED_REASONS
from harness.model import Outcome, RunStatus, TaskResult
from harness.profiles import ProfileError, load_profile, parse_profile
from harness.run.planning import WorkItem
from harness.run.runner import ItemOutcome, run_item
from harness.tasks import TASKS_DIR, load_task

PROFILE = Path(__file__).parents[1] / "standin" / "standin_acp.toml"

# fault switch, task, the one mandatory check it must fail
FAULTS = [
    ("acp-cancel-end-turn", "http-stream-cancel", "C12"),
    ("acp-update-after-cancel", "http-stream-cancel", "C9"),
    ("acp-prompt-hangs", "http-stream-cancel", "C1"),
    ("acp-stopped-tool-completed", "interrupt-cancel", "C3"),
    ("acp-load-forgets-killed", "interrupt-restart", "C11"),
    ("acp-no-load", "interrupt-restart", "C7"),
]


@pytest.fixture(scope="module")
def profile():
    return load_profile(PROFILE)


def run_outcome(profile, task: str, mutant: str | None = None) -> ItemOutcome:
    work = WorkItem(load_task(TASKS_DIR / task), "acp", "http", 1, mutant=mutant)
    return asyncio.run(run_item(profile, work))


def run(profile, task: str, mutant: str | None = None) -> TaskResult:
    return run_outcome(profile, task, mutant).result


def outcomes(result: TaskResult) -> dict[str, Outcome]:
    return {c.check: c.outcome for c in result.checks}


def counted_failures(result: TaskResult) -> list[str]:
    """The mandatory checks that failed on a fact of their own (consequences excluded)."""
    return [c.check for c in result.checks if c.counts_as_failure and c.tier.value == "mandatory"]


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP")
def test_a_conformant_agent_passes_what_acp_shows_of_stop(profile):
    result = run(profile, "interrupt-cancel")
    assert result.status is RunStatus.RAN, result.reason
    seen = outcomes(result)
    assert all(seen[c] is Outcome.PASS for c in ("C1", "C3", "C5", "C9", "C12")), seen
    assert not counted_failures(result)
    c12 = next(c for c in result.checks if c.check == "C12")
    settled = [i for i in c12.evidence.items if "settlement" in i]
    assert settled and all(i["settlement"].startswith("ACP transcript: session/prompt") for i in settled)
    assert {i["reason"] for i in settled} <= STOPPED_REASONS
    assert all(i["seen_in"] == "ACP transcript" for i in settled) and c12.decided_by.value == "black-box"
    c1 = next(c for c in result.checks if c.check == "C1")
    assert all(i.get("seen_in") == "ACP transcript" for i in c1.evidence.items)


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP")
def test_the_transcript_keeps_every_message_both_ways_in_time_order(profile):
    outcome = run_outcome(profile, "http-stream-cancel")
    result = outcome.result
    messages = result.evidence["acp"]["messages"]
    methods = [m["line"] for m in messages if m["dir"] == "sent"]
    assert any('"session/cancel"' in line for line in methods)
    assert any('"stopReason":"cancelled"' in m["line"].replace(" ", "") for m in messages if m["dir"] == "received")
    times = [m["mono_ns"] for m in messages]
    assert times == sorted(times)
    assert result.evidence["acp"]["problems"] == []
    assert result.evidence["session"]["found_by"].startswith("the sessionId session/new answered")
    # session/cancel → the server sees the stream closed (L2), and → the prompt's answer beside it;
    # L1 is the in-process abort: an agent over a protocol is not timed as one
    timed = {s.latency: s for s in outcome.latencies + outcome.concurrent}
    assert "L2" in timed and "L1" not in timed and timed["L2"].detail["driver"] == "acp"
    assert timed["L2"].value_ns > 0 and timed["L2"].detail["to_settlement_ns"] > 0


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP, killed and loaded twice")
def test_the_session_load_replay_is_the_durable_history_the_log_checks_read(profile):
    result = run(profile, "interrupt-restart")
    assert result.status is RunStatus.RAN, result.reason
    seen = {c.check: c for c in result.checks}
    for check in ("C7", "C11"):
        assert seen[check].outcome is Outcome.PASS, seen[check].evidence
        assert seen[check].decided_by.value in ("log", "both")
    assert seen["C2"].outcome is Outcome.PASS
    assert not counted_failures(result)


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP, killed and loaded twice")
def test_a_replay_ends_with_the_loads_answer(profile, tmp_path):
    """The stand-in sends the session's commands in the same write as its answer to a load,
    as opencode does: read with the answer, they are still no part of the replay."""
    work = WorkItem(load_task(TASKS_DIR / "interrupt-restart"), "acp", "http", 1)
    result = asyncio.run(run_item(profile, work, keep=tmp_path)).result
    replays = sorted(Path(result.evidence["run_dir"]).glob("acp-replays/replay-*.jsonl"))
    assert replays
    for replay in replays:
        kinds = [json.loads(line).get("sessionUpdate") for line in replay.read_text().splitlines()[1:]]
        assert "user_message_chunk" in kinds and "available_commands_update" not in kinds, (replay.name, kinds)
    assert outcomes(result)["C2"] is Outcome.PASS


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP per fault")
@pytest.mark.parametrize("fault, task, check", FAULTS, ids=[f[0] for f in FAULTS])
def test_each_fault_fails_its_check_and_no_other(profile, fault, task, check):
    result = run(profile, task, mutant=fault)
    assert result.status is RunStatus.RAN, result.reason
    failed = next(c for c in result.checks if c.check == check)
    assert failed.outcome is Outcome.FAIL, f"{fault} survived {check}: {failed.evidence}"
    assert failed.evidence.items
    assert counted_failures(result) == [check]


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP")
def test_a_line_that_is_not_json_and_an_answer_to_nothing_are_recorded_not_fatal(profile):
    noisy = dataclasses.replace(profile, env={**profile.env, "STANDIN_ACP_NOISE": "yes"})
    result = run(noisy, "http-stream-cancel")
    assert result.status is RunStatus.RAN, result.reason
    assert not counted_failures(result)
    problems = [p["problem"] for p in result.evidence["acp"]["problems"]]
    assert "a line that is not JSON" in problems
    assert "a response to no request of the client" in problems


def with_acp(profile, **choices):
    assert profile.acp is not None
    return dataclasses.replace(profile, acp=dataclasses.replace(profile.acp, **choices))


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP")
def test_stop_as_cancel_request_names_the_prompt_and_settles_cancelled(profile):
    result = run(with_acp(profile, cancel="$/cancel_request"), "http-stream-cancel")
    sent = [json.loads(m["line"]) for m in result.evidence["acp"]["messages"] if m["dir"] == "sent"]
    prompt = next(m for m in sent if m.get("method") == "session/prompt")
    cancel = next(m for m in sent if m.get("method") in ("session/cancel", "$/cancel_request"))
    assert cancel == {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": prompt["id"]}}
    assert outcomes(result)["C12"] is Outcome.PASS and not counted_failures(result)


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP, killed twice")
def test_a_restart_by_session_resume_continues_the_session_without_a_replay(profile):
    result = run(with_acp(profile, resume_method="session/resume"), "interrupt-restart")
    assert result.status is RunStatus.RAN, result.reason
    sent = [json.loads(m["line"]).get("method") for m in result.evidence["acp"]["messages"] if m["dir"] == "sent"]
    assert sent.count("session/resume") == 2 and "session/load" not in sent
    assert outcomes(result)["C7"] is Outcome.PASS and not counted_failures(result)
    assert result.evidence["log_path"] is None  # nothing was replayed: no durable history to read


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP")
def test_a_permission_asked_for_a_stopped_turn_is_answered_cancelled(profile):
    asking = dataclasses.replace(profile, env={**profile.env, "STANDIN_ACP_ASK_AFTER_CANCEL": "yes"})
    result = run(asking, "interrupt-cancel")
    messages = [json.loads(m["line"]) for m in result.evidence["acp"]["messages"]]
    asked = [m["id"] for m in messages if m.get("method") == "session/request_permission"]
    answers = {m["id"]: m["result"]["outcome"] for m in messages if "method" not in m and m.get("id") in asked
               and "result" in m and isinstance(m["result"], dict) and "outcome" in m["result"]}
    assert answers[asked[0]] == {"outcome": "selected", "optionId": "allow"}  # before the Stop: allowed
    assert answers[asked[1]] == {"outcome": "cancelled"}  # the stopped call, asked again after the Stop
    assert not counted_failures(result)


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP")
def test_a_call_first_announced_by_its_permission_request_is_judged_at_stop(profile):
    """Gemini CLI announces a call only in the permission request that carries it: a call
    running at Stop it then reports completed is still seen running at Stop (C3)."""
    announcing = dataclasses.replace(profile, env={**profile.env, "STANDIN_ACP_ANNOUNCE": "permission"})
    result = run(announcing, "interrupt-cancel", mutant="acp-stopped-tool-completed")
    c3 = next(c for c in result.checks if c.check == "C3")
    assert c3.outcome is Outcome.FAIL, c3.evidence
    assert "was reported completed" in c3.evidence.summary + str(c3.evidence.items)


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP")
def test_a_prompt_answered_after_the_run_failed_is_settled(profile):
    """The server refuses the request after a Stop, so the run ends before the next prompt is
    settled; the agent still answered that prompt, and C1 judges the answer it read. The
    refused request's history could not be read: C5 cannot tell whether it kept the text."""
    forgetting = dataclasses.replace(profile, env={**profile.env, "STANDIN_ACP_FORGET_STOPPED": "yes"})
    result = run(forgetting, "interrupt-cancel")
    assert "the server refused request 2" in (result.reason or ""), result.reason
    c1, c5 = (next(c for c in result.checks if c.check == name) for name in ("C1", "C5"))
    assert c1.outcome is Outcome.PASS, c1.evidence
    assert c5.outcome is Outcome.UNKNOWN and "refused" in c5.evidence.summary, c5.evidence


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP")
def test_a_prompt_answered_after_the_steps_are_over_is_waited_for_at_close(profile):
    """The run ended (the server refused the request after a Stop) while the agent was still to
    answer its prompt: the client waits for that answer before it ends the agent, so whether C1
    reads it does not depend on which comes first, the harness's close or the agent's answer."""
    slow = dataclasses.replace(profile, env={**profile.env, "STANDIN_ACP_FORGET_STOPPED": "yes",
                                             "STANDIN_ACP_ANSWER_DELAY_S": "0.5"})
    result = run(slow, "interrupt-cancel")
    assert "the server refused request 2" in (result.reason or ""), result.reason
    c1 = next(c for c in result.checks if c.check == "C1")
    assert c1.outcome is Outcome.PASS, c1.evidence


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP, killed and loaded twice")
def test_call_ids_minted_per_process_are_read_as_the_models_call_ids(profile):
    """kimi-cli names a call "<uuid>/<call id>" with a uuid each process draws anew: the
    profile's call_id_regex names the model's call id in it, so replays of one history match."""
    minting = dataclasses.replace(with_acp(profile, call_id_regex="/(?P<id>[^/]+)$"),
                                  env={**profile.env, "STANDIN_ACP_CALL_IDS": "per-process"})
    result = run(minting, "interrupt-restart")
    assert result.status is RunStatus.RAN, result.reason
    for check in ("C2", "C7", "C10", "C11"):
        assert outcomes(result)[check] is Outcome.PASS, (check, result.checks)
    assert not counted_failures(result)


@pytest.mark.parametrize("key, value, problem", [
    ("cancel", "interrupt", "acp.cancel: 'interrupt' is not one of session/cancel, $/cancel_request"),
    ("resume_method", "session/fork", "acp.resume_method: 'session/fork' is not one of session/load, session/resume"),
    ("permission", "ask", "acp.permission: 'ask' is not one of allow, reject"),
    ("stop_on", "x", "acp.stop_on: unknown key in [acp]"),
    ("call_id_regex", "/(?P<call>.+)", "acp.call_id_regex: needs the named group(s) id"),
])
def test_a_bad_acp_section_is_refused_naming_the_item(key, value, problem):
    data = {"name": "x", "acp": {"command": ["agent", "--acp"], key: value}}
    with pytest.raises(ProfileError, match=re.escape(problem)):
        parse_profile(data, "x.toml")


def test_an_acp_section_alone_makes_a_profile_driven_by_acp_only():
    profile = parse_profile({"name": "x", "acp": {"command": ["agent", "--acp", "-m", "{model}"]}}, "x.toml")
    assert profile.drivers() == ["acp"]
    assert profile.acp is not None and profile.acp.render({"model": "m"}) == ["agent", "--acp", "-m", "m"]
    assert (profile.acp.cancel, profile.acp.resume_method, profile.acp.permission) == (
        "session/cancel", "session/load", "allow")


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP, killed twice")
def test_with_the_native_reader_no_load_is_made_behind_the_captures_back(profile):
    result = run(with_acp(profile, reader="native"), "interrupt-restart")
    assert result.status is RunStatus.RAN, result.reason
    roles = [p["role"] for p in result.evidence["processes"]]
    assert roles == ["chat", "resume", "resume"], roles  # no load after a kill, none at the end
    assert outcomes(result)["C7"] is Outcome.PASS and not counted_failures(result)


@pytest.mark.slow(reason="a task run of the stand-in agent over ACP")
def test_an_error_answer_to_session_new_is_the_agents_failure_not_the_harness(profile):
    locked = dataclasses.replace(profile, env={**profile.env, "STANDIN_ACP_AUTH": "required"})
    result = run(locked, "http-stream-cancel")
    assert result.status is RunStatus.RAN, result.reason
    assert "session/new answered error -32000: Authentication required" in result.reason
    assert result.evidence["agent_failure"]["exit"]["role"] == "chat"
