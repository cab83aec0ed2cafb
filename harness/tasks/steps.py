"""The step vocabulary of tasks, as data: each kind's schema (its keys and their types, a Struct
of ``harness.tasks.schema``), what else it must satisfy, and which budget of a profile's
``[timeouts]`` bounds it.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.contract import TASK_STOP_SOURCES
from harness.model.drivers import DRIVERS
from harness.tasks import schema

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
    """One kind of step: its schema (the keys it takes, with their types), its extra validation
    and the budget that bounds it."""

    table: type[schema.StepTable]
    validate: Callable[[Step, str, Fail, ParseState], None]
    budget: str  # the field of the profile's Budgets ([timeouts]) that bounds the step
    needs_agent: bool = True  # may only follow a send (there is an agent to act on)

    @property
    def name(self) -> str:
        return str(self.table.__struct_config__.tag)


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
    StepKind(schema.SendStep, _validate_send, "startup", needs_agent=False),
    StepKind(schema.WaitStep, _validate_wait, "turn", needs_agent=False),
    StepKind(schema.StopStep, _validate_interrupt, "settle"),
    StepKind(schema.SettleStep, _no_validation, "settle"),
    StepKind(schema.KillStep, _validate_interrupt, "settle"),
    StepKind(schema.DamageStep, _validate_damage, "settle", needs_agent=False),
    StepKind(schema.RestartStep, _validate_restart, "startup"),
    StepKind(schema.QueueStep, _validate_queue, "turn"),
    StepKind(schema.CancelQueuedStep, _validate_cancel, "turn"),
)}


def parse_steps(steps: Sequence[schema.StepTable], fail: Fail, drivers: tuple[str, ...]) -> tuple[Step, ...]:
    """Validate a task's ``[[steps]]``, already of the schema's kinds and types, for what types
    cannot say; ``fail(item, problem)`` raises the task's error."""
    state = ParseState(drivers=drivers)
    out: list[Step] = []
    for n, given in enumerate(steps, 1):
        item = f"steps[{n}]"
        kind = STEPS[str(given.__struct_config__.tag)]
        step = Step(do=kind.name, args=schema.step_args(given), index=n)
        if kind.needs_agent and not state.sent:
            fail(item, f"'{kind.name}' before any 'send': there is no agent to act on yet")
        kind.validate(step, item, fail, state)
        if kind.name == "wait":
            state.last_wait = step
        if kind.name in ("send", "restart"):  # a new turn (or process): earlier beacons are stale
            state.sent = True
            state.last_wait = None
        if kind.name == "queue" and "as" in step.args:
            state.queued_names.add(step.args["as"])
        out.append(step)
    return tuple(out)
