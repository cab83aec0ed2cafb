"""The recording cases as tasks: for each case, the fake server's scenario and the steps
``stopbench run`` plays, cut into phases.

A phase is a prefix of the case's steps, run as a task of its own: the store a phase leaves
(``killed``, ``stopped``, ``resumed``, ``final``) is the kept run folder's store once the
phase's last step ran. The scenario matches each response on the user's words, so every phase
is answered alike; side requests (titles, memory) the server answers itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

CASES = ("completed", "kill-tool", "kill-stream", "stop-tool")
PROMPT = "Run the check command in the shell and tell me what it printed."
EXPLAIN = "Explain, at length, what this folder is for."
FOLLOW_UP = "follow-up: the last turn was cut off. What happened?"
LONG_TEXT = ("Here is a long explanation streamed slowly, one small piece at a time, so that the "
             "recorder can interrupt it in the middle: first part, second part, third part, fourth "
             "part, fifth part, sixth part, seventh part, eighth part, and the end.")
STREAM_KILL_CHUNK = 4
WINDOW = {"id": "w1", "depth": 2, "fanout": 1, "hold_s": 120}


@dataclass(frozen=True)
class Phase:
    name: str  # the folder the store goes to
    steps: tuple[dict[str, Any], ...]  # the case's steps up to this phase's end


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def _response(frames: list[dict], match: dict | None = None, repeat: bool = False, note: str = "") -> str:
    out = [f"\n[[responses]]{'  # ' + note if note else ''}"]
    if match:
        out.append(f"match = {_toml(match)}")
    if repeat:
        out.append("repeat = true")
    for frame in frames:
        out.append("[[responses.frames]]")
        out.extend(f"{k} = {_toml(v)}" for k, v in frame.items())
    return "\n".join(out) + "\n"


def scenario_text(case: str) -> str:
    """The case's scenario. An agent that ends a task only through an action of its own gets
    it from its profile (``[finish_action]``), as in every task run."""
    follow_up = _response([{"text": "The earlier turn was interrupted before it finished."}],
                          {"last": "user", "contains": "follow-up"}, note="the follow-up")
    parts = [f'name = "record-{case}"\n']
    if case == "completed":
        parts += [_response([{"text": "I will run the check."}, {"shell": "echo stopbench-hello"}],
                            {"last": "user", "contains": "check command"}, note="the tool call"),
                  _response([{"text": "The command printed stopbench-hello. Done."}], {"last": "tool"},
                            note="the answer")]
    elif case in ("kill-tool", "stop-tool"):
        parts += [_response([{"text": "Starting the long check."}, {"shell": {"window": WINDOW}}],
                            {"last": "user", "contains": "check command"}, note="the window"), follow_up]
    elif case == "kill-stream":
        parts += [_response([{"text": LONG_TEXT, "chunk": 8, "interval_s": 0.25}],
                            {"last": "user", "contains": "at length"}, note="the slow stream"), follow_up]
    else:
        raise ValueError(f"unknown case {case!r} (cases: {', '.join(CASES)})")
    parts.append(_response([{"text": "Nothing more to do."}], repeat=True, note="anything else"))
    return "".join(parts)


def phases(case: str) -> tuple[Phase, ...]:
    """The case's phases, each the steps up to the moment its store is kept."""
    killed: tuple[dict[str, Any], ...]
    resume = ({"do": "restart"}, {"do": "send", "text": FOLLOW_UP}, {"do": "settle"})
    if case == "completed":
        return (Phase("final", ({"do": "send", "text": PROMPT}, {"do": "settle"})),)
    if case == "kill-tool":
        killed = ({"do": "send", "text": PROMPT}, {"do": "wait", "for": "window", "window": "w1"}, {"do": "kill"})
        return Phase("killed", killed), Phase("resumed", killed + resume)
    if case == "kill-stream":
        killed = ({"do": "send", "text": EXPLAIN},
                  {"do": "wait", "for": "chunk", "request": 1, "chunk": STREAM_KILL_CHUNK}, {"do": "kill"})
        return Phase("killed", killed), Phase("resumed", killed + resume)
    if case == "stop-tool":
        stopped = ({"do": "send", "text": PROMPT}, {"do": "wait", "for": "window", "window": "w1"},
                   {"do": "stop"}, {"do": "settle"})
        return Phase("stopped", stopped), Phase("resumed", stopped + resume[1:])
    raise ValueError(f"unknown case {case!r} (cases: {', '.join(CASES)})")


def task_text(name: str, phase: Phase) -> str:
    """A task of the phase's steps, on the headless driver, judged by C13 only (a recording
    keeps the store; the checks are the task runs' business)."""
    out = [f'name = "{name}"', 'description = "a recording phase (stopbench agents record)"',
           'drivers = ["subprocess"]', "", "[checks]", 'mandatory = ["C13"]']
    for step in phase.steps:
        out += ["", "[[steps]]", *(f"{k} = {_toml(v)}" for k, v in step.items())]
    return "\n".join(out) + "\n"
