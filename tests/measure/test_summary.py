"""Percentiles (numpy's linear method) and tier summaries, exact."""

from __future__ import annotations

import pytest

from k3deploy.measure.summary import percentile, stats, summarize, sweep_point
from k3deploy.report.smoke import RequestRecord


def test_percentile_linear_interpolation() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert [percentile(values, q) for q in (0, 10, 50, 90, 100)] == pytest.approx([1.0, 1.3, 2.5, 3.7, 4.0], abs=1e-12)
    assert percentile([5.0], 90) == 5.0
    assert percentile([10.0, 20.0, 30.0, 40.0, 50.0], 50) == 30.0


def test_percentile_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_stats_ignore_missing_values() -> None:
    s = stats([None, 2.0, 4.0])
    assert (s.count, s.p10, s.median, s.p90, s.mean) == (2, 2.2, 3.0, 3.8, 3.0)
    assert stats([None]).count == 0 and stats([]).median is None


def _rec(
    i: int, tier: str, rate: float | None, tokens: int, t_send: float, t_last: float, ok: bool = True
) -> RequestRecord:
    return RequestRecord(
        index=i,
        phase="measured",
        prompt_id=f"p{i}",
        tier=tier,
        ok=ok,
        max_tokens=tokens,
        t_send=t_send,
        t_first=t_send + 0.5,
        t_last=t_last,
        t_end=t_last + 0.01,
        completion_tokens=tokens,
        decode_tok_s=rate,
        ttft_s=0.5,
        tpot_ms=1000 / rate if rate else None,
        tokens_per_chunk=2.0,
    )


def test_summary_per_tier_overall_and_window() -> None:
    records = [
        _rec(0, "low_entropy", 10.0, 100, 0.0, 10.0),
        _rec(1, "high_entropy", 6.0, 100, 10.1, 20.0),
        _rec(2, "low_entropy", 14.0, 100, 20.1, 28.0),
        _rec(3, "high_entropy", None, 40, 28.1, 30.0, ok=False),
    ]
    summary = summarize(records)
    low, high = summary.tiers["low_entropy"], summary.tiers["high_entropy"]
    assert (low.requests, low.failed, low.completion_tokens, low.decode_tok_s.median) == (2, 0, 200, 12.0)
    assert (high.requests, high.failed, high.completion_tokens, high.decode_tok_s.median) == (2, 1, 100, 6.0)
    assert summary.overall.decode_tok_s.median == 10.0 and summary.overall.failed == 1
    # Aggregate: every token streamed (failed requests too: the server made them) over first send .. last token.
    assert summary.window_s == 30.0 and summary.aggregate_tok_s == 340 / 30.0


def test_sweep_point() -> None:
    point = sweep_point(4, [_rec(0, "low_entropy", 8.0, 50, 1.0, 3.0), _rec(1, "low_entropy", 12.0, 50, 1.0, 5.0)])
    assert (point.concurrency, point.requests, point.failed, point.completion_tokens) == (4, 2, 0, 100)
    assert point.window_s == 4.0 and point.aggregate_tok_s == 25.0 and point.median_decode_tok_s == 10.0


def test_a_bursty_record_counts_its_end_to_end_rate_and_no_ttft() -> None:
    bursty = _rec(1, "low_entropy", 90000.0, 100, 10.0, 14.0).model_copy(update={"bursty": True, "e2e_tok_s": 25.0})
    summary = summarize([_rec(0, "low_entropy", 10.0, 100, 0.0, 10.0), bursty])
    assert summary.overall.bursty == 1 and summary.overall.completion_tokens == 200
    assert summary.overall.decode_tok_s.count == 2 and summary.overall.decode_tok_s.median == 17.5
    assert summary.overall.ttft_s.count == 1 and summary.overall.tpot_ms.count == 1
