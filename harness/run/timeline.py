"""A task run as a picture's data: what happened on each lane, in ms from the task's start.

Lanes are the actors: the harness (inputs, Stops, kills, restarts), the model (each request
as a span to its stream's end, with its chunks, and what the server refused), the agent (each
process's life, each settlement it showed), one lane per bash window (open → its last process
gone), and the probes: requests to paths the server does not serve, harmless. The
results JSON carries the marks so any tool can draw them; the HTML report draws them.
"""

from __future__ import annotations

from fake_server import records
from harness.model import Observation, TimelineMark

MAX_CHUNK_MARKS = 60  # per request: a long stream is drawn as its span plus the first chunks
# A request to a path the fake server does not serve (an agent looking for a models list, a
# health check …) is answered 404: harmless, so drawn on a lane of its own, never as an error.
UNSERVED = 404
PROBE_LANE = "probes"


def timeline(obs: Observation, start_ns: int) -> tuple[TimelineMark, ...]:
    def ms(ns: int) -> float:
        return round((ns - start_ns) / 1e6, 3)

    marks: list[TimelineMark] = []
    add = marks.append
    for i in obs.inputs:
        add(TimelineMark("harness", "input", ms(i.mono_ns), ("queued: " if i.queued else "") + i.text[:60]))
    for s in obs.stops:
        label = f"Stop ({s.how}, {s.source}, {s.phase})" + ("" if s.exercised else " — turn had ended") + (
            f" — {s.missed}" if s.missed else "")
        add(TimelineMark("harness", "stop", ms(s.mono_ns), label,
                         ref=f"request {s.request}" if s.request else (f"window {s.window}" if s.window else None)))
    for n, k in enumerate(obs.kills, 1):
        add(TimelineMark("harness", "kill", ms(k.mono_ns), f"SIGKILL {n} of pid {k.pid} at {k.at}", ref=f"pid {k.pid}"))
    for n, restart in enumerate(obs.restarts, 1):
        damage = f" on {restart.damage} damage" if restart.damage else ""
        add(TimelineMark("harness", "restart", ms(restart.mono_ns), f"restart {n}{damage}"))
    requests = {r.request: r for r in obs.records if isinstance(r, records.Request)}
    ends: dict[int | None, int] = {}
    for r in obs.records:
        if isinstance(r, (records.StreamEnd, records.Disconnect)) and r.request not in ends:
            ends[r.request] = r.mono_ns
    for number, req in requests.items():
        label = f"request {number}" + (f" → {req.status}" if req.status and req.status != 200 else "")
        end = ends.get(number)
        add(TimelineMark("model", "request", ms(req.mono_ns), label, end_ms=ms(end) if end else None,
                         ref=f"request {number}"))
    chunks: dict[int, int] = {}
    for r in obs.records:
        if isinstance(r, records.Chunk):
            chunks[r.request] = chunks.get(r.request, 0) + 1
            if chunks[r.request] <= MAX_CHUNK_MARKS:
                add(TimelineMark("model", "chunk", ms(r.mono_ns), f"chunk {r.chunk} of request "
                                 f"{r.request}: {r.text[:30]!r}", ref=f"request {r.request}"))
        elif isinstance(r, records.Disconnect):
            add(TimelineMark("model", "disconnect", ms(r.mono_ns), f"request {r.request}: client closed "
                             f"after chunk {r.after_chunk}", ref=f"request {r.request}"))
        elif isinstance(r, records.Side):
            add(TimelineMark("model", "side", ms(r.mono_ns), "side request (answered, not scripted)"))
        elif isinstance(r, records.Error) and r.status == UNSERVED and r.request is None:
            add(TimelineMark(PROBE_LANE, "probe", ms(r.mono_ns),
                             f"{r.method or '?'} {str(r.path)[:60]} → {UNSERVED}: a path the server "
                             "does not serve (harmless)"))
        elif isinstance(r, records.Error):
            add(TimelineMark("model", "error", ms(r.mono_ns), f"refused: {r.problem[:80]}"))
    for e in obs.exits:
        code = f"exit {e.returncode}" if e.returncode is not None else f"signal {e.signal}"
        add(TimelineMark("agent", "process", ms(e.started_ns), f"{e.role} pid {e.pid}: {code}", end_ms=ms(e.ended_ns),
                         ref=f"pid {e.pid}"))
    for settled in obs.settlements:
        source = f" ({settled.source})" if settled.source else ""
        add(TimelineMark("agent", "settled", ms(settled.mono_ns), f"settled: {settled.reason or '?'}{source} — "
                         f"{settled.how}"))
    for w in obs.windows:
        opened = next((r.mono_ns for r in obs.records if isinstance(r, records.Window) and r.window == w.window), None)
        if opened is None:
            continue
        pids = ", ".join(f"{p.get('pid')} {p.get('role')}" for p in w.pids)
        survived = f"; {len(w.survivors)} survived" if w.survivors else ""
        add(TimelineMark(f"window {w.window}", "window", ms(opened), f"window {w.window}: {pids}{survived}",
                         end_ms=ms(w.gone_ns) if w.gone_ns else None, ref=f"window {w.window}"))
    return tuple(sorted(marks, key=lambda m: (m.at_ms, m.lane)))
