"""Choosing a response and playing its plan in scripted time, shared by server and in-process player.

Both paths must behave identically (same choice, same strictness, same chunks, same
timing), so the decision logic lives here once and the callers only do I/O.
"""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from . import scenario as sc
from .errors import ApiError, api_error
from .script import Delta, Exhausted, Ids, Parsed, Plan, ScenarioCursor, Sleep, build_plan, detect_shell
from .shell import NoShellTool


def family_of(api: str) -> str:
    return "anthropic" if api == "anthropic" else "openai"


def prepare(parsed: Parsed, cursor: ScenarioCursor, ids: Ids, beacon_url: str | None) -> Plan:
    """The plan answering ``parsed``; ApiError (provider-shaped) when it cannot be answered."""
    scenario = cursor.scenario
    family = family_of(parsed.api)
    shell = detect_shell(parsed, scenario)
    if scenario.model and parsed.model != scenario.model:
        if family == "anthropic":
            raise api_error(family, 404, f"model: {parsed.model}")
        raise api_error(family, 404, f"The model `{parsed.model}` does not exist or you do not have "
                                     "access to it.", param="model", code="model_not_found")
    try:
        index, response = cursor.choose(parsed.canonical)
    except Exhausted as exc:
        raise api_error(family, 500, str(exc)) from None
    try:
        return build_plan(index, response, parsed, shell, ids, beacon_url)
    except NoShellTool as exc:
        cursor.release(index)       # unanswerable here; a request with a shell tool may still use it
        offered = ", ".join(parsed.canonical.get("tools") or []) or "none"
        raise api_error(family, 500, f"scenario '{scenario.name}': {exc} (tools offered: {offered})") from None


def http_error_of(plan: Plan, api: str) -> ApiError | None:
    """The scripted HTTP refusal of ``plan``, if it has one."""
    frame = plan.http_error
    if frame is None:
        return None
    return api_error(family_of(api), frame.status, frame.message, retry_after=frame.retry_after)


@dataclass
class Emit:
    """What to send next: ``events`` as (name, data) pairs; ``delta`` set for a numbered chunk."""
    events: list
    delta: Delta | None = None
    chunk: int = 0
    final: bool = False            # the stream's last write; ``complete`` says how it ended
    complete: bool = True


async def play(plan: Plan, encoder):
    """Yield Emits in scripted time. A stall awaits forever: only cancellation ends it."""
    yield Emit(encoder.start())
    chunk = 0
    for step in plan.steps:
        if isinstance(step, Sleep):
            await asyncio.sleep(step.seconds)
            continue
        chunk += 1
        yield Emit(encoder.delta(step), delta=step, chunk=chunk)
    ending = plan.ending
    if ending is None:
        yield Emit(encoder.finish(), final=True)
    elif isinstance(ending, sc.StreamError):
        yield Emit(encoder.error(ending.kind, ending.message), final=True, complete=False)
    elif isinstance(ending, sc.Disconnect):
        yield Emit([], final=True, complete=False)
    else:
        await asyncio.Future()     # stall: held open until the consumer goes away


def chunk_record(request_no: int, emit: Emit, plan: Plan) -> dict:
    record = {"kind": "chunk", "request": request_no, "chunk": emit.chunk,
              "text": emit.delta.text if emit.delta.kind == "text" else ""}
    if emit.delta.kind == "tool":
        record["tool_call_id"] = plan.tool_calls[emit.delta.call]["id"]
    elif emit.delta.kind == "reasoning":
        record["reasoning"] = emit.delta.text
    return record


def sse(event: str | None, data) -> bytes:
    """One server-sent event; ``data`` is a dict (JSON) or a literal like ``[DONE]``."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()
