"""From what a task run recorded to the ``Observation`` the checkers judge.

The recorded history is taken as it is; two things are derived here, at the edge between
raw recordings and the model. What the agent "demonstrably received" before a Stop on a
screen or stdout is the longest prefix of the scripted text that appears there (a screen
also shows echoed input and tool cards). And the final store is captured through the
profile's reader. Nothing is masked: C13 judges raw captures, and keys are removed once,
where results are written.
"""

from __future__ import annotations

import dataclasses

from fake_server.records import Record, Response
from harness.model import (
    AgentFailure,
    AgentKill,
    CanaryHit,
    Conventions,
    LogCapture,
    Observation,
    ProcessExit,
    Restart,
    Settlement,
    StopDelivery,
    TurnUpdate,
    UserInput,
    WindowObservation,
)
from harness.model.drivers import DRIVERS
from harness.model.history import History
from harness.profiles import Profile
from harness.readers import Reader
from harness.run.planning import WorkItem


def observe(item: WorkItem, profile: Profile, *, history: History, records: tuple[Record, ...],
            reader: Reader | None, final: LogCapture | None, log_path: str | None, transcript: str, api_key: str,
            canary_hits: list[CanaryHit], failure: AgentFailure | None) -> Observation:
    stops = history.of(StopDelivery)
    if not DRIVERS[item.driver].in_process:
        stops = tuple(_seen_on_screen(s, records) for s in stops)
    return Observation(
        task=item.variant, agent=profile.name, adapter=item.adapter, driver=item.driver, api_key=api_key,
        records=records, inputs=history.of(UserInput), stops=stops, settlements=history.of(Settlement),
        kills=history.of(AgentKill), restarts=history.of(Restart), exits=history.of(ProcessExit),
        windows=history.of(WindowObservation), updates=history.of(TurnUpdate), log_format=reader,
        log=final.log if final else None, log_snapshot=final.snapshot if final else None,
        log_error=final.error if final else None,
        log_version_unknown=final.version_unknown if final else False, log_path=log_path,
        canary_hits=tuple(canary_hits), transcript=transcript, failure=failure,
        conventions=Conventions(exit_codes=dict(profile.exit_codes),
                                repair_outcome_unknown=profile.repair_outcome_unknown,
                                repair_not_started=profile.repair_not_started,
                                sequential_tools=profile.sequential_tools),
    )


def _seen_on_screen(stop: StopDelivery, records: tuple[Record, ...]) -> StopDelivery:
    if stop.text_seen is None:
        return stop
    responses = [r for r in records if isinstance(r, Response) and (stop.request is None or r.request == stop.request)]
    scripted = responses[-1].text if responses else ""
    return dataclasses.replace(stop, text_seen=visible_prefix(scripted, stop.text_seen) or None)


def visible_prefix(scripted: str, screen: str) -> str:
    """The longest prefix of ``scripted`` that appears in ``screen`` (containment is monotone
    in the prefix length, so a binary search finds it)."""
    lo, hi = 0, len(scripted)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if scripted[:mid] in screen:
            lo = mid
        else:
            hi = mid - 1
    return scripted[:lo]
