"""The OpenAPI check itself: present, and able to reject what does not conform."""
import pytest
from fake_openapi import ABSENT_REASON


@pytest.fixture
def spec(openapi):
    if openapi is None:
        pytest.skip(ABSENT_REASON)
    return openapi


def test_checker_rejects_a_chunk_with_a_missing_field(spec):
    good = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"content": "x"}, "logprobs": None, "finish_reason": None}]}
    spec.check("CreateChatCompletionStreamResponse", good, "good chunk")
    bad = {**good, "choices": [{"index": 0, "delta": {"content": "x"}}]}
    with pytest.raises(AssertionError, match="finish_reason"):
        spec.check("CreateChatCompletionStreamResponse", bad, "bad chunk")


def test_every_responses_event_type_we_send_is_in_the_description(spec):
    sent = ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
            "response.output_text.delta", "response.output_text.done", "response.content_part.done",
            "response.output_item.done", "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done", "response.function_call_arguments.delta",
            "response.function_call_arguments.done", "response.completed", "response.incomplete",
            "response.failed", "error"]
    assert [t for t in sent if t not in spec.event_schema] == []
