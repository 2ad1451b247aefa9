"""Bench figures from request records and /metrics deltas. Pure: the formulas are in report.bench.FORMULAS.

Per-request timing comes from smoke's record code (k3deploy/measure/record.py), percentiles from smoke's summary,
spec-decode ratios from smoke's metrics; this module only groups them per (category, concurrency) cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from k3deploy.bench import latency
from k3deploy.measure.attribution import impossible, stream_contradicts, token_mismatch
from k3deploy.measure.metrics import spec_decode_figures
from k3deploy.measure.summary import percentile, stats
from k3deploy.report.bench import BenchRequest, CellFigures, Point, RepeatFigures, ServerDelta
from k3deploy.report.smoke import MetricsDelta, RequestRecord

OVERALL = "overall"


@dataclass(frozen=True, slots=True)
class Sent:
    """One measured request: its full record (chunk stamps, for ITL) and its compact bench record."""

    record: RequestRecord
    request: BenchRequest


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def compact(
    record: RequestRecord,
    category: str,
    *,
    request_rate: float | None = None,
    repeat: int = 0,
    t_arrival: float | None = None,
    slo: dict[str, float] | None = None,
) -> BenchRequest:
    """The bench record of a smoke request record: its figures (vLLM's TPOT, E2E, ITL summary), no per-chunk stamps."""
    t = latency.timing(record)
    itl = t.itl_s if t is not None else ()
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
        tpot_ms=_r(1000.0 * t.tpot_s) if t is not None and t.tpot_s is not None else None,
        e2el_ms=_r(1000.0 * t.e2el_s) if t is not None else None,
        itl_ms_mean=_r(1000.0 * sum(itl) / len(itl)) if itl else None,
        itl_ms_max=_r(1000.0 * max(itl)) if itl else None,
        tokens_per_chunk=_r(record.tokens_per_chunk),
        bursty=record.bursty,
        request_rate=request_rate,
        repeat=repeat,
        t_arrival=None if t_arrival is None else round(t_arrival, 6),
        good=latency.meets_slo(t, slo) if slo and t is not None else (False if slo else None),
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
    category: str,
    point: Point,
    sent: Sequence[Sent],
    server: ServerDelta | None,
    duration_s: float | None,
    percentiles: Sequence[float] = latency.DEFAULT_PERCENTILES,
    slo: dict[str, float] | None = None,
) -> CellFigures:
    """Figures of one cell; failed requests are counted, their tokens summed, their timings left out.

    vLLM's TTFT/TPOT/ITL/E2E count every successful request; k3deploy's decode tok/s leaves bursty ones' spans out.
    """
    requests = [s.request for s in sent]
    good = [r for r in requests if r.ok]
    timed = [r for r in good if not r.bursty]
    timings = [t for t in (latency.timing(s.record) for s in sent) if t is not None]
    lat = latency.latencies(timings, percentiles)
    span = window(requests)
    tokens = sum(r.completion_tokens or 0 for r in requests)
    throughput = latency.throughput(timings, len(requests), duration_s, slo)
    return CellFigures(
        category=category,
        concurrency=point.concurrency,
        request_rate=point.request_rate,
        requests=len(requests),
        failed=len(requests) - len(good),
        bursty=len(good) - len(timed),
        completion_tokens=tokens,
        decode_tok_s=stats([decode_figure(r) for r in good]),
        output_tok_s=throughput.output_throughput,
        e2e_tok_s=stats([r.e2e_tok_s for r in good]),
        ttft_ms=lat.ttft_ms,
        tpot_ms=lat.tpot_ms,
        itl_ms=lat.itl_ms,
        e2el_ms=lat.e2el_ms,
        throughput=throughput,
        tokens_per_chunk=stats([r.tokens_per_chunk for r in good]),
        window_s=span,
        aggregate_tok_s=tokens / span if span else None,
        server=server,
    )


def repeat_figures(cell: CellFigures) -> RepeatFigures:
    """The figures of one repeat of a cell that its spread is judged on."""
    return RepeatFigures(
        decode_tok_s=cell.decode_tok_s.median,
        output_throughput=cell.throughput.output_throughput,
        ttft_ms=cell.ttft_ms.median,
        tpot_ms=cell.tpot_ms.median,
    )


def spread(values: Sequence[float | None]) -> float | None:
    """(max - min) / median of the values present; None for fewer than two."""
    present = [v for v in values if v is not None]
    if len(present) < 2:
        return None
    mid = percentile(present, 50)
    return (max(present) - min(present)) / mid if mid else None


def pooled(
    category: str,
    point: Point,
    runs: Sequence[tuple[Sequence[Sent], ServerDelta | None, float | None]],
    percentiles: Sequence[float] = latency.DEFAULT_PERCENTILES,
    slo: dict[str, float] | None = None,
    repeats: Sequence[Sequence[tuple[Sequence[Sent], ServerDelta | None, float | None]]] | None = None,
) -> CellFigures:
    """A cell over several runs of it (repeats, or the cells of a level for `overall`): requests pooled, server
    deltas and durations summed; with several repeats (each run by default, or the `repeats` groups of runs: an
    overall's repeat is that repeat of every category), the per-repeat figures and their spread."""
    per_run = [cell_figures(category, point, s, server, d, percentiles, slo) for s, server, d in runs]
    groups = repeats if repeats is not None else [[run] for run in runs]
    durations = [d for _, _, d in runs]
    total = sum(d for d in durations if d is not None) if all(d is not None for d in durations) else None
    cell = cell_figures(
        category,
        point,
        [s for sent, _, _ in runs for s in sent],
        sum_server([server for _, server, _ in runs]),
        total or None,
        percentiles,
        slo,
    )
    # The runs ran one after another: aggregate tok/s is tokens over the summed windows.
    busy = sum(c.window_s or 0.0 for c in per_run)
    update: dict[str, object] = {
        "window_s": busy or None,
        "aggregate_tok_s": cell.completion_tokens / busy if busy else None,
    }
    if len(groups) > 1:
        reps = [repeat_figures(pooled(category, point, g, percentiles, slo, repeats=[])) for g in groups]
        update |= {"repeats": reps, "spread": spread([r.decode_tok_s for r in reps])}
    return cell.model_copy(update=update)


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


def spec_problems(cells: Sequence[CellFigures], num_speculative_tokens: int | None) -> list[str]:
    """Cells whose spec-decode figures cannot be true, bounded as smoke bounds them (smoke/attribution.py): an
    acceptance rate above 1, a length past 1 + num_speculative_tokens, more accepted than drafted or streamed, or
    a length the streams' tokens per chunk contradict. Each is a warning of the run (exit 1), never a figure."""
    out = []
    for c in cells:
        spec = c.server.spec_decode if c.server is not None and c.server.available else None
        if spec is None or spec.drafts <= 0:
            continue
        why = impossible(spec, c.completion_tokens, num_speculative_tokens, c.requests) or stream_contradicts(
            spec.mean_acceptance_length, c.tokens_per_chunk.mean, c.tokens_per_chunk.p90
        )
        if why is not None:
            out.append(f"{c.category} @ concurrency {c.concurrency}: impossible spec-decode figures: {why}")
    return out
