"""A request record's rules pinned at their boundaries, both sides (the survivors of tests/mutation/run on
k3deploy/measure/record.py): a full-length answer, what is quoted and kept and how much, which chunks are output, the
burst rule's chunk count and gap, and when TTFT, decode rate and TPOT exist."""

from __future__ import annotations

import json

import pytest

from k3deploy.measure.record import (
    BURST_GAP_S,
    BURST_MIN_CHUNKS,
    MAX_QUOTE_CHARS,
    MAX_TEXT_CHARS,
    RawStream,
    RequestSpec,
    build_record,
    is_bursty,
)

SPEC = RequestSpec(index=0, phase="measured", prompt_id="p", max_tokens=3)


def _chunk(content: str, completion: int | None, finish: str | None = None, prompt: int = 5) -> str:
    body: dict[str, object] = {"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}
    if completion is not None:
        body["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion}
    return "data: " + json.dumps(body)


def _raw(events: list[str], t_send: float = 0.0, error: str | None = None, done: bool = True) -> RawStream:
    """Event i arrives at t_send + i + 1 seconds."""
    lines: list[tuple[float, str]] = []
    for i, event in enumerate([*events, "data: [DONE]"] if done else events):
        lines += [(t_send + i + 1.0, event), (t_send + i + 1.0, "")]
    return RawStream(t_send=t_send, t_end=t_send + len(events) + 2.0, lines=lines, error=error)


@pytest.mark.parametrize(("tokens", "ok"), [(2, False), (3, True), (4, True)])
def test_a_full_length_request_is_ok_from_max_tokens_up_and_not_one_short(tokens: int, ok: bool) -> None:
    rec = build_record(_raw([_chunk("a", 1), _chunk("b", tokens, "length")]), SPEC)
    assert rec.ok is ok
    assert rec.error == (None if ok else "stopped after 2 of 3 tokens (finish_reason=length)")


def test_a_short_answer_of_a_stream_cut_before_done_is_named_as_cut_not_as_short() -> None:
    rec = build_record(_raw([_chunk("a", 1)], done=False), SPEC)
    assert rec.error == "stream ended before [DONE] after 1 token(s)"


def test_a_cut_stream_without_usage_counts_the_tokens_seen_so_far() -> None:
    rec = build_record(_raw([_chunk("a", None)], done=False), SPEC)
    assert rec.error is not None and rec.error.startswith("stream ended before [DONE] after 0 token(s); ")


def test_a_transport_error_stands_for_the_missing_done_and_usage() -> None:
    rec = build_record(_raw([_chunk("a", None)], error="read timed out", done=False), SPEC)
    assert rec.error == "read timed out"
    short = build_record(_raw([_chunk("a", 1)], error="peer closed", done=False), SPEC)
    assert short.error == "peer closed"  # no "stopped after": the stream never ended


def test_one_server_error_event_is_quoted_and_several_are_counted_up_to_the_quote_limit() -> None:
    long = "x" * (MAX_QUOTE_CHARS + 50)
    one = build_record(_raw([_chunk("a", 3), 'data: {"error": {"message": "' + long + '"}}']), SPEC)
    assert one.error == f"server error in stream: {'x' * MAX_QUOTE_CHARS}"
    two = build_record(_raw(['data: {"error": {"message": "a"}}', 'data: {"error": {"message": "b"}}']), SPEC)
    assert two.error is not None and two.error.startswith("server error in stream (2 error events, first shown): a; ")
    assert MAX_QUOTE_CHARS == 300


def test_a_malformed_line_is_quoted_up_to_120_characters() -> None:
    bad = "y" * 200
    rec = build_record(_raw([bad, _chunk("a", 3)]), SPEC)
    assert rec.error is not None and rec.malformed_lines == 1
    assert rec.error.startswith("1 malformed SSE line(s), first: ")
    quoted = rec.error.removeprefix("1 malformed SSE line(s), first: ")
    assert len(quoted) == 120 and set(quoted) <= set("y' ") and "y" * 100 in quoted


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_a_kept_answer_is_cut_at_max_text_chars(extra: int) -> None:
    probe = RequestSpec(index=0, phase="correctness", prompt_id="p", max_tokens=3, expect_full=False, keep_text=True)
    size = MAX_TEXT_CHARS + extra
    rec = build_record(_raw([_chunk("z" * size, 3, "stop")]), probe)
    assert rec.text == "z" * min(size, MAX_TEXT_CHARS)
    assert MAX_TEXT_CHARS == 32 * 1024
    assert build_record(_raw([_chunk("z", 3, "stop")]), SPEC).text is None  # a measured request keeps none


def test_a_chunk_whose_usage_did_not_grow_is_not_an_output_chunk() -> None:
    rec = build_record(_raw([_chunk("", 0), _chunk("a", 1), _chunk("", 1), _chunk("b", 3, "length")]), SPEC)
    assert rec.ok and rec.chunk_tokens == [1, 2] and rec.chunk_offsets_s == [2.0, 4.0]
    assert (rec.t_first, rec.t_last, rec.ttft_s) == (2.0, 4.0, 2.0)
    assert rec.per_chunk_usage and rec.prompt_tokens == 5 and rec.finish_reason == "length"


def test_without_per_chunk_usage_a_chunk_with_text_is_output_and_one_without_is_not() -> None:
    usage = 'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}}'  # vLLM's last chunk
    rec = build_record(_raw([_chunk("", None), _chunk("a", None), _chunk("b", None, "length"), usage]), SPEC)
    assert rec.ok and not rec.per_chunk_usage and rec.chunk_tokens == []
    assert rec.chunk_offsets_s == [2.0, 3.0] and rec.completion_tokens == 3
    # Decode: the 2 tokens after the first (counted as 1) over the 1 s between the first and last text chunk.
    assert (rec.decode_tok_s, rec.tpot_ms) == (2.0, 500.0)


def test_the_offsets_are_on_the_sends_clock_through_the_reads_shift() -> None:
    payload = b"".join((line + "\n\n").encode() for line in [_chunk("a", 1), _chunk("b", 3, "length"), "data: [DONE]"])
    raw = RawStream(t_send=100.0, t_end=110.0, reads=[(52.0, payload)], reads_shift=50.0)
    rec = build_record(raw, SPEC)
    assert rec.ok and rec.chunk_offsets_s == [2.0, 2.0] and (rec.t_first, rec.t_last) == (102.0, 102.0)
    assert rec.decode_tok_s is None and rec.tpot_ms is None  # no span between the first and the last chunk


def test_offsets_are_rounded_to_the_microsecond() -> None:
    lines = [(0.1234567, _chunk("a", 1)), (0.1234567, ""), (0.2, _chunk("b", 3, "length")), (0.2, "")]
    raw = RawStream(t_send=0.0, t_end=1.0, lines=[*lines, (0.3, "data: [DONE]"), (0.3, "")])
    assert build_record(raw, SPEC).chunk_offsets_s == [0.123457, 0.2]


@pytest.mark.parametrize(("count", "bursty"), [(BURST_MIN_CHUNKS - 1, False), (BURST_MIN_CHUNKS, True)])
def test_a_stream_is_called_bursty_from_eight_chunks_not_before(count: int, bursty: bool) -> None:
    assert BURST_MIN_CHUNKS == 8
    assert is_bursty([1e-6 * i for i in range(count)]) is bursty


@pytest.mark.parametrize(("gap", "bursty"), [(BURST_GAP_S * 0.99, True), (BURST_GAP_S, False), (0.01, False)])
def test_chunks_closer_than_half_a_millisecond_are_held_back_ones(gap: float, bursty: bool) -> None:
    assert BURST_GAP_S == 0.0005
    assert is_bursty([gap * i for i in range(9)]) is bursty


def test_the_median_gap_of_an_even_count_is_the_mean_of_the_middle_two() -> None:
    # 8 chunks, 7 gaps (odd): the middle one decides.
    assert is_bursty([0.0, 0.1, 0.2, 0.3, 0.3001, 0.3002, 0.3003, 0.3004])
    # 9 chunks, 8 gaps (even): sorted gaps 4 x 0.0001 then 4 x 0.1; the middle two average 0.05: not bursty.
    assert not is_bursty([0.0, 0.1, 0.2, 0.3, 0.4, 0.4001, 0.4002, 0.4003, 0.4004])
    # ... with a middle pair of 0.0001 and 0.0008 averaging 0.00045: bursty though one of the two is not.
    gaps = [0.0001, 0.0001, 0.0001, 0.0001, 0.0008, 0.1, 0.1, 0.1]
    offsets = [sum(gaps[:i]) for i in range(len(gaps) + 1)]
    assert is_bursty(offsets)


def test_e2e_rate_needs_a_last_chunk_after_the_send() -> None:
    rec = build_record(_raw([_chunk("a", 1), _chunk("b", 3, "length")], t_send=10.0), SPEC)
    assert rec.e2e_tok_s == 3 / 2.0
    same = RawStream(t_send=1.0, t_end=2.0, lines=[(1.0, _chunk("a", 3, "length")), (1.0, ""), (1.0, "data: [DONE]")])
    assert build_record(same, SPEC).e2e_tok_s is None


def test_one_output_chunk_holding_every_token_has_no_decode_rate() -> None:
    rec = build_record(_raw([_chunk("abc", 3, "length")]), SPEC)
    assert rec.ok and rec.chunk_tokens == [3] and rec.tokens_per_chunk == 3.0
    assert (rec.decode_tok_s, rec.tpot_ms, rec.ttft_s) == (None, None, 1.0)


def test_decode_counts_the_tokens_after_the_first_chunk() -> None:
    rec = build_record(_raw([_chunk("a", 2), _chunk("b", 3), _chunk("c", 7, "length")]), SPEC)
    assert rec.chunk_tokens == [2, 1, 4] and rec.tokens_per_chunk == 7 / 3
    assert (rec.decode_tok_s, rec.tpot_ms) == (5 / 2.0, 1000.0 * 2.0 / 5)


def test_a_transport_error_comes_before_every_other_problem() -> None:
    events = ['data: {"error": {"message": "boom"}}', "garbage"]
    rec = build_record(_raw(events, error="peer closed", done=False), SPEC)
    assert rec.error == "peer closed; server error in stream: boom; 1 malformed SSE line(s), first: garbage"


def test_a_request_is_of_concurrency_1_unless_told() -> None:
    assert build_record(_raw([_chunk("a", 3, "length")]), SPEC).concurrency == 1


def test_reads_without_a_shift_are_on_the_sends_clock_already() -> None:
    payload = b"".join((line + "\n\n").encode() for line in [_chunk("abc", 3, "length"), "data: [DONE]"])
    rec = build_record(RawStream(t_send=100.0, t_end=110.0, reads=[(102.5, payload)]), SPEC)
    assert rec.ok and rec.chunk_offsets_s == [2.5] and rec.ttft_s == 2.5


@pytest.mark.parametrize(
    ("gaps", "bursty"),
    [
        ([1e-4, 1e-4, 1e-4, 6e-4, 0.1, 0.1, 0.1], False),  # odd count: the middle gap (0.6 ms) alone decides
        ([1e-4, 1e-4, 1e-4, 1e-4, 6e-4, 0.1, 0.1], True),
        ([1e-4, 1e-4, 1e-4, 1e-4, 6e-4, 0.1, 0.1, 0.1, 0.1], False),
    ],
)
def test_the_median_gap_of_an_odd_count_is_the_middle_one(gaps: list[float], bursty: bool) -> None:
    offsets = [sum(gaps[:i]) for i in range(len(gaps) + 1)]
    assert is_bursty(offsets) is bursty


@pytest.mark.parametrize(
    "first",
    [
        "data: {not json",
        'data: {"error": {"message": "boom"}}',
        _chunk("x", None),
        'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 0}}',
        "data: [DONE]",
    ],
)
def test_every_event_of_one_read_is_judged_whatever_came_before_it(first: str) -> None:
    """vLLM's reads often hold several whole events: none of them ends the reading of the others."""
    events = [first, _chunk("a", 1), _chunk("b", 3, "length"), "data: [DONE]"]
    payload = b"".join((event + "\n\n").encode() for event in events)
    rec = build_record(RawStream(t_send=0.0, t_end=2.0, reads=[(1.0, payload)]), SPEC)
    assert (rec.completion_tokens, rec.finish_reason, rec.chunk_offsets_s[-1]) == (3, "length", 1.0)
    assert "stream ended before [DONE]" not in (rec.error or "")


def test_the_median_of_an_even_count_averages_exactly_the_two_middle_gaps() -> None:
    # Sorted gaps 1e-4 x 3, 3e-4, 8e-4, 0.1 x 3: the middle two average 0.55 ms, not bursty; any other pair is.
    gaps = [0.1, 1e-4, 8e-4, 1e-4, 0.1, 3e-4, 1e-4, 0.1]
    assert not is_bursty([sum(gaps[:i]) for i in range(len(gaps) + 1)])


def test_decode_needs_a_token_after_the_first_chunk() -> None:
    usage = 'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}'
    one = build_record(_raw([_chunk("a", None), _chunk("b", None, "stop"), usage]), SPEC)
    assert one.chunk_offsets_s == [1.0, 2.0] and (one.decode_tok_s, one.tpot_ms) == (None, None)
    two = build_record(_raw([_chunk("a", 1), _chunk("b", 2, "stop")]), SPEC)
    assert (two.decode_tok_s, two.tpot_ms) == (1.0, 1000.0)


def test_a_stream_not_yet_stamped_as_ended_has_t_end_0() -> None:
    raw = RawStream(t_send=1.0, lines=[(2.0, _chunk("a", 3, "length")), (2.0, ""), (3.0, "data: [DONE]")])
    assert build_record(raw, SPEC).t_end == 0.0
