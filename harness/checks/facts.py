"""One defect, one failure: the observed facts failures rest on, and the linking of a failure
that rests only on facts an earlier check already failed on.

A checker names the fact behind a problem in the problem's evidence item (``"fact"``), with
one of the keys below, so that two checks that saw the same thing name it alike: the exit of
one process, the reader's refusal of the store. ``link_consequences`` then walks a task run's
results in the contract's order: the first check to fail on a fact is the failure; a later one
whose every problem names a fact already failed on is marked ``consequence_of`` that check —
shown and linked in reports, not counted again. A problem that names no fact is always a
failure of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from harness.contract import check_order
from harness.model import CheckResult, LogCapture, Outcome, ProcessExit


def exit_fact(exit_: ProcessExit) -> str:
    """The fact of one process's exit: what C8 judges, and what a check that reads a
    settlement or a failure off that exit rests on too."""
    how = f"exited {exit_.returncode}" if exit_.returncode is not None else f"died by signal {exit_.signal}"
    return f"the {exit_.role} process (pid {exit_.pid}) {how}"


def refusal_fact(reader_error: str | None) -> str:
    """The fact of the reader's refusal of the final store: every log check fails on it."""
    return f"the reader refused the store: {reader_error}" if reader_error else "the reader refused the store"


def dropped_call_fact(request: int, call_id: str) -> str:
    """The fact of a tool call missing from a request after a kill: what C4 judges as a dropped
    call, and what C7 and C11 meet when that call was durable at the kill."""
    return f"request {request} does not carry tool call {call_id}"


def undurable_call_fact(kill: int, call_id: str) -> str:
    """The fact of a running call the store left by a kill holds no record of: it was not made
    durable before its tool ran (C11), and a resume from that store cannot carry it (C4, C7)."""
    return f"the store left by kill {kill} holds no record of tool call {call_id}"


def no_store_fact(kill: int) -> str:
    """The fact of a kill that left nothing of the session on disk — no store where the profile
    keeps it, or one with no record in it: nothing was durable (C11), and a resume of that
    session has nothing to load (C7)."""
    return f"nothing of the session was on disk after kill {kill}"


def left_nothing(capture: LogCapture | None) -> bool:
    """Whether a capture shows the kill left nothing of the session on disk: no store where the
    profile keeps it, or a store its reader read with no record in it (``no_store_fact``)."""
    if capture is None:
        return False
    if capture.snapshot is None:
        return capture.absent_from is not None
    return capture.log is not None and not capture.log.events


def link_consequences(results: Sequence[CheckResult]) -> tuple[CheckResult, ...]:
    """The results, in their order, each failure that rests only on facts an earlier failure
    (in the contract's order) named marked as that failure's consequence."""
    owner: dict[str, str] = {}
    linked: dict[int, CheckResult] = {}
    for index in sorted(range(len(results)), key=lambda i: check_order(results[i].check)):
        result = results[index]
        if result.outcome is not Outcome.FAIL:
            continue
        facts = result.facts
        named_all = facts and all(i.get("fact") for i in result.evidence.items)
        if named_all and all(f in owner for f in facts):
            linked[index] = dataclasses.replace(result, consequence_of=owner[facts[0]])
            continue
        for fact in facts:
            owner.setdefault(fact, result.check)
    return tuple(linked.get(i, r) for i, r in enumerate(results))


__all__ = ["dropped_call_fact", "exit_fact", "left_nothing", "link_consequences", "no_store_fact", "refusal_fact",
           "undurable_call_fact"]
