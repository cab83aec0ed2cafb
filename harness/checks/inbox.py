"""Inbox items typed while a turn runs survive or are withdrawn on purpose (C6)."""

from __future__ import annotations

from fake_server.records import Request
from harness.checks.base import Findings, check, event_item, log_half, result
from harness.checks.views import clip, request_item, requests_between, same_text, sent_messages
from harness.model import Capability as Cap
from harness.model import CheckResult, DecidedBy, Observation, Outcome, SessionEvent, SessionLog, UserInput
from harness.model.events import InboxCanceled, InboxDelivered, InboxQueued, TurnStarted

BOX, LOG = DecidedBy.BLACK_BOX, DecidedBy.LOG
CANCEL_PREFIX = "/cancel"  # a withdrawal is recorded as the input "/cancel <item_id>"


@check("C6")
def inbox_items_never_vanish(obs: Observation) -> CheckResult:
    """Every item queued during a turn is delivered in a later turn or canceled on purpose.

    Black-box: a delivered item's text reaches a later model request; once later turns ran,
    no more items may be missing than the user withdrew (the driver records a withdrawal as
    the input ``/cancel <item_id>``), and a withdrawn item never reaches the model after. Log
    (a store that records the inbox): each queued input is recorded, then delivered (listed
    in that turn's ``inbox``) or canceled; an item still pending when a later turn starts has
    vanished, and a cancel nobody asked for (when withdrawals are recorded) is a violation.
    """
    queued = [i for i in obs.inputs if i.queued and not i.text.startswith(CANCEL_PREFIX)]
    if not queued:
        return result("C6", Outcome.SKIPPED, "nothing was queued while a turn ran")
    cancels = [i for i in obs.inputs if i.text.startswith(CANCEL_PREFIX)]
    found = Findings("C6")
    log = log_half(obs, found, Cap.INBOX, Cap.MONO_TIMES)
    undelivered = []
    for item in queued:
        carrier = _first_carrier(obs, item)
        if carrier is not None:
            found.ok(BOX, request_item(carrier, note=f"queued {clip(item.text, 40)!r} delivered"))
        else:
            undelivered.append(item)
    if undelivered:
        later_turns = _later_turn_requests(obs, queued[0])
        missing = len(undelivered) - len(cancels)
        if later_turns and missing > 0 and not isinstance(log, SessionLog):  # with a log, it tells item by item
            found.fail(BOX, f"{missing} queued input(s) never reached the model although later turns ran, and were "
                       "not withdrawn", undelivered=[clip(i.text, 80) for i in undelivered], withdrawals=len(cancels))
        elif later_turns and missing <= 0:
            found.ok(BOX, withdrawn=[clip(i.text, 80) for i in undelivered],
                     note=f"{len(undelivered)} undelivered item(s), as many as the user withdrew")
        elif not isinstance(log, SessionLog):
            found.cannot("queued items were not delivered yet and there is no log to show they are kept",
                         needs_reader=log.needs_reader, undelivered=[clip(i.text, 80) for i in undelivered])
    if isinstance(log, SessionLog):
        _log_outcomes(obs, log, queued, cancels, found)
    return found.result(f"{len(queued)} queued item(s) delivered or canceled on purpose")


def _carriers(obs: Observation, after_ns: int, text: str) -> list[Request]:
    return [r for r in requests_between(obs, after_ns)
            if any(m.role == "user" and text in m.text for m in sent_messages(r))]


def _first_carrier(obs: Observation, item: UserInput) -> Request | None:
    carriers = _carriers(obs, item.mono_ns, item.text)
    return carriers[0] if carriers else None


def _later_turn_requests(obs: Observation, item: UserInput) -> bool:
    later_inputs = [i.mono_ns for i in obs.inputs if not i.queued and i.mono_ns > item.mono_ns]
    return bool(later_inputs) and bool(requests_between(obs, later_inputs[0]))


def _log_outcomes(obs: Observation, log: SessionLog, queued: list[UserInput], cancels: list[UserInput],
                  found: Findings) -> None:
    """Each queued input was recorded, and each recorded item has a deliberate outcome."""
    queued_events = log.events_of(InboxQueued)
    for item in queued:
        if not any(same_text(str(e.get("text")), item.text) for e in queued_events):
            found.fail(LOG, f"queued input {clip(item.text, 60)!r} has no inbox_queued event: it was never kept",
                       queued=clip(item.text, 80))
    for event in queued_events:
        item_id = event.item_id
        delivered = [e for e in log.events_of(InboxDelivered) if e.item_id == item_id]
        canceled = [e for e in log.events_of(InboxCanceled) if e.item_id == item_id]
        if delivered and canceled:
            found.fail(LOG, f"inbox item {item_id} was both delivered and canceled", event_item(canceled[0]))
        elif delivered:
            _delivered(obs, log, event, delivered[0], found)
        elif canceled:
            _canceled(obs, event, canceled[0], cancels, found)
        else:
            later = [e for e in log.events_of(TurnStarted) if (e.mono_ns or 0) > (event.mono_ns or 0)]
            if later:
                found.fail(LOG, f"inbox item {item_id} vanished: turn {later[0].turn} started without delivering or "
                           "canceling it", event_item(event))
            else:
                found.ok(LOG, event_item(event, note="still queued in the store, no later turn yet"))


def _delivered(obs: Observation, log: SessionLog, queued: SessionEvent, delivered: SessionEvent,
               found: Findings) -> None:
    """A delivered item is listed in its turn's ``inbox`` and its text reaches the model."""
    item_id, text = queued.get("item_id"), str(queued.get("text"))
    turn = next((e for e in log.events_of(TurnStarted) if e.turn == delivered.get("turn")), None)
    if turn is None or item_id not in (turn.get("inbox") or []):
        found.fail(LOG, f"inbox item {item_id} is marked delivered to turn {delivered.get('turn')}, whose "
                   "turn_started does not list it", event_item(delivered))
        return
    later = requests_between(obs, delivered.mono_ns or 0)
    if later and not any(text in m.text for r in later for m in sent_messages(r)):
        found.fail(LOG, f"inbox item {item_id} is marked delivered but its text reached no later model request",
                   event_item(delivered))
        return
    found.ok(LOG, event_item(delivered))


def _canceled(obs: Observation, queued: SessionEvent, canceled: SessionEvent, cancels: list[UserInput],
              found: Findings) -> None:
    """A canceled item was withdrawn by the user (when the driver recorded withdrawals) and
    never reached the model afterwards."""
    item_id, text = str(queued.get("item_id")), str(queued.get("text"))
    if cancels and not any(c.mono_ns > (queued.mono_ns or 0) and _withdraws(c, item_id) for c in cancels):
        found.fail(LOG, f"inbox item {item_id} was canceled though the user never withdrew it", event_item(canceled))
        return
    leaked = _carriers(obs, canceled.mono_ns or 0, text)
    if leaked:
        found.fail(BOX, f"inbox item {item_id} was canceled but still reached the model", request_item(leaked[0]))
        return
    found.ok(LOG, event_item(canceled, note="spliced out" + ("" if cancels else
                                                              " (the withdrawal itself was not recorded)")))


def _withdraws(cancel: UserInput, item_id: str) -> bool:
    """``/cancel <id>`` withdraws that item; a bare ``/cancel`` (id unknown to the driver) any."""
    named = cancel.text.split()[1:2]
    return not named or named[0] == item_id
