"""The figures `k3deploy watch` shows, from two `/metrics` scrapes or from Prometheus query results. Pure.

From scrapes, every rate is a counter delta between two consecutive scrapes of the leader's `/metrics`, with
smoke's parser and counter rules (k3deploy/measure/metrics.py: a counter that went down was reset, its new value
is the increase since). Gauges (running, waiting, KV-cache usage) are the second scrape's values.

Metric names are those vLLM exports (vllm/v1/metrics/loggers.py, PrometheusStatLogger; spec-decode counters in
vllm/v1/spec_decode/metrics.py), named once in k3deploy/observe/promql.py, whose expressions define the same
figures for `watch --prometheus`, the dashboard and the alerts. The per-request decode rate comes from the histogram of each finished
request's mean time per output token (`vllm:request_time_per_output_token_seconds`): over a window,
count / sum is 1 / (the mean TPOT of the requests that finished in it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from k3deploy.measure.metrics import (
    COUNTERS,
    MetricsSnapshot,
    SeriesKey,
    counter_increase,
    diff,
    parse_metrics_tolerant,
)
from k3deploy.observe.promql import KV_CACHE_USAGE as KV_USAGE
from k3deploy.observe.promql import PREFIX_CACHE_HITS as PREFIX_HITS
from k3deploy.observe.promql import PREFIX_CACHE_QUERIES as PREFIX_QUERIES
from k3deploy.observe.promql import RUNNING, TPOT, TTFT, WAITING
from k3deploy.profile.model import TargetsSpec

#: Counter-like samples diffed here (histogram _sum/_count only ever grow, as counters do).
HISTOGRAM_SAMPLES = (f"{TPOT}_sum", f"{TPOT}_count", f"{TTFT}_sum", f"{TTFT}_count")
WATCHED = (*COUNTERS, *HISTOGRAM_SAMPLES, PREFIX_QUERIES, PREFIX_HITS, RUNNING, WAITING, KV_USAGE)


class WatchFigures(BaseModel):
    """One interval's figures; None where the server exported nothing to compute it from."""

    model_config = ConfigDict(extra="forbid")

    window_s: float | None = Field(None, description="Seconds the deltas span (None for a Prometheus query).")
    output_tokens: float | None = Field(None, description="Generated tokens in the window (all requests).")
    output_tok_s: float | None = Field(None, description="Generated tokens per second, all requests together.")
    finished_requests: float | None = Field(None, description="Requests that finished in the window.")
    decode_tok_s: float | None = Field(
        None, description="Per-request decode tok/s: 1 / mean TPOT of finished requests."
    )
    ttft_s: float | None = Field(None, description="Mean time to first token of requests that started decoding.")
    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = Field(None, description="Fraction of the KV cache in use (fullest engine).")
    prefix_cache_hit_rate: float | None = Field(None, description="Prefix-cache hits / queries, in tokens.")
    drafts: float | None = Field(None, description="Speculative drafts in the window.")
    accepted_tokens: float | None = Field(None, description="Draft tokens accepted in the window.")
    acceptance_rate: float | None = Field(None, description="Accepted / draft tokens.")
    mean_acceptance_length: float | None = Field(None, description="1 + accepted / drafts (counts the bonus token).")
    per_position_acceptance: dict[int, float] = Field(
        default_factory=dict, description="Accepted at a draft position (vLLM's 0-based `position` label) / drafts."
    )
    counter_resets: list[str] = Field(
        default_factory=list, description="Series that went backwards (server restarted)."
    )
    notes: list[str] = Field(default_factory=list, description="Why a figure is missing.")


class Judged(BaseModel):
    """One row of the view: a figure, its target and whether it falls below (never when it is impossible)."""

    key: str
    label: str
    value: float | None
    unit: str
    target: float | None = None
    below: bool = False
    impossible: str | None = None


