"""Each of smoke's verdict rules pinned at its boundary, on both sides, so a limit moved or a condition dropped
fails here (the survivors of tests/mutation/run on k3deploy/smoke/verdict.py)."""

from __future__ import annotations

import pytest

from k3deploy.measure.metrics import spec_decode_figures
from k3deploy.report.model import Status
from k3deploy.report.smoke import MetricsDelta
from k3deploy.smoke.verdict import (
    MAX_MODEL_ID_CHARS,
    MAX_MODELS_SHOWN,
    LivenessFacts,
    judge_decode_target,
    judge_liveness,
    judge_speculative,
    judge_throughput,
)
from tests.smoke.test_verdict import _rec, _summary


def _delta(drafts: float, accepted: float) -> MetricsDelta:
    return MetricsDelta(
        available=True,
        window_s=1.0,
        generation_tokens=64,
        spec_decode=spec_decode_figures(drafts, drafts * 3, accepted, {0: accepted}),
    )


def test_the_hint_for_an_unreachable_endpoint_points_at_the_url_unless_told_it_is_auth_or_loading() -> None:
    plain = judge_liveness(LivenessFacts(error="refused"), "m")
    assert plain.hint == "check the URL, that the server runs, and the network path to it"
    auth = judge_liveness(LivenessFacts(error="401", unauthorized=True), "m")
    assert auth.hint is not None and auth.hint.startswith("pass the API key with --api-key-env")
    loading = judge_liveness(LivenessFacts(error="503", not_ready=True), "m")
    assert loading.hint is not None and loading.hint.startswith("the model may still be loading")


def test_the_model_list_is_quoted_whole_up_to_the_limit_and_cut_beyond_it() -> None:
    assert MAX_MODELS_SHOWN == 10
    at_limit = [f"m{i}" for i in range(MAX_MODELS_SHOWN)]
    whole = judge_liveness(LivenessFacts(200, tuple(at_limit)), "x")
    assert whole.detail == f"/v1/models lists {at_limit}, not 'x'"
    over = [*at_limit, "m10"]
    cut = judge_liveness(LivenessFacts(200, tuple(over)), "x")
    assert cut.detail == f"/v1/models lists 11 models, first {at_limit}, not 'x'"
    assert cut.measured == at_limit


@pytest.mark.parametrize("length", [MAX_MODEL_ID_CHARS, MAX_MODEL_ID_CHARS + 1])
def test_a_hostile_model_id_is_quoted_up_to_200_characters(length: int) -> None:
    assert MAX_MODEL_ID_CHARS == 200
    check = judge_liveness(LivenessFacts(200, ("a" * length,)), "x")
    assert check.measured == ["a" * MAX_MODEL_ID_CHARS]


def test_throughput_names_the_first_failed_request() -> None:
    records = [_rec(0, 10.0), _rec(1, 1.0, ok=False), _rec(2, 1.0, ok=False).model_copy(update={"error": "late"})]
    check = judge_throughput(records, _summary(*records))
    assert check.detail == "request 1: boom" and check.measured == "2/3 failed"


def test_without_a_minimum_the_target_is_some_drafts_when_expected_and_none_otherwise() -> None:
    summary = _summary(_rec(0, 10.0))
    assert judge_speculative(True, None, _delta(20, 30), summary).target == "drafts > 0"
    assert judge_speculative(False, None, _delta(20, 30), summary).target is None


def test_unread_metrics_say_so_when_no_error_was_recorded() -> None:
    summary = _summary(_rec(0, 10.0))
    check = judge_speculative(True, 2.0, MetricsDelta(available=False), summary)
    assert check.status is Status.FAIL
    assert check.detail == "cannot verify speculative decoding: /metrics was not read"
    assert judge_speculative(True, 2.0, None, summary).detail == check.detail


@pytest.mark.parametrize(("drafts", "status"), [(0.0, Status.FAIL), (1.0, Status.PASS)])
def test_one_draft_is_enough_to_prove_speculation_is_active(drafts: float, status: Status) -> None:
    check = judge_speculative(True, None, _delta(drafts, drafts), _summary(_rec(0, 10.0)))
    assert check.status is status
    if status is Status.FAIL:
        assert check.measured == 0


def test_no_drafts_without_speculation_in_the_profile_is_a_skip_measuring_zero() -> None:
    check = judge_speculative(False, None, _delta(0, 0), _summary(_rec(0, 10.0)))
    assert check.status is Status.SKIP and check.measured == 0


@pytest.mark.parametrize(("accepted", "status"), [(30.0, Status.PASS), (29.0, Status.FAIL)])
def test_an_acceptance_length_at_the_minimum_passes_and_just_below_fails(accepted: float, status: Status) -> None:
    # 1 + accepted / 20 drafts: 2.5 exactly at the minimum, 2.45 below it.
    check = judge_speculative(True, 2.5, _delta(20, accepted), _summary(_rec(0, 10.0)))
    assert check.status is status


@pytest.mark.parametrize(("rate", "status"), [(100.0, Status.PASS), (99.99, Status.FAIL)])
def test_a_decode_rate_at_the_target_passes_and_just_below_fails(rate: float, status: Status) -> None:
    assert judge_decode_target(100.0, "low_entropy", _summary(_rec(0, rate))).status is status
