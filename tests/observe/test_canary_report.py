"""The canary's kept report stays within its bound: whole when it fits, else without its per-request records (its
figures kept, the drop noted), else refused; its ConfigMap reference is NAMESPACE/NAME. Writing it through the real
API server with the canary's own token is tests/realk8s/render/test_canary.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3deploy.errors import CheckFailed, UsageError
from k3deploy.observe.canary_report import bounded_json, parse_ref
from k3deploy.report.bench import BenchReport, BenchRequest
from tests.bench.test_ab import _report
from tests.conftest import run_cli


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


def test_bench_compare_reads_kept_reports_saved_to_files(tmp_path: Path) -> None:
    """What docs/guide/canary.md's `kubectl get configmap ... -o jsonpath='{.data.report\\.json}' > canary.json`
    saves."""
    paths = []
    for name, rate in (("before", 352.0), ("after", 301.0)):
        report = _with_requests(400).model_copy(update={"label": name})
        report.overall[0].decode_tok_s.median = rate
        text = bounded_json(report, len(report.to_json().encode()) - 1)  # the slim form, requests dropped
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(text, encoding="utf-8")
    result = run_cli("bench", "compare", *map(str, paths), "-o", "json")
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)["rows"]
    assert row["decode_tok_s"] == [352.0, 301.0]
