"""Turn what smoke observed into named checks against the profile's targets. Pure.

Check names, in order: liveness, correctness, throughput, speculative decoding, decode target.
Every failure names the metric, the measured value and the target, and says how to look further.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from k3deploy.measure.attribution import impossible, stream_contradicts, unattributable
from k3deploy.report.model import CheckResult, Status
from k3deploy.report.smoke import MetricsDelta, RequestRecord, SmokeSummary, SpecDecodeDelta

LIVENESS = "liveness"
CORRECTNESS = "correctness"
THROUGHPUT = "throughput"
SPECULATIVE = "speculative decoding"
DECODE_TARGET = "decode target"
NOT_ACTIVE = "speculative decoding is not active"


@dataclass(frozen=True, slots=True)
class LivenessFacts:
    """What /health and /v1/models answered; `error` when they could not be asked."""

    health_status: int | None = None
    models: tuple[str, ...] | None = None
    error: str | None = None
    unauthorized: bool = False
    not_ready: bool = False


#: Model ids a liveness failure quotes (a hostile endpoint may list millions), and characters of each.
MAX_MODELS_SHOWN = 10
MAX_MODEL_ID_CHARS = 200


def judge_liveness(facts: LivenessFacts, served_name: str) -> CheckResult:
    """/health is 200 and /v1/models lists the served name."""
    target = f"/health 200, /v1/models lists {served_name!r}"
    if facts.error is not None:
        hint = (
            "pass the API key with --api-key-env VAR (the server runs with --api-key)"
            if facts.unauthorized
            else "the model may still be loading: read the server log, or wait longer with --wait-ready "
            "(smoke.ready_timeout_s)"
            if facts.not_ready
            else "check the URL, that the server runs, and the network path to it"
        )
        return CheckResult(name=LIVENESS, status=Status.FAIL, target=target, detail=facts.error, hint=hint)
    if facts.health_status != 200:
        return CheckResult(
            name=LIVENESS,
            status=Status.FAIL,
            measured=facts.health_status,
            target=target,
            detail=f"/health answered {facts.health_status}",
            hint="the engine is not healthy: read the server log",
        )
    models = list(facts.models or ())
    if served_name not in models:
        shown = [m[:MAX_MODEL_ID_CHARS] for m in models[:MAX_MODELS_SHOWN]]
        listed = f"{shown}" if len(models) <= MAX_MODELS_SHOWN else f"{len(models)} models, first {shown}"
        return CheckResult(
            name=LIVENESS,
            status=Status.FAIL,
            measured=shown,
            target=target,
            detail=f"/v1/models lists {listed}, not {served_name!r}",
            hint="the endpoint serves another model: check --endpoint, or model.served_name in the profile",
        )
    return CheckResult(name=LIVENESS, status=Status.PASS, measured=served_name, target=target, detail="healthy")


def judge_correctness(enabled: bool, results: Sequence[tuple[str, bool, str]]) -> CheckResult:
    """Every probe answered right; a profile that turned the check off gets SKIP, never PASS."""
    if not enabled:
        return CheckResult(
            name=CORRECTNESS, status=Status.SKIP, detail="turned off by the profile (smoke.correctness: false)"
        )
    wrong = [(pid, detail) for pid, ok, detail in results if not ok]
    measured = f"{len(results) - len(wrong)}/{len(results)} right"
    if not results or wrong:
        detail = "; ".join(f"{pid}: {d}" for pid, d in wrong) or "no probe ran"
        return CheckResult(
            name=CORRECTNESS,
            status=Status.FAIL,
            measured=measured,
            target="all right",
            detail=detail,
            hint="wrong answers at full speed point at a broken cross-node all-reduce or bad weights",
        )
    return CheckResult(
        name=CORRECTNESS, status=Status.PASS, measured=measured, target="all right", detail="every probe answered right"
    )


def judge_throughput(measured: Sequence[RequestRecord], summary: SmokeSummary) -> CheckResult:
    """Every measured request streamed in full; WARN when the server gave no per-chunk token counts."""
    failed = [r for r in measured if not r.ok]
    rate = summary.overall.decode_tok_s.median
    if not measured or failed:
        first = failed[0].error if failed else "no request was run"
        return CheckResult(
            name=THROUGHPUT,
            status=Status.FAIL,
            measured=f"{len(failed)}/{len(measured)} failed",
            target="every request streams in full",
            detail=f"request {failed[0].index if failed else '-'}: {first}",
            hint="read the server log around the failure; per-request errors are in the JSON report",
        )
    bs1 = summary.overall
    detail = f"{bs1.completion_tokens} tokens in {bs1.requests} bs=1 requests" + (
        f", median decode {rate:.2f} tok/s" if rate else ""
    )
    bursty = [r for r in measured if r.bursty]
    if bursty:
        return CheckResult(
            name=THROUGHPUT,
            status=Status.WARN,
            measured=rate,
            target="every request streams in full",
            detail=f"{detail}; {len(bursty)} of {len(measured)} streams arrived in bursts: for them the "
            "end-to-end tok/s, a lower bound, stands in for decode tok/s, and TTFT/TPOT are left out",
            hint="a proxy that buffers responses (disable buffering for text/event-stream) or an API server short of CPU",
        )
    if not all(r.per_chunk_usage for r in measured):
        return CheckResult(
            name=THROUGHPUT,
            status=Status.WARN,
            measured=rate,
            target="every request streams in full",
            detail=detail + "; per-chunk figures unavailable: the server sent no continuous_usage_stats, "
            "totals come from the final usage",
            hint="a vLLM server sends per-chunk usage; an older one or a proxy may not",
        )
    return CheckResult(
        name=THROUGHPUT, status=Status.PASS, measured=rate, target="every request streams in full", detail=detail
    )


def judge_speculative(
    expected: bool,
    min_length: float | None,
    delta: MetricsDelta | None,
    summary: SmokeSummary | None,
    *,
    client_tokens: int | None = None,
    num_speculative_tokens: int | None = None,
    require_attribution: bool = False,
    per_request: tuple[SpecDecodeDelta, int, int] | None = None,
) -> CheckResult:
    """Drafts happened and the mean acceptance length reaches the minimum (when the profile speculates).

    With `client_tokens` (what the measured requests streamed, failed ones included) the delta must be theirs and
    its counts possible (measure/attribution.py). A delta other traffic moved (a leader already serving users, two
    groups behind one URL) is no evidence either way: WARN, never a PASS of its figure and never a FAIL that rolls
    a healthy group back, unless `require_attribution` (smoke.require_attribution) asks for the strict FAIL.
    Counters no server can produce and a stream that contradicts them FAIL in both cases.

    `per_request` (measure/per_request.py `own_acceptance`: the responses' own counts, the tokens and requests)
    is judged in place of /metrics: it is attributable by construction."""
    target = f">= {min_length}" if min_length is not None else ("drafts > 0" if expected else None)
    if summary is None or summary.overall.requests == summary.overall.failed:
        return CheckResult(
            name=SPECULATIVE,
            status=Status.FAIL if expected else Status.SKIP,
            target=target,
            detail="no measured request succeeded; acceptance cannot be judged",
        )
    if expected and per_request is not None:
        return _judge_own(per_request, min_length, summary, target, num_speculative_tokens)
    if delta is None or not delta.available:
        why = delta.error if delta is not None and delta.error else "/metrics was not read"
        if not expected:
            return CheckResult(
                name=SPECULATIVE, status=Status.SKIP, detail=f"the profile has no speculative decoding; {why}"
            )
        return CheckResult(
            name=SPECULATIVE,
            status=Status.FAIL,
            target=target,
            detail=f"cannot verify speculative decoding: {why}",
            hint="expose vLLM's /metrics on the serving port (do not disable it), or reach it through the same URL",
        )
    if expected and client_tokens is not None:
        foreign = unattributable(client_tokens, delta)
        if foreign is not None and not require_attribution:
            return _judge_unattributed(foreign, delta, summary, target, num_speculative_tokens)
        if foreign is not None:
            return CheckResult(
                name=SPECULATIVE,
                status=Status.FAIL,
                target=target,
                detail=f"acceptance unattributable: {foreign}",
                hint="smoke one server: point --endpoint at one group's leader (several groups behind one Service "
                "spread the requests and the scrapes), or let `up` smoke each group by its leader",
            )
    spec = delta.spec_decode
    drafts = spec.drafts if spec else 0.0
    if drafts <= 0:
        if not expected:
            return CheckResult(
                name=SPECULATIVE, status=Status.SKIP, measured=0, detail="the profile has no speculative decoding"
            )
        why = "no spec-decode series in /metrics" if spec is None else "0 drafts during the measured requests"
        return CheckResult(
            name=SPECULATIVE,
            status=Status.FAIL,
            measured=0,
            target=target,
            detail=f"{NOT_ACTIVE}: {why}",
            hint="check --speculative-config in the server's argv and its start-up log",
        )
    length = spec.mean_acceptance_length if spec is not None else None
    if spec is None or length is None or not math.isfinite(length):
        return CheckResult(
            name=SPECULATIVE,
            status=Status.FAIL if expected else Status.WARN,
            target=target,
            detail=f"mean acceptance length unknown: the spec-decode counters give {length} "
            f"({spec.accepted_tokens if spec else None} accepted / {drafts} drafts)",
            hint="read the server's /metrics: its spec-decode counters are not usable counts",
        )
    measured_requests = summary.overall.requests
    bad = (
        impossible(spec, client_tokens, num_speculative_tokens, measured_requests)
        if expected and client_tokens is not None
        else None
    )
    refuted = _refuted(bad, length, target, summary, witness=expected)
    if refuted is not None:
        return refuted
    chunk = summary.overall.tokens_per_chunk.mean
    positions = ", ".join(f"{p}: {r:.2f}" for p, r in spec.per_position_rates.items())
    detail = (
        f"mean acceptance length {length:.3f} (1 + {spec.accepted_tokens:g} accepted / {drafts:g} drafts), "
        f"acceptance rate {spec.acceptance_rate:.3f}"
        if spec.acceptance_rate is not None
        else f"mean acceptance length {length:.3f}"
    )
    detail += f"; per position {{{positions}}}" if positions else ""
    detail += f"; mean tokens per chunk at bs=1 {chunk:.3f}" if chunk is not None else "; tokens per chunk unavailable"
    if not expected:
        return CheckResult(
            name=SPECULATIVE,
            status=Status.WARN,
            measured=length,
            detail="drafts seen but the profile has no speculative decoding; " + detail,
        )
    if min_length is not None and length is not None and length < min_length:
        return CheckResult(
            name=SPECULATIVE,
            status=Status.FAIL,
            measured=length,
            target=target,
            detail=f"mean acceptance length {length:.3f} is below the minimum {min_length}; " + detail,
            hint="check the draft model and its revision, temperature, and that the prompts suit the tier",
        )
    return CheckResult(name=SPECULATIVE, status=Status.PASS, measured=length, target=target, detail=detail)


def judge_decode_target(
    target: float | None,
    tier: str,
    summary: SmokeSummary | None,
    peak: float | None = None,
    baseline: float | None = None,
    *,
    tolerance: float = 0.0,
) -> CheckResult:
    """Median bs=1 decode tok/s of the judged tier against the profile's target, less `tolerance` (smoke.decode_tolerance,
    a fraction); peak and baseline only reported. Below the target but inside the band passes and says so: a few
    built-in prompts are a health gate, and whether the published figure is reached is `k3deploy bench`'s to judge."""
    judged_tier = "low_entropy" if tier == "all" else tier
    part = summary.tiers.get(judged_tier) if summary is not None else None
    measured = part.decode_tok_s.median if part is not None else None
    metric = f"decode tok/s (median, {judged_tier} tier, bs=1)"
    extra = "".join(
        f"; {name} {value:g} tok/s (reported, not enforced)"
        for name, value in (("published peak", peak), ("published baseline", baseline))
        if value is not None
    )
    if target is None:
        return CheckResult(
            name=DECODE_TARGET, status=Status.SKIP, measured=measured, detail=f"no decode target in the profile{extra}"
        )
    if measured is None or not math.isfinite(measured):
        return CheckResult(
            name=DECODE_TARGET,
            status=Status.FAIL,
            target=target,
            detail=f"{metric}: nothing measured{extra}",
            hint="see the throughput check",
        )
    floor = target * (1.0 - tolerance)
    band = f" less the {tolerance:.0%} band ({floor:.2f})" if tolerance > 0 else ""
    if measured < floor:
        return CheckResult(
            name=DECODE_TARGET,
            status=Status.FAIL,
            measured=measured,
            target=target,
            detail=f"{metric} {measured:.2f} is below the target {target:g}{band}{extra}",
            hint="compare with the published figure's workload; check the draft's acceptance and the GPUs' clocks",
        )
    if measured < target:
        return CheckResult(
            name=DECODE_TARGET,
            status=Status.PASS,
            measured=measured,
            target=target,
            detail=f"{metric} {measured:.2f} is below the target {target:g} but within its {tolerance:.0%} band "
            f"(>= {floor:.2f}); `k3deploy bench` judges the published figure{extra}",
        )
    return CheckResult(
        name=DECODE_TARGET,
        status=Status.PASS,
        measured=measured,
        target=target,
        detail=f"{metric} {measured:.2f} >= {target:g}{extra}",
    )


