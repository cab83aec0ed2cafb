"""No vacuous verdicts: a check passes only on evidence of each thing it claims.

The property: take runs that keep the contract (every checker has something to pass on), take
away at random what some checks judge — the requests after every interruption, the bash
windows, the Stops (or their reaching a running turn), the reader, the kills, the restarts,
the exits, the queued inputs, the canary — and whatever the result, no checker whose judged
thing is now absent from the observation may answer ``pass``. What is absent is read off the
generated observation itself, not off the list of what was removed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checks import REGISTRY, run_check
from harness.checks.views import first_request_after, windows_open_at, windows_opened
from harness.model import Observation, Outcome
from tests.harness.checks.observations import without_reader

from .check_runs import (
    headless_runs,
    inbox_run,
    kill_at_next_request,
    kill_at_request,
    kill_in_tool,
    mid_file_refusal,
    stop_in_tool,
    stop_mid_stream,
    timeout_run,
    torn_tail_restart,
)

# Runs that keep the contract, and variants that keep it too.
GOOD_RUNS = [
    (stop_in_tool, ()), (stop_mid_stream, ()), (stop_mid_stream, ("marker",)), (kill_in_tool, ()),
    (kill_in_tool, ("declared-wording",)), (kill_in_tool, ("c1-finished",)), (kill_in_tool, ("no-capture",)),
    (kill_in_tool, ("unseen-load",)), (kill_at_request, ()), (kill_at_request, ("no-restart",)),
    (kill_at_next_request, ()), (torn_tail_restart, ()), (mid_file_refusal, ()), (timeout_run, ()),
    (headless_runs, ()), (headless_runs, ("max-tokens",)), (headless_runs, ("declared-130",)), (inbox_run, ()),
    (inbox_run, ("pending",)), (inbox_run, ("no-cancel-record",)),
]


def interruptions(obs: Observation) -> list[int]:
    return sorted([s.mono_ns for s in obs.stops] + [k.mono_ns for k in obs.kills] + [r.mono_ns for r in obs.restarts])


def no_requests_after_interruptions(obs: Observation) -> Observation:
    """The run ends at its first interruption, as far as the model server can tell."""
    moments = interruptions(obs)
    if not moments:
        return obs
    cut = moments[0]
    kinds = {"request", "response", "chunk", "stream_end", "disconnect", "error"}
    return dataclasses.replace(obs, records=tuple(r for r in obs.records if r.kind not in kinds or r.mono_ns <= cut))


REMOVALS: dict[str, Callable[[Observation], Observation]] = {
    "later requests": no_requests_after_interruptions,
    "windows": lambda obs: dataclasses.replace(
        obs, windows=(), records=tuple(r for r in obs.records if r.kind not in ("window", "window_done"))),
    "stops": lambda obs: dataclasses.replace(obs, stops=()),
    "stops reaching a running turn": lambda obs: dataclasses.replace(
        obs, stops=tuple(dataclasses.replace(s, exercised=False) for s in obs.stops)),
    "reader": without_reader,
    "kills": lambda obs: dataclasses.replace(obs, kills=()),
    "restarts": lambda obs: dataclasses.replace(obs, restarts=()),
    "exits and settlements": lambda obs: dataclasses.replace(obs, exits=(), settlements=()),
    "queued inputs": lambda obs: dataclasses.replace(obs, inputs=tuple(i for i in obs.inputs if not i.queued)),
    "canary": lambda obs: dataclasses.replace(obs, api_key=""),
}


# --- what each check judges, and how to tell it is absent from an observation ------------------


def no_reader(obs: Observation) -> bool:
    return obs.log_format is None


def no_kill(obs: Observation) -> bool:
    return not obs.kills


def no_restart(obs: Observation) -> bool:
    return not [r for r in obs.restarts if r.damage != "mid-file"]


def no_window(obs: Observation) -> bool:
    return not windows_opened(obs)


def stops_reaching(obs: Observation, phases: tuple[str, ...] | None = None) -> list:
    return [s for s in obs.stops if s.exercised and (phases is None or s.phase in phases)]


def no_stop(obs: Observation) -> bool:
    """No Stop reached a running turn: none delivered, and no timeout of the agent's own in a log."""
    timeouts = obs.log is not None and any(e.get("source") == "timeout" for e in obs.log.of_type("stop_requested"))
    return not stops_reaching(obs) and not timeouts


def later(obs: Observation, ns: int) -> bool:
    return first_request_after(obs, ns) is not None


