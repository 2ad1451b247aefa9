"""The canary's kept report stays within its bound: whole when it fits, else without its per-request records (its
figures kept, the drop noted), else refused; its ConfigMap reference is NAMESPACE/NAME. Writing it through the real
API server with the canary's own token is tests/realk8s/render/test_canary.py."""

from __future__ import annotations

import pytest

from k3deploy.errors import CheckFailed, UsageError
from k3deploy.observe.canary_report import bounded_json, parse_ref
from k3deploy.report.bench import BenchReport, BenchRequest
from tests.bench.test_ab import _report


def _with_requests(n: int) -> BenchReport:
    report = _report("canary", {1: 352.0})
    request = BenchRequest(category="a", concurrency=1, prompt_id="p", ok=True, t_send=0.0, t_end=1.0)
    report.requests = [request.model_copy(update={"prompt_id": f"p{i}"}) for i in range(n)]
    return report


def test_a_report_that_fits_is_kept_whole() -> None:
    report = _with_requests(3)
    assert bounded_json(report, 64 * 1024) == report.to_json()


def test_an_oversized_report_drops_its_requests_first_then_is_refused() -> None:
    report = _with_requests(400)
    whole = len(report.to_json().encode())
    slim = BenchReport.model_validate_json(bounded_json(report, whole - 1))
    assert slim.requests == [] and slim.overall == report.overall
    assert slim.notes[-1] == f"per-request records dropped to keep the report under {whole - 1} bytes"
    with pytest.raises(CheckFailed, match="without its requests"):
        bounded_json(report, 1024)


@pytest.mark.parametrize("ref", ["name", "/name", "ns/", "ns/a/b"])
def test_the_reference_is_namespace_slash_name(ref: str) -> None:
    with pytest.raises(UsageError, match="is not NAMESPACE/NAME"):
        parse_ref(ref)
    assert parse_ref("kimi-k3/x-canary-report") == ("kimi-k3", "x-canary-report")
