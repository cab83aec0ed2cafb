"""The tool calls an agent demonstrably knew when it was killed, and what their repairs say.

Shared by C4 (is every known call still in the next history, and answered?) and C14 (does
each answer say what is known of the call?). Black-box, a call is known from the requests the
agent sent before the kill (it was already history, with its real result) and from the bash
windows that opened (the response that scripted a window reached the agent whole; the
window's own call had started). The log left by the kill refines that: a call the model asked
for is *started* once its ``tool_call`` is durable, *finished* once its ``tool_result`` is, and
*not started* when the store records starts and shows none.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass

from harness.checks.views import (
    event_calls,
    requests_between,
    sent_messages,
    tool_answer,
    window_call,
    window_response_calls,
    windows_done,
    windows_opened,
)
from harness.contract import TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN
from harness.model import AgentKill, Capability, Conventions, Observation, SessionLog
from harness.model.events import AssistantMessage, ToolCall, ToolResult


class Known(enum.StrEnum):
    """What is known, at a kill, of a call the model asked for."""

    HISTORY = "history"  # carried, answered, in a request before the kill
    FINISHED = "finished"  # its result was durable at the kill
    STARTED = "started"  # its start was durably recorded (a window opened for it, or a tool_call)
    RAN_TO_END = "ran to its end"  # its window finished before the kill; whether the result was durable, unknown
    NOT_STARTED = "not started"  # the store records starts, and shows none for it
    REQUESTED = "requested"  # the agent had it; whether it started is not known without the log


@dataclass(frozen=True)
class KnownCall:
    call_id: str
    known: Known
    how: str  # what shows it, for evidence
    result: str | None = None  # its real result, where that is known
    box: bool = True  # known from outside (requests, windows); False: the log alone shows the call
    by_log: bool = False  # what is known of it came from the log


@dataclass(frozen=True)
class CallsAtKill:
    calls: dict[str, KnownCall]
    log: SessionLog | None  # the log as the kill left it, when it refined the calls
    log_note: str | None  # why the log did not refine them


def known_at(obs: Observation, kill: AgentKill) -> CallsAtKill:
    """Each tool call the agent demonstrably knew at ``kill``, with what is known of it."""
    calls: dict[str, KnownCall] = {}

    def learn(call: KnownCall) -> None:
        if call.by_log and call.call_id in calls:
            call = dataclasses.replace(call, box=calls[call.call_id].box)
        calls[call.call_id] = call

    for req in requests_between(obs, 0, kill.mono_ns):  # already history: made and answered before the kill
        for m in sent_messages(req):
            for cid in m.call_ids:
                if cid:
                    _, answer = tool_answer(sent_messages(req), cid)
                    learn(KnownCall(cid, Known.HISTORY, f"carried in request {req.request}",
                                    answer.text if answer else None))
    finished = {d.window for d in windows_done(obs, kill.mono_ns) if d.finished}
    for window in windows_opened(obs, kill.mono_ns):
        for c in window_response_calls(obs, window.window):
            if c.id and c.id not in calls:
                learn(KnownCall(c.id, Known.REQUESTED, f"in the response that opened window {window.window}"))
        _, cid = window_call(obs, window.window)
        if cid and (cid not in calls or calls[cid].known is Known.REQUESTED):
            ran = window.window in finished
            learn(KnownCall(cid, Known.RAN_TO_END if ran else Known.STARTED,
                            f"window {window.window} {'ran to its end' if ran else 'opened'} before the kill"))
            if not ran and obs.conventions.sequential_tools:
                order = [c.id for c in window_response_calls(obs, window.window)]
                for later in order[order.index(cid) + 1:] if cid in order else []:
                    if later and calls.get(later, KnownCall(later, Known.REQUESTED, "")).known is Known.REQUESTED:
                        learn(KnownCall(later, Known.NOT_STARTED, f"queued behind {cid}, still running in window "
                                        f"{window.window} at the kill (the agent runs its calls one after another)"))
    log, note = _log_at(obs, kill)
    if log is not None:
        starts = obs.has(Capability.TOOL_STARTS)
        results = {e.call_id: e.output or "" for e in log.events_of(ToolResult)}
        started = {e.call_id for e in log.events_of(ToolCall)}
        for event in log.events_of(AssistantMessage):
            for c in event_calls(event):
                if not c.id:
                    continue
                seen = calls.get(c.id)
                if c.id in results:
                    learn(KnownCall(c.id, Known.FINISHED, "its tool_result was durable when the agent was killed",
                                    results[c.id], box=False, by_log=True))
                elif seen is not None and seen.known in (Known.STARTED, Known.RAN_TO_END, Known.HISTORY):
                    continue  # a window that opened ran it, logged or not
                elif starts and c.id in started:
                    learn(KnownCall(c.id, Known.STARTED, "its tool_call was durable when the agent was killed",
                                    box=False, by_log=True))
                elif starts:
                    learn(KnownCall(c.id, Known.NOT_STARTED, "requested, and no tool_call was durable at the kill",
                                    box=False, by_log=True))
                elif seen is None:
                    learn(KnownCall(c.id, Known.REQUESTED, f"in the log's assistant message (line {event.line})",
                                    box=False, by_log=True))
    return CallsAtKill(calls, log, note)


def _log_at(obs: Observation, kill: AgentKill) -> tuple[SessionLog | None, str | None]:
    """The log as the kill left it: its capture, else the final log's events before the kill."""
    if obs.log_format is None:
        return None, "no log reader: which calls had started is judged by the windows alone"
    if kill.log is not None and kill.log.log is not None:
        return kill.log.log, None
    if kill.log is not None and kill.log.error:
        return None, f"the log left by the kill could not be read: {kill.log.error}"
    if obs.log is None or not obs.has(Capability.MONO_TIMES):
        return None, "the log left by the kill was not captured"
    events = tuple(e for e in obs.log.events if e.mono_ns is not None and e.mono_ns < kill.mono_ns)
    return SessionLog(path=obs.log.path, header=obs.log.header, events=events), None


