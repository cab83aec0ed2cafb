"""C13: the canary key, wherever it leaked, fails the run; evidence never repeats the key."""

import dataclasses

import pytest

from .check_runs import kill_in_tool, leaky_run, stop_in_tool
from harness.checks import run_check
from harness.checks.testing import CANARY
from harness.model import Outcome


def test_clean_run_passes(no_canary_in):
    result = run_check("C13", kill_in_tool().observation())
    assert result.outcome is Outcome.PASS and "appears nowhere" in result.evidence.summary
    no_canary_in(result)


def test_key_in_the_session_header_fails(no_canary_in):
    result = run_check("C13", leaky_run("header").observation())
    assert result.outcome is Outcome.FAIL
    assert result.evidence.summary == "the API key leaked into s-test.jsonl header line 1"
    assert "[canary key]" in result.evidence.items[0]["excerpt"]
    no_canary_in(result)


@pytest.mark.parametrize("where, override", [
    ("transcript", lambda obs: {"transcript": f"you> hi\nusing key {CANARY}\n"}),
    ("the runner's scan", lambda obs: {"canary_hits": ({"where": "home/.refagent/config", "line": 2,
                                                         "excerpt": f"key={CANARY}"},)}),
    ("log bytes after kill", lambda obs: {"kills": (dataclasses.replace(
        obs.kills[0], log_bytes=obs.kills[0].log_bytes + f'{{"key": "{CANARY}"}}'.encode()),)}),
    ("request", lambda obs: {"records": obs.records + (
        {**obs.requests()[0], "body": {"messages": [{"role": "user", "content": CANARY}]}},)}),
    ("stderr", lambda obs: {"exits": (dataclasses.replace(stop_in_tool().exits[0], stderr_tail=f"auth {CANARY}"),)}),
])
def test_key_anywhere_fails(where, override, no_canary_in):
    obs = kill_in_tool().observation()
    result = run_check("C13", dataclasses.replace(obs, **override(obs)))
    assert result.outcome is Outcome.FAIL, result.evidence.summary
    assert result.evidence.items
    no_canary_in(result)


def test_the_auth_header_itself_is_not_a_leak():
    obs = kill_in_tool().observation()
    record = {**obs.requests()[0], "headers": {"Authorization": f"Bearer {CANARY}"}}
    assert run_check("C13", dataclasses.replace(obs, records=(record,))).outcome is Outcome.PASS


def test_without_a_canary_nothing_can_be_said():
    assert run_check("C13", kill_in_tool().observation(api_key="")).outcome is Outcome.UNKNOWN
