"""vLLM's Prometheus `/metrics`: parse with prometheus_client's text parser, diff two scrapes. Pure.

Counters are diffed per labelled series and then summed over `engine` (and every other label but `position`),
so one engine restarting mid-window counts from its restart instead of going negative (Prometheus' own rule:
a counter that went down was reset, and its new value is the increase since).

A counter whose value is NaN or infinite (a broken exporter, a proxy rewriting the body) carries no count:
it is kept out of the sums and named, every figure that depended on it is unknown (None), and spec-decode
figures that depended on it make the delta unavailable with the reason, so the verdict fails with it.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from k3deploy.errors import MetricsFormatError
from k3deploy.report.smoke import MetricsDelta, SpecDecodeDelta

GENERATION_TOKENS = "vllm:generation_tokens_total"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
COUNTERS = (GENERATION_TOKENS, PROMPT_TOKENS, DRAFTS, DRAFT_TOKENS, ACCEPTED, ACCEPTED_PER_POS)

SeriesKey = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    """The counter series k3deploy reads, keyed by (sample name, sorted labels), and when the scrape began and ended."""

    series: dict[SeriesKey, float]
    started: float
    finished: float
    #: Series whose value was NaN or infinite, as `name{labels}=value`: they are not in `series`.
    non_finite: tuple[str, ...] = field(default=())
    #: Lines that did not parse, as `line N: text` (only `parse_metrics_tolerant` keeps going past them).
    malformed: tuple[str, ...] = field(default=())

    def names(self) -> set[str]:
        """Sample names present."""
        return {name for name, _ in self.series}


def parse_metrics(
    text: str, started: float, finished: float | None = None, names: Collection[str] = COUNTERS
) -> MetricsSnapshot:
    """Keep the samples named in `names` (default: the counters of `COUNTERS`) from a Prometheus text exposition
    scraped between `started` and `finished`."""
    series: dict[SeriesKey, float] = {}
    non_finite: list[str] = []
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in names:
                    key = (sample.name, tuple(sorted(sample.labels.items())))
                    value = float(sample.value)
                    if math.isfinite(value):
                        series[key] = value
                    else:
                        non_finite.append(f"{_series_name(key)}={value}")
    except ValueError as exc:
        raise MetricsFormatError(f"/metrics is not Prometheus text: {exc}") from None
    return MetricsSnapshot(series, started, started if finished is None else finished, tuple(non_finite))


def parse_metrics_tolerant(
    text: str, started: float, finished: float | None = None, names: Collection[str] = COUNTERS
) -> MetricsSnapshot:
    """`parse_metrics`, but a line that does not parse is skipped and kept in `malformed` (a watch row's error,
    not the end of the scrape): the whole text first, then, when that fails, each sample line on its own. Text
    of which no line parses (a login page) is still MetricsFormatError."""
    try:
        return parse_metrics(text, started, finished, names)
    except MetricsFormatError:
        pass
    series: dict[SeriesKey, float] = {}
    non_finite: list[str] = []
    malformed: list[str] = []
    parsed = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            one = parse_metrics(line + "\n", started, finished, names)
        except MetricsFormatError:
            malformed.append(f"line {number}: {line[:80]!r}")
            continue
        parsed += 1
        series.update(one.series)
        non_finite += one.non_finite
    if not parsed:
        raise MetricsFormatError(
            f"/metrics is not Prometheus text: no line parses ({malformed[0] if malformed else 'empty'})"
        )
    end = started if finished is None else finished
    return MetricsSnapshot(series, started, end, tuple(non_finite), tuple(malformed))


def _series_name(key: SeriesKey) -> str:
    return key[0] + "{" + ",".join(f'{k}="{v}"' for k, v in key[1]) + "}"


def _broken(before: MetricsSnapshot, after: MetricsSnapshot) -> dict[str, str]:
    """Counter name -> the first non-finite series of it, in either scrape."""
    out: dict[str, str] = {}
    for text in (*before.non_finite, *after.non_finite):
        out.setdefault(text.split("{", 1)[0], text)
    return out


def counter_increase(before: float | None, after: float) -> float:
    """Increase of one counter series; a value lower than before means a reset, so the increase is the new value."""
    if before is None or after < before:
        return after
    return after - before


def _increases(before: MetricsSnapshot, after: MetricsSnapshot) -> tuple[dict[SeriesKey, float], list[str]]:
    out: dict[SeriesKey, float] = {}
    resets: list[str] = []
    for key, value in after.series.items():
        prev = before.series.get(key)
        if prev is not None and value < prev:
            resets.append(_series_name(key))
        out[key] = counter_increase(prev, value)
    return out, resets


def _total(increases: dict[SeriesKey, float], name: str) -> float | None:
    values = [v for (n, _), v in increases.items() if n == name]
    return sum(values) if values else None


def _per_position(increases: dict[SeriesKey, float]) -> dict[int, float]:
    out: dict[int, float] = {}
    for (name, labels), value in increases.items():
        pos = dict(labels).get("position")
        if name == ACCEPTED_PER_POS and pos is not None and pos.isdigit():
            out[int(pos)] = out.get(int(pos), 0.0) + value
    return dict(sorted(out.items()))


def spec_decode_figures(
    drafts: float, draft_tokens: float, accepted: float, per_pos: dict[int, float]
) -> SpecDecodeDelta:
    """Acceptance rate = accepted / draft tokens; mean acceptance length = 1 + accepted / drafts; per-position rates."""
    return SpecDecodeDelta(
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted,
        accepted_per_position=per_pos,
        acceptance_rate=accepted / draft_tokens if draft_tokens > 0 else None,
        mean_acceptance_length=1.0 + accepted / drafts if drafts > 0 else None,
        per_position_rates={pos: n / drafts for pos, n in per_pos.items()} if drafts > 0 else {},
    )


def diff(before: MetricsSnapshot, after: MetricsSnapshot) -> MetricsDelta:
    """The window's deltas; `spec_decode` is None when the server exports no spec-decode series at all.

    The window runs from the end of the first scrape to the start of the second: the tightest span that holds all
    traffic between them (a scrape of a busy server can take a good part of a second; its midpoint would not do).
    """
    increases, resets = _increases(before, after)
    broken = _broken(before, after)
    window = after.started - before.finished
    generation = None if GENERATION_TOKENS in broken else _total(increases, GENERATION_TOKENS)
    prompt = None if PROMPT_TOKENS in broken else _total(increases, PROMPT_TOKENS)
    spec_broken = [broken[name] for name in (DRAFTS, DRAFT_TOKENS, ACCEPTED) if name in broken]
    if spec_broken:
        return MetricsDelta(
            available=False,
            error=f"/metrics reported a non-finite spec-decode counter: {spec_broken[0]}",
            window_s=window,
            generation_tokens=generation,
            prompt_tokens=prompt,
            server_tok_s=generation / window if generation is not None and window > 0 else None,
            counter_resets=resets,
        )
    spec = None
    if {DRAFTS, DRAFT_TOKENS, ACCEPTED} & after.names():
        spec = spec_decode_figures(
            _total(increases, DRAFTS) or 0.0,
            _total(increases, DRAFT_TOKENS) or 0.0,
            _total(increases, ACCEPTED) or 0.0,
            _per_position(increases),
        )
    return MetricsDelta(
        available=True,
        window_s=window,
        generation_tokens=generation,
        prompt_tokens=prompt,
        server_tok_s=generation / window if generation is not None and window > 0 else None,
        spec_decode=spec,
        counter_resets=resets,
    )
