"""Latency, throughput and goodput exactly as `vllm bench serve` defines them. Pure.

Source: vllm-project/vllm, vllm/benchmarks/serve.py (`calculate_metrics`) and
vllm/benchmarks/lib/endpoint_request_func.py (`async_request_openai_completions`), vLLM 0.32:
- TTFT: first streamed chunk carrying choices - send; E2E latency (e2el): last such chunk - send;
- ITL: every gap between consecutive output chunks, pooled over all requests;
- TPOT: (e2el - TTFT) / (output_tokens - 1), only for requests with more than one output token (0 for goodput);
- mean, std (population), median and percentiles (numpy's linear interpolation) over successful requests;
- request throughput = completed / duration; output = output tokens of successful requests / duration;
  total token throughput = (prompt + output tokens of successful requests) / duration; duration is the wall time
  from the first dispatch until every request has finished;
- goodput: requests meeting every SLO (`--goodput ttft:500 tpot:20 e2el:...`, milliseconds, inclusive) / duration.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from k3deploy.errors import UsageError
from k3deploy.measure.summary import percentile
from k3deploy.report.bench import Dist, Throughput
from k3deploy.report.smoke import RequestRecord

#: Percentiles every distribution reports; `--percentiles` adds more.
DEFAULT_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0)
#: The SLO names `vllm bench serve --goodput` accepts (check_goodput_args' VALID_NAMES).
SLO_NAMES = ("ttft", "tpot", "e2el")


@dataclass(frozen=True, slots=True)
class Timing:
    """One successful request's figures in seconds, as calculate_metrics reads a RequestFuncOutput."""

    ttft_s: float
    e2el_s: float
    tpot_s: float | None
    itl_s: tuple[float, ...]
    output_tokens: int
    prompt_tokens: int


def timing(record: RequestRecord) -> Timing | None:
    """The record's vLLM-defined figures; None for a failed request or one without an output chunk."""
    if not record.ok or record.t_first is None or record.t_last is None or not record.chunk_offsets_s:
        return None
    # From the chunk offsets (microseconds), as ITL is: the three figures then share one set of stamps.
    ttft, e2el = record.chunk_offsets_s[0], record.chunk_offsets_s[-1]
    output = record.completion_tokens or 0
    tpot = (e2el - ttft) / (output - 1) if output > 1 else None
    itl = tuple(b - a for a, b in itertools.pairwise(record.chunk_offsets_s))
    return Timing(ttft, e2el, tpot, itl, output, record.prompt_tokens or 0)


def percentile_key(q: float) -> str:
    """`p50`, `p99`, `p99.9`: the key a percentile is stored under."""
    return f"p{q:g}"


def dist(values_s: Sequence[float], percentiles: Sequence[float]) -> Dist:
    """mean, std, median and the percentiles of values in seconds, reported in milliseconds (as vLLM's `*_ms`)."""
    if not values_s:
        return Dist(count=0)
    ms = [1000.0 * v for v in values_s]
    mean = sum(ms) / len(ms)
    return Dist(
        count=len(ms),
        mean=mean,
        std=math.sqrt(sum((v - mean) ** 2 for v in ms) / len(ms)),
        median=percentile(ms, 50),
        percentiles={percentile_key(q): percentile(ms, q) for q in sorted(set(percentiles))},
    )


def parse_percentiles(raw: str | None) -> list[float]:
    """The default percentiles plus `--percentiles 25,75,99.9`; a value outside 0..100 is a usage error."""
    extra: list[float] = []
    for item in (raw or "").split(","):
        if not item.strip():
            continue
        try:
            q = float(item)
        except ValueError:
            q = -1.0
        if not 0 <= q <= 100:
            raise UsageError(
                f"--percentiles {raw!r}: {item.strip()!r} is not a number in 0..100", hint="e.g. 25,75,99.9"
            )
        extra.append(q)
    return sorted(set(DEFAULT_PERCENTILES) | set(extra))


def parse_goodput(pairs: Sequence[str]) -> dict[str, float]:
    """`ttft:500 tpot:20` as {name: milliseconds}, checked as vLLM's check_goodput_args does."""
    out: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.partition(":")
        try:
            ms = float(value) if sep else -1.0
        except ValueError:
            ms = -1.0
        if name not in SLO_NAMES or ms < 0:
            raise UsageError(
                f"--goodput {pair!r} is not NAME:MILLISECONDS with NAME one of {', '.join(SLO_NAMES)}",
                hint="for example --goodput ttft:500 tpot:20",
            )
        out[name] = ms
    return out


def meets_slo(t: Timing, slo: dict[str, float]) -> bool:
    """Every SLO met (value <= SLO), as calculate_metrics counts good requests; TPOT of a 1-token answer is 0."""
    figures = {"ttft": t.ttft_s, "tpot": t.tpot_s or 0.0, "e2el": t.e2el_s}
    return all(figures[name] <= ms / 1000.0 for name, ms in slo.items())


@dataclass(frozen=True, slots=True)
class Latencies:
    """The four distributions of a set of requests."""

    ttft_ms: Dist
    tpot_ms: Dist
    itl_ms: Dist
    e2el_ms: Dist


def latencies(timings: Sequence[Timing], percentiles: Sequence[float]) -> Latencies:
    """TTFT, TPOT, ITL (pooled gaps) and E2E latency over the timings."""
    return Latencies(
        ttft_ms=dist([t.ttft_s for t in timings], percentiles),
        tpot_ms=dist([t.tpot_s for t in timings if t.tpot_s is not None], percentiles),
        itl_ms=dist([gap for t in timings for gap in t.itl_s], percentiles),
        e2el_ms=dist([t.e2el_s for t in timings], percentiles),
    )


def throughput(
    timings: Sequence[Timing], requests: int, duration_s: float | None, slo: dict[str, float] | None
) -> Throughput:
    """Request, output-token and total-token throughput (and goodput with SLOs) over `duration_s`."""
    total_in = sum(t.prompt_tokens for t in timings)
    total_out = sum(t.output_tokens for t in timings)
    good = sum(1 for t in timings if meets_slo(t, slo)) if slo else None
    per_s = (lambda n: n / duration_s) if duration_s else (lambda _n: None)
    return Throughput(
        duration_s=duration_s,
        completed=len(timings),
        failed=requests - len(timings),
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        request_throughput=per_s(len(timings)),
        output_throughput=per_s(total_out),
        total_token_throughput=per_s(total_in + total_out),
        good=good,
        request_goodput=per_s(good) if good is not None else None,
        slo_ms=dict(slo or {}),
    )
