"""The speculative check from the responses' own counts (vLLM's --per-request-spec-decode-metrics): judged in place
of /metrics, bounded as /metrics is, and witnessed by the same streams."""

from __future__ import annotations

from k3deploy.measure.metrics import spec_decode_figures
from k3deploy.report.model import Status
from k3deploy.report.smoke import MetricsDelta
from k3deploy.smoke.verdict import NOT_ACTIVE, judge_speculative
from tests.smoke.test_verdict import _rec, _summary

SUMMARY = _summary(_rec(0, 10.0, chunk=2.5))
#: /metrics that other traffic moved: 999 tokens generated while the client streamed 64.
FOREIGN = MetricsDelta(
    available=True, window_s=1.0, generation_tokens=999, spec_decode=spec_decode_figures(300, 900, 100, {})
)


def _own(steps: int, accepted: int, streamed: int = 64, k: int = 3) -> tuple:
    return spec_decode_figures(steps, steps * k, accepted, {}), streamed, 1


def test_own_counts_pass_where_metrics_are_unattributable_or_missing() -> None:
    for delta in (FOREIGN, MetricsDelta(available=False, error="404"), None):
        check = judge_speculative(
            True, 2.0, delta, SUMMARY, client_tokens=64, num_speculative_tokens=3, per_request=_own(20, 40)
        )
        assert check.status is Status.PASS and check.measured == 3.0, check
        assert "from the 64 tokens' own responses (per-request spec-decode metrics)" in check.detail
    # Strictness is about /metrics: the responses' own counts are attributable by construction.
    strict = judge_speculative(
        True, 2.0, FOREIGN, SUMMARY, client_tokens=64, require_attribution=True, per_request=_own(20, 40)
    )
    assert strict.status is Status.PASS


def test_own_counts_below_the_minimum_fail() -> None:
    check = judge_speculative(True, 2.5, FOREIGN, SUMMARY, client_tokens=64, per_request=_own(20, 20))
    assert check.status is Status.FAIL and check.measured == 2.0
    assert check.detail.startswith("mean acceptance length 2.000 is below the minimum 2.5")


def test_own_counts_no_server_can_produce_fail() -> None:
    past_k = judge_speculative(True, 2.0, None, SUMMARY, num_speculative_tokens=3, per_request=_own(10, 40))
    assert past_k.status is Status.FAIL
    assert "exceeds 1 + num_speculative_tokens = 4" in past_k.detail
    rounds = judge_speculative(True, 2.0, None, SUMMARY, per_request=_own(30, 60, streamed=64))
    assert rounds.status is Status.FAIL and "exceed the 64 tokens streamed" in rounds.detail
    drafted = spec_decode_figures(10, 5, 20, {})  # 20 accepted of 5 drafted
    rate = judge_speculative(True, 2.0, None, SUMMARY, per_request=(drafted, 64, 1))
    assert rate.status is Status.FAIL and "acceptance rate 4 exceeds 1" in rate.detail


def test_own_counts_the_stream_contradicts_fail() -> None:
    one_per_chunk = _summary(*(_rec(i, 10.0, chunk=1.0) for i in range(4)))
    check = judge_speculative(True, 2.0, None, one_per_chunk, num_speculative_tokens=3, per_request=_own(16, 32))
    assert check.status is Status.FAIL and "1.000 token(s) per chunk" in check.detail


def test_no_verify_step_is_not_active() -> None:
    check = judge_speculative(True, 2.0, FOREIGN, SUMMARY, per_request=_own(0, 0))
    assert check.status is Status.FAIL and check.detail.startswith(NOT_ACTIVE)


def test_a_profile_without_speculation_ignores_own_counts() -> None:
    check = judge_speculative(False, None, MetricsDelta(available=False, error="x"), SUMMARY, per_request=_own(20, 40))
    assert check.status is Status.SKIP
