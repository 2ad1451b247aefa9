"""The smoke report saves and loads as versioned JSON; the exit code follows its checks."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from k3deploy.errors import UsageError
from k3deploy.measure.request import normalize_endpoint
from k3deploy.report.model import CheckResult, Status
from k3deploy.report.smoke import SMOKE_SCHEMA_VERSION, SmokeReport
from k3deploy.smoke.runner import exit_code


def _report(*statuses: Status, blocked: str | None = None) -> SmokeReport:
    return SmokeReport(
        profile="p",
        endpoint="http://h:1",
        started_at=datetime(2026, 1, 2, tzinfo=UTC),
        blocked_by=blocked,
        checks=[CheckResult(name=f"c{i}", status=s) for i, s in enumerate(statuses)],
    )


def test_round_trip(tmp_path: Path) -> None:
    report = _report(Status.PASS, Status.SKIP)
    path = tmp_path / "r.json"
    path.write_text(report.to_json(), encoding="utf-8")
    data = json.loads(path.read_text())
    assert data["schema_version"] == SMOKE_SCHEMA_VERSION == 1 and data["kind"] == "k3deploy.smoke"
    assert SmokeReport.load(path) == report


def test_other_schema_versions_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**json.loads(_report().model_dump_json()), "schema_version": 99}))
    with pytest.raises(ValueError, match="schema_version 99, this k3deploy reads 1"):
        SmokeReport.load(path)


def test_exit_codes() -> None:
    assert exit_code(_report(Status.PASS, Status.WARN, Status.SKIP)) == 0
    assert exit_code(_report(Status.PASS, Status.FAIL)) == 1
    assert exit_code(_report(Status.FAIL, blocked="cannot connect")) == 3


def test_endpoint_normalisation() -> None:
    assert normalize_endpoint("http://h:8000/v1/") == "http://h:8000"
    assert normalize_endpoint(" https://h/base/ ") == "https://h/base"
    with pytest.raises(UsageError, match="is not an http"):
        normalize_endpoint("h:8000")