# --- what a repair says ----------------------------------------------------------------


class Says(enum.StrEnum):
    OUTCOME_UNKNOWN = "outcome unknown"
    NOT_STARTED = "not started"
    BOTH = "both outcome unknown and not started"
    NEVER_RAN = "that the tool never ran, or was rejected"
    OTHER = "something else"


# Words that claim a tool did not run (or was refused), whatever marker they come with.
NEVER_RAN = re.compile(r"\b(?:never|not|n't)\s+(?:been\s+)?(?:run|ran|started|executed)\b"
                       r"|\b(?:rejected|denied|declined|refused)\b", re.I)


def wording(conventions: Conventions) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The texts that say 'outcome unknown' and 'not started': the contract's markers, and the
    agent's own wording where its profile declares one."""
    unknown = (TOOL_OUTCOME_UNKNOWN, *([conventions.repair_outcome_unknown] if conventions.repair_outcome_unknown
                                       else []))
    not_started = (TOOL_NOT_STARTED, *([conventions.repair_not_started] if conventions.repair_not_started else []))
    return unknown, not_started


def says(text: str, conventions: Conventions) -> Says:
    """What a tool result says of its call (matched as substrings)."""
    unknown, not_started = wording(conventions)
    u = any(w in text for w in unknown)
    n = any(w in text for w in not_started)
    if u and n:
        return Says.BOTH
    if u:
        return Says.OUTCOME_UNKNOWN
    if n:
        return Says.NOT_STARTED
    return Says.NEVER_RAN if NEVER_RAN.search(text) else Says.OTHER


def is_repair(text: str, conventions: Conventions) -> bool:
    """A result that is one of the repair wordings (not a tool's own output)."""
    return says(text, conventions) in (Says.OUTCOME_UNKNOWN, Says.NOT_STARTED, Says.BOTH)
