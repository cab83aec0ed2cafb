"""The agent's own ``--timeout`` is recorded by the harness as falling due at start + T by the
harness's clock, read just before the spawn. The agent counts T from its own start and may act a
few milliseconds before that moment: C3's log half judges the calls running when the agent
acted (its ``stop_requested``), so the verdict does not depend on which side of the harness's
moment the scheduler put the agent's timer."""

from __future__ import annotations

import dataclasses

from harness.checks import run_check
from harness.model import Outcome, StopDelivery
from tests.harness.checks.observations import RunBuilder

from .check_runs import timeout_run


def _harness_timeout_record(run: RunBuilder, mono_ns: int) -> None:
    """What ``steps._settle`` records for a run that timed out by its own ``--timeout``; the
    window's tree was seen gone when the agent wrote the aborted result."""
    window = run.windows[0]
    run.windows[0] = dataclasses.replace(window, gone_ns=_log_moment(run, "tool_result"))
    run.stops.append(StopDelivery(mono_ns=mono_ns, source="timeout", how="timeout", phase="tool", exercised=True,
                                  window="w1", by="agent-timeout"))


def _log_moment(run: RunBuilder, type_: str) -> int:
    return next(e.mono_ns for e in run.log.read().events if e.type == type_)


def test_an_agent_timeout_acted_on_before_the_harness_due_moment_passes_c3():
    run = timeout_run()
    # The agent stopped the call and wrote its aborted result, then the harness's due moment fell.
    _harness_timeout_record(run, _log_moment(run, "turn_ended") + 1)
    verdict = run_check("C3", run.observation())
    assert verdict.outcome is Outcome.PASS, verdict.evidence.summary
    assert "1 call(s) running at a Stop reported aborted" in verdict.evidence.summary


def test_an_agent_timeout_acted_on_after_the_harness_due_moment_passes_c3():
    run = timeout_run()
    _harness_timeout_record(run, _log_moment(run, "stop_requested") - 1)
    verdict = run_check("C3", run.observation())
    assert verdict.outcome is Outcome.PASS, verdict.evidence.summary


def test_a_call_not_aborted_by_the_agents_own_timeout_still_fails_c3_whichever_side_it_acted():
    for offset_from in ("turn_ended", "stop_requested"):
        run = timeout_run("not-aborted")
        _harness_timeout_record(run, _log_moment(run, offset_from) + (1 if offset_from == "turn_ended" else -1))
        verdict = run_check("C3", run.observation())
        assert verdict.outcome is Outcome.FAIL, offset_from
        assert "its result says aborted=False" in verdict.evidence.summary