def _refuted(
    bad: str | None, length: float | None, target: str | None, summary: SmokeSummary, *, witness: bool
) -> CheckResult | None:
    """The speculative FAIL that holds whoever else shares the counters: counters no server can produce (`bad`,
    from `impossible`), or, when `witness`, an acceptance length the smoke's own streams contradict; None when
    neither."""
    if bad is not None:
        return CheckResult(
            name=SPECULATIVE,
            status=Status.FAIL,
            measured=length,
            target=target,
            detail=f"impossible spec-decode counters: {bad}",
            hint="read the server's /metrics: a proxy or exporter rewrites the vllm:spec_decode_* counters",
        )
    chunk = summary.overall.tokens_per_chunk
    contradicted = stream_contradicts(length, chunk.mean, chunk.p90) if witness else None
    if contradicted is not None:
        return CheckResult(
            name=SPECULATIVE,
            status=Status.FAIL,
            measured=length,
            target=target,
            detail=f"acceptance the stream contradicts: {contradicted}",
            hint="read /metrics from the server that answered (one group's leader); a proxy or exporter may "
            "rewrite the vllm:spec_decode_* counters",
        )
    return None


def _judge_unattributed(
    foreign: str, delta: MetricsDelta, summary: SmokeSummary, target: str | None, num_speculative_tokens: int | None
) -> CheckResult:
    """The speculative check when other traffic shares the counters: what no server can produce, or what the
    smoke's own streams contradict, still FAILs; anything else is reported, unjudged, with a WARN."""
    spec = delta.spec_decode
    length = spec.mean_acceptance_length if spec is not None else None
    # Other requests' rounds are in the counts, and how many requests there were is unknown: no round bound.
    bad = impossible(spec, None, num_speculative_tokens) if spec is not None else None
    refuted = _refuted(bad, length, target, summary, witness=spec is not None and spec.drafts > 0)
    if refuted is not None:
        return refuted
    shown = f"; the server-wide mean acceptance length {length:.3f} is reported, not judged" if length else ""
    return CheckResult(
        name=SPECULATIVE,
        status=Status.WARN,
        target=target,
        detail=f"acceptance unattributable: {foreign}{shown}",
        hint="other traffic moved the counters (a leader already serving, or several groups behind one URL): "
        "serve with --per-request-spec-decode-metrics (vllm.per_request_spec_decode_metrics) to judge each "
        "request by its own figures, smoke one group's leader, or set smoke.require_attribution: true to FAIL",
    )