#: Past this no figure of one vLLM deployment can be (a trillion tokens per second, requests, seconds of TTFT):
#: a value above it is an exporter's or a query's fault (1e308, a counter summed with itself), not a measurement.
ABSURD = 1e12
#: The mean acceptance length is 1 + accepted / drafts, and a round drafts at most 16 tokens (the profile's bound
#: on num_speculative_tokens), so it lies in [1, 17].
MAX_ACCEPTANCE_LENGTH = 17.0
#: What each figure can be: fractions in [0, 1], the acceptance length in [1, 17], everything else in [0, ABSURD].
BOUNDS: dict[str, tuple[float, float]] = {
    "kv_cache_usage": (0.0, 1.0),
    "prefix_cache_hit_rate": (0.0, 1.0),
    "acceptance_rate": (0.0, 1.0),
    "mean_acceptance_length": (1.0, MAX_ACCEPTANCE_LENGTH),
}
_SLACK = 1e-9


def impossible_figures(figures: WatchFigures) -> dict[str, str]:
    """Figure key -> why its value cannot be true (negative, above its bound, not finite); the Prometheus query
    or exporter is at fault, so the view marks it and never judges it against a target."""
    out: dict[str, str] = {}
    keys = [key for key in WatchFigures.model_fields if isinstance(getattr(figures, key), (int, float))]
    for key in keys:
        value = float(getattr(figures, key))
        low, high = BOUNDS.get(key, (0.0, ABSURD))
        if not math.isfinite(value) or value < low - _SLACK or value > high + _SLACK:
            out[key] = f"{value:g} is outside [{low:g}, {high:g}]"
    for pos, rate in figures.per_position_acceptance.items():
        if not math.isfinite(rate) or not -_SLACK <= rate <= 1 + _SLACK:
            out[f"per_position_acceptance.{pos}"] = f"{rate:g} is outside [0, 1]"
    return out


#: (figure key, label, unit) in the order the view shows them.
ROWS: tuple[tuple[str, str, str], ...] = (
    ("output_tok_s", "output tok/s", "tok/s"),
    ("decode_tok_s", "decode tok/s per request", "tok/s"),
    ("ttft_s", "TTFT (mean)", "s"),
    ("running", "running requests", ""),
    ("waiting", "waiting requests", ""),
    ("kv_cache_usage", "KV-cache usage", "%"),
    ("prefix_cache_hit_rate", "prefix-cache hit rate", "%"),
    ("acceptance_rate", "acceptance rate", "%"),
    ("mean_acceptance_length", "mean acceptance length", "tok"),
)


def parse_scrape(text: str, started: float, finished: float) -> MetricsSnapshot:
    """The samples watch reads from one `/metrics` body (MetricsFormatError when it is not Prometheus text)."""
    return parse_metrics_tolerant(text, started, finished, names=WATCHED)


def _series_name(key: SeriesKey) -> str:
    return key[0] + "{" + ",".join(f'{k}="{v}"' for k, v in key[1]) + "}"


def _sum_increase(before: MetricsSnapshot, after: MetricsSnapshot, name: str) -> float | None:
    values = [counter_increase(before.series.get(key), value) for key, value in after.series.items() if key[0] == name]
    return sum(values) if values else None


def _gauge(after: MetricsSnapshot, name: str, combine: str = "sum") -> float | None:
    values = [value for (n, _), value in after.series.items() if n == name]
    if not values:
        return None
    return max(values) if combine == "max" else sum(values)


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den is not None and den > 0 else None


