"""Bench figures from request records and /metrics deltas. Pure: the formulas are in report.bench.FORMULAS.

Per-request timing comes from smoke's record code (k3deploy/smoke/record.py), percentiles from smoke's summary,
spec-decode ratios from smoke's metrics; this module only groups them per (category, concurrency) cell.
"""

from __future__ import annotations

from collections.abc import Sequence

from k3deploy.report.bench import BenchRequest, CellFigures, ServerDelta
from k3deploy.report.smoke import MetricsDelta, RequestRecord
from k3deploy.smoke.attribution import token_mismatch
from k3deploy.smoke.metrics import spec_decode_figures
from k3deploy.smoke.summary import stats

OVERALL = "overall"


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def compact(record: RequestRecord, category: str) -> BenchRequest:
    """The bench record of a smoke request record: its figures, without per-chunk stamps."""
    return BenchRequest(
        category=category,
        concurrency=record.concurrency,
        prompt_id=record.prompt_id,
        ok=record.ok,
        error=record.error,
        t_send=round(record.t_send, 6),
        t_end=round(record.t_end, 6),
        ttft_s=_r(record.ttft_s),
        t_last=_r(record.t_last),
        prompt_tokens=record.prompt_tokens,
        completion_tokens=record.completion_tokens,
        chunks=len(record.chunk_offsets_s),
        decode_tok_s=_r(record.decode_tok_s),
        e2e_tok_s=_r(record.e2e_tok_s),
        tpot_ms=_r(record.tpot_ms),
        tokens_per_chunk=_r(record.tokens_per_chunk),
        bursty=record.bursty,
    )


def decode_figure(request: BenchRequest) -> float | None:
    """Decode tok/s, or for a bursty request its end-to-end tok/s (a lower bound); as smoke's summary does."""
    return request.e2e_tok_s if request.bursty else request.decode_tok_s


def window(requests: Sequence[BenchRequest]) -> float | None:
    """First send to last output chunk (or stream end) among the requests."""
    if not requests:
        return None
    start = min(r.t_send for r in requests)
    end = max(r.t_last if r.t_last is not None else r.t_end for r in requests)
    return end - start if end > start else None


def server_delta(delta: MetricsDelta | None, error: str | None = None) -> ServerDelta:
    """The parts of smoke's MetricsDelta a bench cell keeps."""
    if delta is None or not delta.available:
        return ServerDelta(available=False, error=error or (delta.error if delta else "no /metrics scrape"))
    return ServerDelta(
        available=True,
        generation_tokens=delta.generation_tokens,
        prompt_tokens=delta.prompt_tokens,
        spec_decode=delta.spec_decode,
        counter_resets=delta.counter_resets,
    )


def sum_server(deltas: Sequence[ServerDelta | None]) -> ServerDelta | None:
    """Deltas of several cells added up (spec-decode ratios recomputed from the summed counters)."""
    present = [d for d in deltas if d is not None]
    if not present:
        return None
    if not all(d.available for d in present):
        return ServerDelta(available=False, error=next(d.error for d in present if not d.available))

    def total(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    spec = None
    specs = [d.spec_decode for d in present if d.spec_decode is not None]
    if len(specs) == len(present):
        per_pos: dict[int, float] = {}
        for s in specs:
            for pos, n in s.accepted_per_position.items():
                per_pos[pos] = per_pos.get(pos, 0.0) + n
        spec = spec_decode_figures(
            sum(s.drafts for s in specs),
            sum(s.draft_tokens for s in specs),
            sum(s.accepted_tokens for s in specs),
            dict(sorted(per_pos.items())),
        )
    return ServerDelta(
        available=True,
        generation_tokens=total([d.generation_tokens for d in present]),
        prompt_tokens=total([d.prompt_tokens for d in present]),
        spec_decode=spec,
        counter_resets=[r for d in present for r in d.counter_resets],
    )


def cell_figures(
    category: str, concurrency: int, requests: Sequence[BenchRequest], server: ServerDelta | None
) -> CellFigures:
    """Figures of one cell; failed requests are counted, their tokens summed, their timings left out."""
    good = [r for r in requests if r.ok]
    timed = [r for r in good if not r.bursty]
    span = window(requests)
    tokens = sum(r.completion_tokens or 0 for r in requests)
    return CellFigures(
        category=category,
        concurrency=concurrency,
        requests=len(requests),
        failed=len(requests) - len(good),
        bursty=len(good) - len(timed),
        completion_tokens=tokens,
        decode_tok_s=stats([decode_figure(r) for r in good]),
        e2e_tok_s=stats([r.e2e_tok_s for r in good]),
        ttft_ms=stats([None if r.ttft_s is None else 1000.0 * r.ttft_s for r in timed]),
        tpot_ms=stats([r.tpot_ms for r in timed]),
        tokens_per_chunk=stats([r.tokens_per_chunk for r in good]),
        window_s=span,
        aggregate_tok_s=tokens / span if span else None,
        server=server,
    )


def overall_figures(concurrency: int, requests: Sequence[BenchRequest], cells: Sequence[CellFigures]) -> CellFigures:
    """All categories of one concurrency level together; the window spans every cell (categories run one after another)."""
    figures = cell_figures(OVERALL, concurrency, requests, sum_server([c.server for c in cells]))
    # Categories run back to back, each between its own scrapes: the aggregate is tokens over the summed cell windows.
    busy = sum(c.window_s or 0.0 for c in cells)
    return figures.model_copy(
        update={"window_s": busy or None, "aggregate_tok_s": figures.completion_tokens / busy if busy else None}
    )


def token_mismatches(cells: Sequence[CellFigures]) -> list[str]:
    """Cells whose client-counted tokens differ from the server's generation-token delta."""
    out = []
    for c in cells:
        server = c.server
        mismatch = (
            token_mismatch(c.completion_tokens, server.generation_tokens) if server and server.available else None
        )
        if mismatch is not None:
            out.append(f"{c.category} @ concurrency {c.concurrency}: {mismatch}")
    return out
