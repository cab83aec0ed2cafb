"""Choosing a response and playing its plan in scripted time, shared by server and in-process player.

Both paths must behave identically (same choice, same strictness, same chunks, same
timing), so the decision logic lives here once and the callers only do I/O.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from . import scenario as sc
from .errors import ApiError
from .fence import fenced
from .script import Delta, Exhausted, Ids, Parsed, Plan, ScenarioCursor, Sleep, build_plan, detect_shell, side_plan
from .shell import COMMAND_FIELDS, shell_lookalikes
from .wire import Event, StreamEncoder, wire_for


def prepare(parsed: Parsed, cursor: ScenarioCursor, ids: Ids, beacon_url: str | None) -> Plan:
    """The plan answering ``parsed``; ApiError (provider-shaped) when it cannot be answered.

    A side request — one the scenario declares by a pattern, or one that nothing else answers
    and that offers no shell tool when the scenario calls the shell through a tool (with
    ``shell_fence`` no request needs a tool to be the task's), or no tool at all when it has a
    finish action — gets the canned side plan
    and uses up no response: real agents send such requests (titles, auto-memory) around the
    task, and neither a consumed response nor a 500 may follow from one.
    """
    scenario = cursor.scenario
    wire = wire_for(parsed.api)
    shell = detect_shell(parsed, scenario)
    pattern = scenario.side_pattern(parsed.canonical)
    if pattern is not None:     # whatever model it names: agents send side requests to a small model
        return side_plan(parsed, f"its text contains the scenario's side_requests pattern {pattern!r}")
    if scenario.model and parsed.model != scenario.model:
        raise wire.unknown_model(parsed.model)
    try:
        index, response = cursor.choose(parsed.canonical)
    except Exhausted as exc:
        offered = ", ".join(parsed.canonical["tools"]) or "none"
        if shell is None and scenario.scripts_shell and scenario.shell_fence is None:
            lookalikes = "" if scenario.shell_tool else ", ".join(shell_lookalikes(parsed.tool_defs))
            unknown_field = (f"; {lookalikes} looks like a shell tool, but names its command in none of the "
                             f"fields {', '.join(COMMAND_FIELDS)}") if lookalikes else ""
            return side_plan(parsed, f"no response matches and it offers no shell tool (tools offered: "
                                     f"{offered}) while the scenario calls the shell{unknown_field}")
        if scenario.finish_action is not None and not parsed.canonical["tools"]:
            return side_plan(parsed, "no response matches and it offers no tool while the scenario has a "
                                     "finish action")
        raise wire.error(500, str(exc)) from None
    if scenario.shell_fence is not None:
        response = fenced(response, scenario.shell_fence, beacon_url)
    return build_plan(index, response, parsed, shell, ids, beacon_url, scenario.finish_action)


def http_error_of(plan: Plan, api: str) -> ApiError | None:
    """The scripted HTTP refusal of ``plan``, if it has one."""
    frame = plan.http_error
    if frame is None:
        return None
    return wire_for(api).error(frame.status, frame.message, retry_after=frame.retry_after)


# A scripted moment this much later than due is recorded (a ``late`` record); and again, for the
# same stream, each time it falls this much further behind. Well above the loop's own jitter
# (a fraction of a millisecond), well below any budget a task gives a step (seconds).
LATE_NS = 10_000_000


@dataclass
class Emit:
    """What to send next: ``events`` as (name, data) pairs, or a ``run`` of chunks to send back to
    back (no pause between them), numbered from ``first``. The consumer encodes a run's deltas
    itself (``encoder.delta`` for dicts, ``encoder.burst_sse`` for the bytes of a burst of them):
    a long unpaced stream is one run, sent without a step of this generator per chunk. ``late_ns``
    (when not 0) is how late the run's scripted moment is, for the consumer to record."""
    events: list[Event] = field(default_factory=list)
    run: list[Delta] = field(default_factory=list)
    first: int = 1
    final: bool = False            # the stream's last write; ``complete`` says how it ended
    complete: bool = True
    late_ns: int = 0


async def play(plan: Plan, encoder: StreamEncoder,
               flowing: Callable[[], Awaitable[object]] | None = None) -> AsyncIterator[Emit]:
    """Yield Emits in scripted time. A stall awaits forever: only cancellation ends it.
    ``flowing`` is awaited after each scripted pause: while it waits, scripted time stands.

    Scripted time is kept against the clock, not pause by pause: each pause ends when the script
    says (the stream's start plus every pause before it, less the time held), so a loop that
    wakes a stream late (a busy machine, many streams at once) does not stretch the rest of its
    script by as much again at every pause. Each pause separates writes while the stream is on
    time or nearly (less than ``LATE_NS`` behind); a stream further behind sends the chunks
    already due together, in one write, until it has caught up, and says how late it was in
    ``Emit.late_ns``, once it is ``LATE_NS`` or more past the worst already told."""
    loop = asyncio.get_running_loop()
    yield Emit(encoder.start())
    due = loop.time()              # when the script says the next step is
    chunk = 0
    run: list[Delta] = []
    run_late = 0.0                 # how late the moment that began ``run`` is, in s
    told = 0                       # the worst lateness told so far, in ns
    for step in plan.steps:
        if isinstance(step, Sleep):
            due += step.seconds
            if loop.time() - due < LATE_NS / 1e9:   # on time, or nearly: the pause separates writes
                if run:
                    late_ns, told = _told(run_late, told)
                    yield Emit(run=run, first=chunk - len(run) + 1, late_ns=late_ns)
                    run = []
                await asyncio.sleep(max(0.0, due - loop.time()))
            if flowing is not None:
                held_from = loop.time()
                await flowing()
                due += loop.time() - held_from  # held: scripted time stood still
            if not run:
                run_late = loop.time() - due
            continue
        chunk += 1
        run.append(step)
    if run:
        late_ns, told = _told(run_late, told)
        yield Emit(run=run, first=chunk - len(run) + 1, late_ns=late_ns)
    ending = plan.ending
    if ending is None:
        yield Emit(encoder.finish(), final=True)
    elif isinstance(ending, sc.StreamError):
        yield Emit(encoder.error(ending.kind, ending.message), final=True, complete=False)
    elif isinstance(ending, sc.Disconnect):
        yield Emit([], final=True, complete=False)
    else:
        await asyncio.Future()     # stall: held open until the consumer goes away


def _told(late_s: float, told: int) -> tuple[int, int]:
    """How late a run is, if that is worth telling (``LATE_NS`` past the worst told), else 0; and
    the worst told since."""
    late_ns = int(late_s * 1e9)
    if late_ns >= told + LATE_NS:
        return late_ns, late_ns
    return 0, told


def chunk_fields(plan: Plan, delta: Delta) -> tuple[str, str | None, str | None]:
    """What a chunk record says of ``delta``: its ``text``, ``tool_call_id`` and ``reasoning``."""
    if delta.kind == "text":
        return delta.text, None, None
    if delta.kind == "tool":
        return "", plan.tool_calls[delta.call]["id"], None
    return "", None, delta.text
