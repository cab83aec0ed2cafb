"""Latencies L1–L4 and L7 from one task run's observation (contract.md: one clock,
``time.monotonic_ns``, shared by every process on the host).

A mutant's timings measure a broken agent, so the runner measures only unmutated runs.
"""

from __future__ import annotations

from typing import Any

from fake_server.records import Disconnect, Request
from harness.model import LatencySample, Observation
from harness.model.drivers import DRIVERS


def timed_latencies(obs: Observation, repeat: int) -> list[tuple[LatencySample, int]]:
    """Each sample of the observation (repeat ``repeat`` of its task) with the ``monotonic_ns``
    its interval began at (it ends ``value_ns`` later): whether it was timed alone is decided on
    that interval (``harness.timing.alone``). The observation names the agent, the task, the
    adapter and the driver; nothing else of the run is read."""
    samples: list[tuple[LatencySample, int]] = []

    def add(lid: str, value: int, *, start_ns: int, **detail: Any) -> None:
        samples.append((LatencySample(lid, int(value), obs.agent, obs.adapter, obs.task, repeat,
                                      {"driver": obs.driver, **detail}), start_ns))

    records = obs.records
    # L1 and L2 are aborts mid-stream; a Stop inside a tool is timed by L3 (the tree kill).
    for stop in (s for s in obs.stops if s.exercised and s.phase == "stream"):
        # The settlement the agent itself reported: the in-process API's settled event, stamped
        # when the agent settled; over ACP the prompt's answer, stamped when it was read.
        reported = DRIVERS[obs.driver].reports_settlement
        settled = next((s.mono_ns for s in obs.settlements if s.mono_ns >= stop.mono_ns), None) if reported else None
        if DRIVERS[obs.driver].in_process and settled is not None:  # L1 is the in-process abort, by the contract
            add("L1", settled - stop.mono_ns, start_ns=stop.mono_ns)
        if stop.request is not None:  # L2 needs a real connection: the server's own record
            gone = [r.mono_ns for r in records if isinstance(r, Disconnect) and r.source == "server"
                    and r.request == stop.request and r.mono_ns >= stop.mono_ns]
            # ... "and → settlement appended" (contract L2), where the agent reports its settlement
            to_settlement = {"to_settlement_ns": settled - stop.mono_ns} if settled is not None else {}
            if gone:
                add("L2", gone[0] - stop.mono_ns, start_ns=stop.mono_ns, request=stop.request, **to_settlement)
    for w in obs.windows:
        if w.stop_ns is not None and w.gone_ns is not None:
            add("L3", w.gone_ns - w.stop_ns, start_ns=w.stop_ns, window=w.window, processes=len(w.pids))
    for e in obs.exits:
        if e.timeout_s is not None and e.expect == "timeout":
            due_ns = e.started_ns + int(e.timeout_s * 1e9)
            add("L4", e.ended_ns - due_ns, start_ns=min(due_ns, e.ended_ns), timeout_s=e.timeout_s,
                returncode=e.returncode)
    for restart in obs.restarts:
        if restart.damage == "mid-file":
            continue
        # From the process that resumes: spawned by the restart (terminal) or by the follow-up (headless).
        spawned = restart.mono_ns
        if DRIVERS[obs.driver].process_per_turn:
            follow = next((i.mono_ns for i in obs.inputs if i.mono_ns > restart.mono_ns and not i.queued), None)
            if follow is None:
                continue
            spawned = follow
        first = next((r for r in records if isinstance(r, Request) and r.mono_ns > spawned), None)
        if first is not None:
            add("L7", first.mono_ns - spawned, start_ns=spawned, request=first.request)
    return samples
