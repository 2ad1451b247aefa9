"""Percentiles and per-tier summaries of request records. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence

from k3deploy.report.smoke import RequestRecord, SmokeSummary, Stats, SweepPoint, Tier, TierSummary

TIERS: tuple[Tier, ...] = ("low_entropy", "high_entropy")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's default method)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def stats(values: Sequence[float | None]) -> Stats:
    """p10 / median / p90 / mean of the values that are not None."""
    present = [v for v in values if v is not None]
    if not present:
        return Stats(count=0)
    return Stats(
        count=len(present),
        p10=percentile(present, 10),
        median=percentile(present, 50),
        p90=percentile(present, 90),
        mean=sum(present) / len(present),
    )


def decode_figure(record: RequestRecord) -> float | None:
    """The record's decode tok/s, or for a bursty one its end-to-end tok/s (a lower bound)."""
    return record.e2e_tok_s if record.bursty else record.decode_tok_s


def summarize_tier(records: Sequence[RequestRecord]) -> TierSummary:
    """Figures of the successful records; failed ones are only counted.

    A bursty record's chunk stamps say nothing about decode steps: it has no TTFT/TPOT figure, and its end-to-end
    tok/s, which can only understate the decode rate, stands in for its decode tok/s.
    """
    good = [r for r in records if r.ok]
    timed = [r for r in good if not r.bursty]
    return TierSummary(
        requests=len(records),
        failed=len(records) - len(good),
        bursty=len(good) - len(timed),
        completion_tokens=sum(r.completion_tokens or 0 for r in good),
        decode_tok_s=stats([decode_figure(r) for r in good]),
        ttft_s=stats([r.ttft_s for r in timed]),
        tpot_ms=stats([r.tpot_ms for r in timed]),
        tokens_per_chunk=stats([r.tokens_per_chunk for r in good]),
    )


def window(records: Sequence[RequestRecord]) -> float | None:
    """From the first send to the last output token (or stream end) among the records."""
    if not records:
        return None
    start = min(r.t_send for r in records)
    end = max(r.t_last if r.t_last is not None else r.t_end for r in records)
    return end - start if end > start else None


def aggregate_tok_s(records: Sequence[RequestRecord]) -> tuple[int, float | None, float | None]:
    """(completion tokens of all records, their window, tokens / window)."""
    tokens = sum(r.completion_tokens or 0 for r in records)
    span = window(records)
    return tokens, span, (tokens / span if span else None)


def sweep_point(concurrency: int, records: Sequence[RequestRecord]) -> SweepPoint:
    """Aggregate throughput of one concurrency level over its own window."""
    tokens, span, rate = aggregate_tok_s(records)
    median = stats([decode_figure(r) for r in records if r.ok]).median
    return SweepPoint(
        concurrency=concurrency,
        requests=len(records),
        failed=sum(not r.ok for r in records),
        completion_tokens=tokens,
        window_s=span or 0.0,
        aggregate_tok_s=rate,
        median_decode_tok_s=median,
    )


def summarize(measured: Sequence[RequestRecord], sweep: Sequence[SweepPoint] = ()) -> SmokeSummary:
    """Per-tier and overall figures of the measured bs=1 requests, plus their aggregate tok/s."""
    tiers = {tier: summarize_tier([r for r in measured if r.tier == tier]) for tier in TIERS}
    _, span, rate = aggregate_tok_s(measured)
    return SmokeSummary(
        tiers={k: v for k, v in tiers.items() if v.requests},
        overall=summarize_tier(measured),
        window_s=span,
        aggregate_tok_s=rate,
        sweep=list(sweep),
    )
