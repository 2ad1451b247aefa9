"""The chunk readings pinned (survivors of tests/mutation/run on k3deploy/measure/sse.py): the strict json reading
(taken for what msgspec refuses) gives what the fast one gives; several choices add up their text and answer, the
last finish reason wins, reasoning counts as output but not as answer, `[DONE]` ends the stream with no choices,
and each format error quotes at most 80 characters of the payload."""

from __future__ import annotations

import json

import pytest

from k3deploy.measure.sse import ChunkFormatError, _parse_strict
from tests.measure.sse_events import parse_chunk

TWO_CHOICES = {
    "choices": [
        {"delta": {"reasoning_content": "think ", "content": "Hel"}, "finish_reason": None},
        {"delta": {"reasoning": "more ", "content": "lo"}, "finish_reason": "length"},
        {"delta": {"content": "!"}, "finish_reason": None},
    ],
    "usage": {"completion_tokens": 7, "prompt_tokens": 3},
}


@pytest.mark.parametrize("read", [_parse_strict, parse_chunk], ids=["strict", "fast"])
def test_several_choices_add_up_and_the_last_finish_reason_given_wins(read: object) -> None:
    chunk = read(json.dumps(TWO_CHOICES))  # type: ignore[operator]
    assert (chunk.text, chunk.answer) == ("think Helmore lo!", "Hello!")
    assert chunk.finish_reason == "length" and chunk.has_choices is True and chunk.done is False
    assert (chunk.completion_tokens, chunk.prompt_tokens) == (7, 3)


@pytest.mark.parametrize("read", [_parse_strict, parse_chunk], ids=["strict", "fast"])
def test_completions_text_is_both_output_and_answer(read: object) -> None:
    chunk = read(json.dumps({"choices": [{"text": "ab"}, {"text": "cd", "finish_reason": "stop"}]}))  # type: ignore[operator]
    assert (chunk.text, chunk.answer, chunk.finish_reason) == ("abcd", "abcd", "stop")


@pytest.mark.parametrize("read", [_parse_strict, parse_chunk], ids=["strict", "fast"])
def test_done_ends_the_stream_with_no_choices(read: object) -> None:
    chunk = read("[DONE]")  # type: ignore[operator]
    assert chunk.done is True and chunk.has_choices is False and chunk.text == ""


def test_an_empty_choice_list_has_no_choices_and_no_usage_is_none() -> None:
    for read in (_parse_strict, parse_chunk):
        chunk = read(json.dumps({"choices": []}))
        assert chunk.has_choices is False and chunk.done is False and chunk.completion_tokens is None


def test_a_finish_reason_that_is_not_text_is_shown_as_text() -> None:
    chunk = _parse_strict(json.dumps({"choices": [{"text": "", "finish_reason": 5}]}))
    assert chunk.finish_reason == "5"
    assert _parse_strict(json.dumps({"choices": [{"text": ""}]})).finish_reason is None


def test_a_delta_whose_text_is_not_a_string_is_a_format_error() -> None:
    with pytest.raises(ChunkFormatError, match="a delta's text is not a string"):
        _parse_strict(json.dumps({"choices": [{"delta": {"content": 5}}]}))
    assert _parse_strict(json.dumps({"choices": [{"delta": {"content": None}}]})).text == ""


LONG = "x" * 200


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("[" + LONG, "not JSON"),
        (json.dumps([LONG]), "not a JSON object"),
        (json.dumps({"pad": LONG}), "no 'choices' list"),
        (json.dumps({"choices": [], "usage": [LONG]}), "'usage' is not an object"),
        (json.dumps({"choices": [LONG]}), "a choice is not an object"),
    ],
)
def test_each_format_error_quotes_the_first_80_characters(payload: str, message: str) -> None:
    with pytest.raises(ChunkFormatError) as info:
        _parse_strict(payload)
    assert message in str(info.value) and repr(payload[:80]) in str(info.value)
    assert repr(payload[:81]) not in str(info.value)