def figures_between(before: MetricsSnapshot, after: MetricsSnapshot) -> WatchFigures:
    """The figures of the window between two scrapes (see the module docstring for each definition)."""
    delta = diff(before, after)
    notes = [delta.error] if delta.error else []
    notes += [f"non-finite sample ignored: {text}" for text in after.non_finite]
    notes += [f"malformed /metrics {text} ignored" for text in after.malformed]
    tpot_sum = _sum_increase(before, after, f"{TPOT}_sum")
    tpot_count = _sum_increase(before, after, f"{TPOT}_count")
    ttft_sum = _sum_increase(before, after, f"{TTFT}_sum")
    ttft_count = _sum_increase(before, after, f"{TTFT}_count")
    resets = list(delta.counter_resets) + [
        _series_name(key)
        for key, value in after.series.items()
        if key[0] in (*HISTOGRAM_SAMPLES, PREFIX_QUERIES, PREFIX_HITS)
        and (prev := before.series.get(key)) is not None
        and value < prev
    ]
    spec = delta.spec_decode
    return WatchFigures(
        window_s=delta.window_s,
        output_tokens=delta.generation_tokens,
        output_tok_s=delta.server_tok_s,
        finished_requests=tpot_count,
        decode_tok_s=_ratio(tpot_count, tpot_sum),
        ttft_s=_ratio(ttft_sum, ttft_count),
        running=_gauge(after, RUNNING),
        waiting=_gauge(after, WAITING),
        kv_cache_usage=_gauge(after, KV_USAGE, "max"),
        prefix_cache_hit_rate=_ratio(
            _sum_increase(before, after, PREFIX_HITS), _sum_increase(before, after, PREFIX_QUERIES)
        ),
        drafts=spec.drafts if spec else None,
        accepted_tokens=spec.accepted_tokens if spec else None,
        acceptance_rate=spec.acceptance_rate if spec else None,
        mean_acceptance_length=spec.mean_acceptance_length if spec else None,
        per_position_acceptance=dict(spec.per_position_rates) if spec else {},
        counter_resets=resets,
        notes=notes,
    )


class DeltaTracker:
    """Keeps the previous scrape so each new one yields the figures of the window since it."""

    def __init__(self) -> None:
        self._last: MetricsSnapshot | None = None

    def update(self, snapshot: MetricsSnapshot) -> WatchFigures | None:
        """The window's figures, or None for the first scrape (it only sets the baseline)."""
        last, self._last = self._last, snapshot
        return None if last is None else figures_between(last, snapshot)


#: A query result: (labels, value) per series; a scalar result is one series without labels.
QueryResult = Sequence[tuple[Mapping[str, str], float]]


def _single(result: QueryResult | None) -> float | None:
    """The value of a one-series (or scalar) result; None for an empty one or a NaN (0/0 in PromQL)."""
    if not result:
        return None
    value = sum(v for _, v in result)
    return value if math.isfinite(value) else None


def figures_from_queries(results: Mapping[str, QueryResult]) -> WatchFigures:
    """Figures from Prometheus instant-query results, keyed by WatchFigures field name.

    `per_position_acceptance` is a vector with vLLM's `position` label (0-based draft position, as from a scrape);
    every other key is a one-series vector or a scalar.
    """
    per_pos: dict[int, float] = {}
    for labels, value in results.get("per_position_acceptance") or ():
        pos = labels.get("position", "")
        if pos.isdigit() and math.isfinite(value):
            per_pos[int(pos)] = value
    values = {key: _single(result) for key, result in results.items() if key != "per_position_acceptance"}
    known = set(WatchFigures.model_fields) - {"per_position_acceptance", "counter_resets", "notes"}
    fields: dict[str, object] = {k: v for k, v in values.items() if k in known}
    return WatchFigures.model_validate({**fields, "per_position_acceptance": dict(sorted(per_pos.items()))})


def judge(figures: WatchFigures, targets: TargetsSpec) -> list[Judged]:
    """The view's rows: each figure with the profile's target beside it, `below` when it falls short.

    Targets: `decode_tok_s` for the per-request decode rate, `min_acceptance_length` for the mean acceptance
    length. A figure that could not be computed (no request finished, no drafts) is never below its target.
    """
    target_of = {"decode_tok_s": targets.decode_tok_s, "mean_acceptance_length": targets.min_acceptance_length}
    bad = impossible_figures(figures)
    rows = []
    for key, label, unit in ROWS:
        value = getattr(figures, key)
        target = target_of.get(key)
        rows.append(
            Judged(
                key=key,
                label=label,
                value=value,
                unit=unit,
                target=target,
                below=key not in bad and value is not None and target is not None and value < target,
                impossible=bad.get(key),
            )
        )
    return rows


def below_targets(figures: WatchFigures, targets: TargetsSpec) -> list[str]:
    """Keys of the figures below their target."""
    return [row.key for row in judge(figures, targets) if row.below]