def _judge_own(
    per_request: tuple[SpecDecodeDelta, int, int],
    min_length: float | None,
    summary: SmokeSummary,
    target: str | None,
    num_speculative_tokens: int | None,
) -> CheckResult:
    """The speculative check from the responses' own counts: bounded as the /metrics figure is (steps plus
    accepted within the tokens these requests streamed, length within 1 + num_speculative_tokens) and witnessed
    by the same streams."""
    spec, streamed, requests = per_request
    source = f"from the {streamed} tokens' own responses (per-request spec-decode metrics)"
    length = spec.mean_acceptance_length
    if spec.drafts <= 0 or length is None:
        return CheckResult(
            name=SPECULATIVE,
            status=Status.FAIL,
            measured=0,
            target=target,
            detail=f"{NOT_ACTIVE}: 0 verify steps {source}",
            hint="check --speculative-config in the server's argv and its start-up log",
        )
    bad = impossible(spec, streamed, num_speculative_tokens, requests)
    chunk = summary.overall.tokens_per_chunk
    contradicted = bad or stream_contradicts(length, chunk.mean, chunk.p90)
    if contradicted is not None:
        return CheckResult(
            name=SPECULATIVE,
            status=Status.FAIL,
            measured=length,
            target=target,
            detail=f"impossible per-request spec-decode counts: {contradicted}",
            hint="a proxy rewrites the responses' metrics.speculative_decoding, or the server is not vLLM",
        )
    detail = (
        f"mean acceptance length {length:.3f} (1 + {spec.accepted_tokens:g} accepted / {spec.drafts:g} verify "
        f"steps) {source}"
    )
    if min_length is not None and length < min_length:
        return CheckResult(
            name=SPECULATIVE,
            status=Status.FAIL,
            measured=length,
            target=target,
            detail=f"mean acceptance length {length:.3f} is below the minimum {min_length}; " + detail,
            hint="check the draft model and its revision, temperature, and that the prompts suit the tier",
        )
    return CheckResult(name=SPECULATIVE, status=Status.PASS, measured=length, target=target, detail=detail)
