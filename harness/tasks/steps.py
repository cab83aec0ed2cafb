"""The step vocabulary of tasks, as data: each kind's fields and validation, and which budget
of a profile's ``[timeouts]`` bounds it.

A task is a list of steps (``send``, ``wait``, ``stop``, ``settle``, ``kill``, ``damage``,
``restart``, ``queue``, ``cancel-queued``). Every interrupt follows a ``wait`` on a beacon —
a request received, a chunk flushed, a window opened — so nothing depends on timing. What a
step *does* is the run's business (``harness.run.steps``, one executor per kind here; a test
holds the two tables equal): loading a task loads nothing that runs one. Whether a driver can
do a step (kill, restart, queue, a per-turn timeout) is read from its abilities
(``harness.model.drivers``), never from its name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.contract import TASK_STOP_SOURCES
from harness.model.drivers import DRIVERS

BEACONS = ("request", "chunk", "window", "disconnect")
KILL_POINTS = ("request-received", "chunk-flushed", "window-opened", "next-request")
SEND_EXPECT = ("completed", "error", "stopped", "timeout")
DAMAGE_KINDS = ("torn-tail", "mid-file")
# The keys each beacon of a wait reads: any other is a mistake the wait would silently pass over.
BEACON_KEYS = {"request": ("request",), "chunk": ("request", "chunk"), "window": ("window",),
               "disconnect": ("request",)}
MAX_TURN_TIMEOUT_S = 600.0  # a per-turn timeout T the step budgets can still wait out


@dataclass(frozen=True)
class Step:
    do: str
    args: Mapping[str, Any]
    index: int  # 1-based position in the task, for messages

    def get(self, key: str, default: Any = None) -> Any:
        return self.args.get(key, default)

    def describe(self) -> str:
        extra = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"step {self.index} ({self.do}{': ' + extra if extra else ''})"


Fail = Callable[[str, str], Any]


@dataclass
class ParseState:
    """What validation of a step needs to know about the steps before it."""

    drivers: tuple[str, ...]
    queued_names: set[str] = field(default_factory=set)
    last_wait: Step | None = None
    sent: bool = False


@dataclass(frozen=True)
class StepKind:
    """One kind of step: its fields, its extra validation and the budget that bounds it."""

    name: str
    required: Mapping[str, type | tuple[type, ...]]
    optional: Mapping[str, type | tuple[type, ...]]
    validate: Callable[[Step, str, Fail, ParseState], None]
    budget: str  # the field of the profile's Budgets ([timeouts]) that bounds the step
    needs_agent: bool = True  # may only follow a send (there is an agent to act on)


def _validate_text(step: Step, item: str, fail: Fail) -> None:
    if "text" not in step.args:
        return
    if not step.args["text"].strip():
        fail(f"{item}.text", "must say something: an empty message is no turn")
    if "\x00" in step.args["text"]:
        fail(f"{item}.text", "holds a NUL character, which no command line or terminal can carry")


def _validate_send(step: Step, item: str, fail: Fail, state: ParseState) -> None:
    _validate_text(step, item, fail)
    if step.get("expect", "completed") not in SEND_EXPECT:
        fail(f"{item}.expect", f"one of {', '.join(SEND_EXPECT)}")
    if "timeout" in step.args:
        timeout = step.args["timeout"]
        if not (math.isfinite(timeout) and 0 < timeout <= MAX_TURN_TIMEOUT_S):
            fail(f"{item}.timeout", f"must be a number of seconds above 0 and at most {MAX_TURN_TIMEOUT_S:g}, "
                                    f"not {timeout!r}")
        cannot = [d for d in state.drivers if not DRIVERS[d].per_turn_timeout]
        if cannot:
            able = [d.name for d in DRIVERS.values() if d.per_turn_timeout]
            fail(f"{item}.timeout", f"a per-turn timeout needs drivers that hand one to the agent ({', '.join(able)}), "
                                    f"not {', '.join(cannot)}")


def _validate_wait(step: Step, item: str, fail: Fail, state: ParseState) -> None:
    beacon = step.args["for"]
    if beacon not in BEACONS:
        fail(f"{item}.for", f"{beacon!r} is not a beacon ({', '.join(BEACONS)})")
    needs = BEACON_KEYS[beacon]
    for key in needs:
        if key not in step.args:
            fail(f"{item}.{key}", f"required when waiting for {beacon!r}")
    for key in step.args:
        if key != "for" and key not in needs:
            fail(f"{item}.{key}", f"a wait for {beacon!r} reads no {key!r} (it reads: {', '.join(needs)})")
    for key in ("request", "chunk"):
        if key in step.args and step.args[key] < 1:
            fail(f"{item}.{key}", "numbers start at 1")


def beacon_name(step: Step) -> str:
    beacon = step.get("for")
    if beacon == "chunk":
        return f"chunk {step.get('chunk')} of request {step.get('request')}"
    if beacon == "window":
        return f"window {step.get('window')}"
    if beacon == "disconnect":
        return f"the disconnect of request {step.get('request')}"
    return f"request {step.get('request')}"


def _validate_interrupt(step: Step, item: str, fail: Fail, state: ParseState) -> None:
    if state.last_wait is None:
        fail(item, f"'{step.do}' must follow a 'wait' on a beacon of the current turn: "
                   "interrupts are triggered by beacons, never by time")
    if step.do == "stop":
        if step.get("source", "user") not in TASK_STOP_SOURCES:
            fail(f"{item}.source", f"one of {', '.join(TASK_STOP_SOURCES)}")
        if step.get("phase", "tool") not in ("tool", "stream", "other"):
            fail(f"{item}.phase", "one of tool, stream, other")
    else:
        cannot = [d for d in state.drivers if not DRIVERS[d].can_kill]
        if cannot:
            fail(item, f"the {', '.join(cannot)} driver cannot SIGKILL the agent; "
                       f"use {', '.join(d.name for d in DRIVERS.values() if d.can_kill)}")
        if step.get("at", "request-received") not in KILL_POINTS:
            fail(f"{item}.at", f"one of {', '.join(KILL_POINTS)}")


def _validate_damage(step: Step, item: str, fail: Fail, state: ParseState) -> None:
    if step.args["kind"] not in DAMAGE_KINDS:
        fail(f"{item}.kind", f"one of {', '.join(DAMAGE_KINDS)}")


def _validate_restart(step: Step, item: str, fail: Fail, state: ParseState) -> None:
    _validate_text(step, item, fail)
    if step.get("expect", "ready") not in ("ready", "refused"):
        fail(f"{item}.expect", "one of ready, refused")
    cannot = [d for d in state.drivers if not DRIVERS[d].can_restart]
    if cannot:
        fail(item, f"the {', '.join(cannot)} driver cannot restart the agent")


def _validate_queue(step: Step, item: str, fail: Fail, state: ParseState) -> None:
    _validate_text(step, item, fail)
    cannot = [d for d in state.drivers if not DRIVERS[d].can_queue]
    if cannot:
        fail(item, f"the {', '.join(cannot)} driver takes no input while a turn runs; queue needs "
                   f"{' or '.join(d.name for d in DRIVERS.values() if d.can_queue)}")
    if step.get("as") in state.queued_names:
        fail(f"{item}.as", f"{step.get('as')!r} names an earlier queue step already")


def _validate_cancel(step: Step, item: str, fail: Fail, state: ParseState) -> None:
    if step.args["item"] not in state.queued_names:
        fail(f"{item}.item", f"{step.args['item']!r} names no earlier queue step (as = …)")


def _no_validation(step: Step, item: str, fail: Fail, state: ParseState) -> None:
    return None


STEPS: dict[str, StepKind] = {kind.name: kind for kind in (
    StepKind("send", {"text": str}, {"timeout": (int, float), "expect": str}, _validate_send, "startup",
             needs_agent=False),
    StepKind("wait", {"for": str}, {"request": int, "chunk": int, "window": str}, _validate_wait, "turn",
             needs_agent=False),
    StepKind("stop", {}, {"source": str, "phase": str}, _validate_interrupt, "settle"),
    StepKind("settle", {}, {}, _no_validation, "settle"),
    StepKind("kill", {}, {"at": str}, _validate_interrupt, "settle"),
    StepKind("damage", {"kind": str}, {}, _validate_damage, "settle", needs_agent=False),
    StepKind("restart", {}, {"expect": str, "text": str}, _validate_restart, "startup"),
    StepKind("queue", {"text": str}, {"as": str}, _validate_queue, "turn"),
    StepKind("cancel-queued", {"item": str}, {}, _validate_cancel, "turn"),
)}


def parse_steps(steps: Any, fail: Fail, drivers: tuple[str, ...]) -> tuple[Step, ...]:
    """Validate a task's ``[[steps]]``; ``fail(item, problem)`` raises the task's error."""
    if not isinstance(steps, list) or not steps:
        fail("steps", "required: at least one [[steps]] table")
    state = ParseState(drivers=drivers)
    out: list[Step] = []
    for n, raw in enumerate(steps, 1):
        item = f"steps[{n}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("do"), str):
            fail(item, f"each step needs do = one of {', '.join(STEPS)}")
        kind = STEPS.get(raw["do"])
        if kind is None:
            fail(f"{item}.do", f"{raw['do']!r} is not a step (known: {', '.join(STEPS)})")
            continue
        args = {k: v for k, v in raw.items() if k != "do"}
        for key in kind.required:
            if key not in args:
                fail(f"{item}.{key}", f"required by '{kind.name}'")
        for key, value in args.items():
            typ = kind.required.get(key) or kind.optional.get(key)
            if typ is None:
                takes = ", ".join([*kind.required, *kind.optional]) or "nothing"
                fail(f"{item}.{key}", f"'{kind.name}' takes no {key!r} (takes: {takes})")
            elif isinstance(value, bool) or not isinstance(value, typ):
                fail(f"{item}.{key}", f"wrong type {type(value).__name__}")
        step = Step(do=kind.name, args=args, index=n)
        if kind.needs_agent and not state.sent:
            fail(item, f"'{kind.name}' before any 'send': there is no agent to act on yet")
        kind.validate(step, item, fail, state)
        if kind.name == "wait":
            state.last_wait = step
        if kind.name in ("send", "restart"):  # a new turn (or process): earlier beacons are stale
            state.sent = True
            state.last_wait = None
        if kind.name == "queue" and "as" in args:
            state.queued_names.add(args["as"])
        out.append(step)
    return tuple(out)
