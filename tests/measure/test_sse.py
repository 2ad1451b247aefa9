"""SSE decoding and stream-chunk parsing, exact."""

from __future__ import annotations

import pytest

from k3deploy.errors import ChunkFormatError
from tests.measure.sse_events import SSEEvent, decode_events, parse_chunk


def _stamped(*lines: str) -> list[tuple[float, str]]:
    return [(float(i), line) for i, line in enumerate(lines)]


def test_events_split_on_blank_lines_and_keep_the_last_data_stamp() -> None:
    decoded = decode_events(
        _stamped("data: a", "", ": keep-alive", "event: x", "data: b1", "data:b2\r", "", "data: tail")
    )
    assert decoded.events == [SSEEvent("a", 0.0), SSEEvent("b1\nb2", 5.0, "x"), SSEEvent("tail", 7.0)]
    assert decoded.malformed == []


def test_lines_that_are_not_sse_are_reported() -> None:
    decoded = decode_events(_stamped("data: a", "garbage without colon", "hello: world", "", "id: 7", "retry: 10"))
    assert decoded.events == [SSEEvent("a", 0.0)]
    assert decoded.malformed == ["garbage without colon", "hello: world"]


def test_chat_chunk_with_continuous_usage() -> None:
    chunk = parse_chunk(
        '{"choices":[{"index":0,"delta":{"content":" hi"},"finish_reason":null}],'
        '"usage":{"prompt_tokens":73,"completion_tokens":5}}'
    )
    assert (chunk.has_choices, chunk.text, chunk.completion_tokens, chunk.prompt_tokens, chunk.done) == (
        True,
        " hi",
        5,
        73,
        False,
    )


def test_reasoning_deltas_are_output() -> None:
    chunk = parse_chunk('{"choices":[{"delta":{"reasoning_content":"think ","content":null}}]}')
    assert chunk.text == "think " and chunk.completion_tokens is None


def test_completions_chunk_final_usage_and_done() -> None:
    assert parse_chunk('{"choices":[{"text":"ab","finish_reason":"length"}]}').finish_reason == "length"
    final = parse_chunk('{"choices":[],"usage":{"prompt_tokens":59,"completion_tokens":48}}')
    assert (final.has_choices, final.completion_tokens) == (False, 48)
    assert parse_chunk("[DONE]").done


def test_error_payload_is_a_server_error() -> None:
    assert parse_chunk('{"error":{"message":"engine dead","code":500}}').error == "engine dead"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ('{"choices": [', "not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"id": "x"}', "no 'choices' list"),
        ('{"choices": [], "usage": 3}', "'usage' is not an object"),
        ('{"choices": [], "usage": {"completion_tokens": "4"}}', "is not an integer"),
        ('{"choices": ["x"]}', "a choice is not an object"),
    ],
)
def test_malformed_payloads_raise(payload: str, message: str) -> None:
    with pytest.raises(ChunkFormatError, match=message):
        parse_chunk(payload)


def test_the_answer_is_content_only() -> None:
    chunk = parse_chunk('{"choices":[{"delta":{"reasoning_content":"think ","content":"say"}}]}')
    assert (chunk.text, chunk.answer) == ("think say", "say")
    assert parse_chunk('{"choices":[{"text":"ab"}]}').answer == "ab"
