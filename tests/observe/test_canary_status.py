"""The last canary run as `status` and `watch` show it: from the kept report or from the series, its verdict judged
as the canary's alerts judge (failed requests, decode under the drift bound, a category under its floor)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from k3deploy.measure.metrics import spec_decode_figures
from k3deploy.observe import canary_series as series
from k3deploy.observe.canary_status import from_report, from_series, judge, line, queries
from k3deploy.profile.load import load_profile
from k3deploy.report.bench import ServerDelta
from tests.bench.test_ab import _report

K3 = "kimi-k3-gb300-tp16"
ON = ["observe.canary.enabled=true", "observe.pushgateway_url=http://pushgateway.monitoring.svc:9091"]
AT = datetime(2026, 12, 1, 6, 17, 42, tzinfo=UTC)


def _kept(decode: float, length: float):  # a BenchReport
    report = _report("canary", {1: decode})
    overall = report.overall[0]
    overall.output_tok_s = decode * 0.9
    cell = overall.model_copy(
        update={
            "category": "low_entropy",
            "server": ServerDelta(
                available=True, spec_decode=spec_decode_figures(10, 70, round(10 * (length - 1)), {})
            ),
        }
    )
    report.cells = [cell]
    report.finished_at = AT
    return report


@pytest.mark.parametrize(
    ("decode", "acceptance", "failed", "verdict"),
    [
        (352.0, {"low_entropy": 4.7}, 0, "ok"),
        (333.0, {"low_entropy": 4.7}, 0, "ok"),  # exactly at the bound: not slow, as the drift rule
        (332.9, {"low_entropy": 4.7}, 0, "decode 332.9 < 333 tok/s"),
        (352.0, {"low_entropy": 2.9}, 0, "low_entropy acceptance 2.90 < 3"),
        (None, {}, 2, "2 request(s) failed; no decode figure"),
    ],
)
def test_the_verdict_is_the_alerts_judgement_of_one_run(
    decode: float | None, acceptance: dict[str, float], failed: int, verdict: str
) -> None:
    assert judge(load_profile(K3, ON), decode, acceptance, failed) == verdict


def test_the_kept_report_gives_when_decode_output_acceptance_and_verdict() -> None:
    run = from_report(_kept(352.0, 4.7), load_profile(K3, ON))
    assert (run.finished_at, run.decode_tok_s, run.output_tok_s, run.verdict) == (AT, 352.0, 352.0 * 0.9, "ok")
    assert run.acceptance == {"low_entropy": pytest.approx(4.7)}
    assert line(run) == (
        "last canary: 2026-12-01 06:17:42Z · decode 352.0 tok/s (output 316.8, TTFT included) · "
        "acceptance low_entropy 4.70 · ok"
    )
    assert run.as_dict()["finished_at"] == AT.isoformat() and run.as_dict()["line"] == line(run)
    slow = from_report(_kept(300.0, 4.7), load_profile(K3, ON))
    assert slow.verdict == "decode 300.0 < 333 tok/s"
    assert line(None) == "last canary: none recorded"


def test_the_series_give_the_same_run() -> None:
    profile = load_profile(K3, ON)
    assert all(f'release="{K3}"' in q and 'job="k3deploy-canary"' in q for q in queries(profile).values())
    answers = {
        "decode": [({}, 352.0)],
        "output": [({}, 316.8)],
        "failed": [({}, 0.0)],
        "acceptance": [({"category": "low_entropy"}, 4.7)],
        "last_success": [({}, AT.timestamp())],
        "pushed": [({}, AT.timestamp())],
    }
    run = from_series(profile, answers)
    assert run is not None and (run.finished_at, run.decode_tok_s, run.verdict) == (AT, 352.0, "ok")
    assert from_series(profile, {key: [] for key in answers}) is None
    assert series.LAST_SUCCESS in queries(profile)["last_success"]
