"""Inbox items typed while a turn runs survive or are withdrawn on purpose (C6)."""

from __future__ import annotations

from harness.checks.base import check, clip, event_item, request_item
from harness.checks.views import Record, messages, requests_between, same_text
from harness.model import CheckResult, Observation, SessionEvent, SessionLog, UserInput, failed, passed, skipped, unknown

CANCEL_PREFIX = "/cancel"  # a withdrawal is recorded as the input "/cancel <item_id>"


@check("C6", "B+L")
def inbox_items_never_vanish(obs: Observation) -> CheckResult:
    """Every item queued during a turn is delivered in a later turn or canceled on purpose.

    Black-box: a delivered item's text reaches a later model request; once later turns ran,
    no more items may be missing than the user withdrew. Log: each queued input has
    ``inbox_queued``, then ``inbox_delivered`` (listed in that turn's ``inbox``) or
    ``inbox_canceled`` (whose text never reaches the model afterwards); an item still pending
    when a later turn starts has vanished. When the driver records withdrawals (as the input
    ``/cancel <item_id>``), a cancel nobody asked for is a violation too.
    """
    queued = [i for i in obs.inputs if i.queued and not i.text.startswith(CANCEL_PREFIX)]
    if not queued:
        return skipped("C6", "nothing was queued while a turn ran")
    cancels = [i for i in obs.inputs if i.text.startswith(CANCEL_PREFIX)]
    problems: list[dict] = []
    evidence: list[dict] = []
    undelivered = []
    for item in queued:
        carrier = _first_carrier(obs, item)
        if carrier is not None:
            evidence.append(request_item(carrier, note=f"queued {clip(item.text, 40)!r} delivered"))
        else:
            undelivered.append({"queued": clip(item.text, 80)})
    if obs.log is None and len(undelivered) > len(cancels):
        if _later_turn_requests(obs, queued[0]):
            problems.append({"undelivered": undelivered, "withdrawals": len(cancels),
                             "note": f"{len(undelivered) - len(cancels)} queued input(s) never reached the model "
                                     "although later turns ran, and were not withdrawn"})
        elif not obs.log_error:
            return unknown("C6", "queued items were not delivered yet and there is no log to show they are kept",
                           *undelivered, *evidence)
    if obs.log is not None:
        problems.extend(_log_problems(obs, obs.log, queued, cancels, evidence))
    elif obs.log_error and not problems:
        return failed("C6", f"the session log could not be read: {obs.log_error}", {"reader": obs.log_error})
    if problems:
        return failed("C6", problems[0]["note"], *problems)
    return passed("C6", f"{len(queued)} queued item(s) delivered or canceled on purpose", *evidence)


def _first_carrier(obs: Observation, item: UserInput) -> Record | None:
    return next((r for r in requests_between(obs, item.mono_ns)
                 if any(m.get("role") == "user" and item.text in str(m.get("text") or "") for m in messages(r))), None)


def _later_turn_requests(obs: Observation, item: UserInput) -> bool:
    later_inputs = [i.mono_ns for i in obs.inputs if not i.queued and i.mono_ns > item.mono_ns]
    return bool(later_inputs) and bool(requests_between(obs, later_inputs[0]))


def _log_problems(obs: Observation, log: SessionLog, queued: list[UserInput], cancels: list[UserInput],
                  evidence: list[dict]) -> list[dict]:
    """Each queued input was recorded, and each recorded item has a deliberate outcome."""
    problems: list[dict] = []
    queued_events = log.of_type("inbox_queued")
    for item in queued:
        if not any(same_text(str(e.get("text")), item.text) for e in queued_events):
            problems.append({"queued": clip(item.text, 80), "note": f"queued input {clip(item.text, 60)!r} has no "
                             "inbox_queued event: it was never kept"})
    for event in queued_events:
        item_id = event.get("item_id")
        delivered = [e for e in log.of_type("inbox_delivered") if e.get("item_id") == item_id]
        canceled = [e for e in log.of_type("inbox_canceled") if e.get("item_id") == item_id]
        if delivered and canceled:
            problems.append(event_item(canceled[0], note=f"inbox item {item_id} was both delivered and canceled"))
        elif delivered:
            problems.extend(_delivered_problems(obs, log, event, delivered[0], evidence))
        elif canceled:
            problems.extend(_cancel_problems(obs, event, canceled[0], cancels, evidence))
        else:
            later = [e for e in log.of_type("turn_started") if (e.mono_ns or 0) > (event.mono_ns or 0)]
            if later:
                problems.append(event_item(event, note=f"inbox item {item_id} vanished: turn {later[0].turn} started "
                                           "without delivering or canceling it"))
            else:
                evidence.append(event_item(event, note="still queued on disk, no later turn yet"))
    return problems


def _delivered_problems(obs: Observation, log: SessionLog, queued_event: SessionEvent,
                        delivered_event: SessionEvent, evidence: list[dict]) -> list[dict]:
    """A delivered item is listed in its turn's ``inbox`` and its text reaches the model."""
    item_id, text = queued_event.get("item_id"), str(queued_event.get("text"))
    turn = next((e for e in log.of_type("turn_started") if e.turn == delivered_event.get("turn")), None)
    if turn is None or item_id not in (turn.get("inbox") or []):
        return [event_item(delivered_event, note=f"inbox item {item_id} is marked delivered to turn "
                           f"{delivered_event.get('turn')}, whose turn_started does not list it")]
    later = requests_between(obs, delivered_event.mono_ns or 0)
    if later and not any(text in str(m.get("text") or "") for r in later for m in messages(r)):
        return [event_item(delivered_event, note=f"inbox item {item_id} is marked delivered but its text reached "
                           "no later model request")]
    evidence.append(event_item(delivered_event))
    return []


def _cancel_problems(obs: Observation, queued_event: SessionEvent, canceled_event: SessionEvent, cancels: list[UserInput],
                     evidence: list[dict]) -> list[dict]:
    """A canceled item was withdrawn by the user (when the driver recorded withdrawals) and
    never reached the model afterwards."""
    item_id, text = queued_event.get("item_id"), str(queued_event.get("text"))
    if cancels and not any(c.mono_ns > (queued_event.mono_ns or 0) and _withdraws(c, item_id) for c in cancels):
        return [event_item(canceled_event, note=f"inbox item {item_id} was canceled though the user never withdrew it")]
    leaked = [r for r in requests_between(obs, canceled_event.mono_ns or 0)
              if any(m.get("role") == "user" and text in str(m.get("text") or "") for m in messages(r))]
    if leaked:
        return [request_item(leaked[0], note=f"inbox item {item_id} was canceled but still reached the model")]
    evidence.append(event_item(canceled_event, note="spliced out" + ("" if cancels else
                                                                       " (the withdrawal itself was not recorded)")))
    return []


def _withdraws(cancel: UserInput, item_id: str) -> bool:
    """``/cancel <id>`` withdraws that item; a bare ``/cancel`` (id unknown to the driver) any."""
    named = cancel.text.split()[1:2]
    return not named or named[0] == item_id