ABSENT: dict[str, list[tuple[str, Callable[[Observation], bool]]]] = {
    "C1": [("no reader", no_reader)],
    "C2": [("no reader", no_reader), ("no restart", no_restart)],
    "C3": [("no window opened", no_window),
           ("a Stop in a tool with no later request and no reader", lambda obs: no_reader(obs) and any(
               not later(obs, s.mono_ns) for s in stops_reaching(obs, ("tool",))))],
    "C4": [("no kill", no_kill), ("a kill with no later request", lambda obs: any(
        not later(obs, k.mono_ns) for k in obs.kills))],
    "C5": [("no Stop mid-stream or in a tool", lambda obs: not stops_reaching(obs, ("stream", "tool"))),
           ("no later request after any Stop", lambda obs: not any(
               later(obs, s.mono_ns) for s in stops_reaching(obs, ("stream", "tool"))))],
    "C6": [("nothing queued", lambda obs: not any(i.queued and not i.text.startswith("/cancel") for i in obs.inputs))],
    "C7": [("no restart", no_restart), ("a restart with no later request", lambda obs: any(
        not later(obs, r.mono_ns) for r in obs.restarts if r.damage != "mid-file"))],
    "C8": [("no headless exit", lambda obs: not obs.exits)],
    "C9": [("no Stop reached a running turn", no_stop)],
    "C10": [("no reader", no_reader)],
    "C11": [("no kill", no_kill), ("no reader and no restart", lambda obs: no_reader(obs) and no_restart(obs))],
    "C12": [("no Stop reached a running turn", no_stop),
            ("no reader, no settlement, no exit", lambda obs: no_reader(obs) and not obs.settlements
             and not obs.exits)],
    "C13": [("no canary key", lambda obs: not obs.api_key)],
    "C14": [("no kill, and no Stop or timeout while a window ran", lambda obs: no_kill(obs) and not any(
                windows_open_at(obs, s.mono_ns) for s in obs.stops if s.exercised) and no_stop(obs)),
            ("no request after any kill or Stop, and no reader", lambda obs: no_reader(obs) and not any(
                later(obs, ns) for ns in [k.mono_ns for k in obs.kills] + [s.mono_ns for s in stops_reaching(obs)]))],
    "A1": [("no restart", no_restart), ("no request after any restart", lambda obs: not any(
        later(obs, r.mono_ns) for r in obs.restarts))],
    "A2": [("no kill while a window ran", lambda obs: not any(windows_open_at(obs, k.mono_ns) for k in obs.kills))],
    "A3": [("no stopped or failed run", lambda obs: not any(
        e.expect in ("stopped", "timeout", "error", "refused", "blocked") for e in obs.exits))],
}


def test_every_check_says_what_it_cannot_pass_without():
    assert set(ABSENT) == set(REGISTRY)


def test_the_runs_taken_apart_keep_the_contract_whole():
    """Every check passes on some run before anything is taken away: the property below is
    about removing evidence, not about runs that never had any."""
    passing = {c for build, faults in GOOD_RUNS for obs in (build(*faults).observation(),)
               for c in REGISTRY if run_check(c, obs).outcome is Outcome.PASS}
    assert passing == set(REGISTRY)


@pytest.mark.slow(reason="every checker on every empty observation")
@settings(max_examples=400, deadline=None)
@given(run=st.sampled_from(GOOD_RUNS), removals=st.sets(st.sampled_from(sorted(REMOVALS)), min_size=1))
def test_no_check_passes_without_what_it_judges(run, removals):
    build, faults = run
    obs = build(*faults).observation()
    for name in sorted(removals):
        obs = REMOVALS[name](obs)
    for check_id, absences in ABSENT.items():
        missing = [why for why, absent in absences if absent(obs)]
        if not missing:
            continue
        result = run_check(check_id, obs)
        assert result.outcome is not Outcome.PASS, (
            f"{check_id} passed on {build.__name__}{faults} without {missing} (removed {sorted(removals)}): "
            f"{result.evidence.summary}")


# --- hand-made cases of the same rule ---------------------------------------------------------------


def test_c5_with_no_later_request_is_unknown():
    result = run_check("C5", stop_mid_stream("no-follow-up").observation())
    assert result.outcome is Outcome.UNKNOWN and "no model request followed Stop" in result.evidence.summary


def test_c3_with_no_window_opened_is_not_pass():
    for obs in (stop_in_tool("no-window").observation(), stop_in_tool("no-window").observation(black_box=True),
                REMOVALS["windows"](stop_in_tool().observation())):
        assert run_check("C3", obs).outcome is not Outcome.PASS


def test_kept_text_with_a_trailing_interrupted_marker_passes_c5():
    for black_box in (False, True):
        result = run_check("C5", stop_mid_stream("marker").observation(black_box=black_box))
        assert result.outcome is Outcome.PASS
        kept = [i["kept"] for i in result.evidence.items if "kept" in i]
        assert kept == ["The design has three layers:  [interrupted]"]


def test_a_correct_agent_that_settles_max_tokens_and_exits_2_passes_c8():
    result = run_check("C8", headless_runs("max-tokens").observation())
    assert result.outcome is Outcome.PASS
    first = result.evidence.items[0]
    assert (first["expect"], first["returncode"]) == ("completed", 2)
