"""The session grammar as types: one frozen class per canonical event, made the one way
readers make them (``event_of``), with the canonical fields typed and the record kept whole."""

import dataclasses

import pytest

from harness.model import EVENT_TYPES, event_of
from harness.model.events import EVENT_CLASSES, ToolResult, TurnEnded


def test_every_event_type_of_the_vocabulary_has_its_own_frozen_class():
    assert set(EVENT_CLASSES) == EVENT_TYPES and len(set(EVENT_CLASSES.values())) == len(EVENT_TYPES)
    for kind, cls in EVENT_CLASSES.items():
        event = event_of(kind, seq=1, line=2)
        assert type(event) is cls and event.type == kind
        with pytest.raises(dataclasses.FrozenInstanceError):
            event.seq = 3  # type: ignore[misc]


def test_canonical_fields_come_from_the_record_else_from_what_the_reader_derived():
    event = event_of("tool_result", seq=4, line=9, turn=2, data={"call_id": "c1", "output": "ok", "extra": 1},
                     derived={"aborted": True})
    assert isinstance(event, ToolResult)
    assert (event.call_id, event.output, event.aborted, event.turn) == ("c1", "ok", True, 2)
    assert event.data == {"call_id": "c1", "output": "ok", "extra": 1} and event.get("extra") == 1


def test_a_field_the_store_does_not_record_is_none_and_a_type_outside_the_vocabulary_is_refused():
    ended = event_of("turn_ended", seq=1, line=1, data={"reason": "aborted"})
    assert isinstance(ended, TurnEnded) and (ended.reason, ended.source) == ("aborted", None)
    with pytest.raises(KeyError):
        event_of("turn_paused", seq=1, line=1)


def test_an_event_grown_by_its_reader_has_its_canonical_fields_made_again():
    from harness.model.events import AssistantMessage, with_data

    first = event_of("assistant_message", seq=1, line=3, data={"text": "Hel", "tool_calls": []})
    grown = with_data(first, {**first.data, "text": "Hello"})
    assert isinstance(grown, AssistantMessage) and grown.text == "Hello" and grown.get("text") == "Hello"
