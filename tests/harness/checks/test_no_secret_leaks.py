"""C13: the canary key, wherever it leaked, fails the run, once per leak; the profile's own
files are the harness's, not leaks; the evidence is masked only where results are written."""

import dataclasses

import pytest

from harness.checks import run_check
from harness.model import CanaryHit, Outcome
from tests.harness.checks.observations import CANARY

from .check_runs import kill_in_tool, leaky_run, stop_in_tool


def test_clean_run_passes(no_canary_in):
    result = run_check("C13", kill_in_tool().observation())
    assert result.outcome is Outcome.PASS and "appears nowhere" in result.evidence.summary
    assert result.decided_by.value == "black-box"
    no_canary_in(result)


def test_key_in_the_session_header_fails_once(no_canary_in):
    run = leaky_run("header")
    run.canary("sessions/s-test.jsonl", 1, f'{{"api_key": "{CANARY}"}}')  # the runner's scan finds it too
    result = run_check("C13", run.observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == "the API key leaked into sessions/s-test.jsonl line 1"
    assert len(result.evidence.items) == 1  # one leak, one item: not again from the parsed log
    assert CANARY in result.evidence.items[0]["excerpt"]  # raw: the mask is the writer's
    no_canary_in(result)


def test_a_leak_in_a_capture_and_the_final_log_is_one_leak():
    run = kill_in_tool()
    run.log.lines[1] = run.log.lines[1].replace(b'"inbox": []', f'"inbox": [], "key": "{CANARY}"'.encode())
    obs = run.observation()
    fresh = kill_in_tool()
    fresh.log.lines[1] = run.log.lines[1]
    capture = fresh.capture("after kill 1")
    obs = dataclasses.replace(obs, kills=(dataclasses.replace(obs.kills[0], log=capture),))
    result = run_check("C13", obs)
    assert result.outcome is Outcome.FAIL
    assert [(i["where"], i["line"]) for i in result.evidence.items] == [("the session store", 2)]


@pytest.mark.parametrize("where, override", [
    ("transcript", lambda obs: {"transcript": f"you> hi\nusing key {CANARY}\n"}),
    ("home/.refagent/config", lambda obs: {"canary_hits": (CanaryHit("home/.refagent/config", 2, f"key={CANARY}"),)}),
    ("request 3 sent to the model", lambda obs: {"records": obs.records + (
        dataclasses.replace(obs.requests()[0], request=3, body={"messages": [{"role": "user", "content": CANARY}]}),)}),
    ("stderr of run pid 4343", lambda obs: {"exits": (dataclasses.replace(stop_in_tool().exits[0],
                                                                          stderr_tail=f"auth {CANARY}"),)}),
    ("stdout of run pid 4343", lambda obs: {"exits": (dataclasses.replace(stop_in_tool().exits[0],
                                                                          stdout_tail=f"key: {CANARY}"),)}),
    ("command line of run pid 4343", lambda obs: {"exits": (dataclasses.replace(
        stop_in_tool().exits[0], argv=("refagent", "run", "--api-key", CANARY)),)}),
])
def test_key_anywhere_fails(where, override, no_canary_in):
    obs = kill_in_tool().observation()
    result = run_check("C13", dataclasses.replace(obs, **override(obs)))
    assert result.outcome is Outcome.FAIL, result.evidence.summary
    assert [i["where"] for i in result.evidence.items] == [where]
    no_canary_in(result)


def test_a_file_the_profile_wrote_is_the_harness_s_own_not_a_leak(no_canary_in):
    run = kill_in_tool()
    run.canary("home/.config/agent/auth.json", 3, f'"key": "{CANARY}"', profile_file=True)
    result = run_check("C13", run.observation())
    assert result.outcome is Outcome.PASS
    own = [i for i in result.evidence.items if i.get("where") == "home/.config/agent/auth.json"]
    assert own and "the harness's own, not a leak" in own[0]["note"]
    run.canary("home/.config/agent/copy.json", 1, f'"key": "{CANARY}"')  # the agent copied it elsewhere
    result = run_check("C13", run.observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == "the API key leaked into home/.config/agent/copy.json line 1"
    no_canary_in(result)


def test_the_auth_header_itself_is_not_a_leak():
    obs = kill_in_tool().observation()
    record = dataclasses.replace(obs.requests()[0], headers={"Authorization": f"Bearer {CANARY}"})
    assert run_check("C13", dataclasses.replace(obs, records=(record,))).outcome is Outcome.PASS


def test_without_a_canary_nothing_can_be_said():
    assert run_check("C13", kill_in_tool().observation(api_key="")).outcome is Outcome.UNKNOWN
