"""`k3deploy smoke` flag checking: bad values are usage errors that name the flag, found before any request is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

# Port 1 on loopback: nothing listens, so reaching the network would give exit 3, not 2.
_NOWHERE = "http://127.0.0.1:1"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--requests", "0", "error: Invalid value for '--requests': Input should be greater than or equal to 1"),
        (
            "--output-tokens",
            "1",
            "error: Invalid value for '--output-tokens': Input should be greater than or equal to 2",
        ),
    ],
)
def test_out_of_range_counts_name_the_flag(flag: str, value: str, message: str) -> None:
    result = run_cli("smoke", "--endpoint", _NOWHERE, flag, value)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == message


def test_report_into_a_missing_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "report.json"
    result = run_cli("smoke", "--endpoint", _NOWHERE, "--report", str(target))
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == f"error: --report {target}: folder {target.parent} does not exist"
    assert "liveness" not in result.stderr


def test_timeout_flags_override_the_profile() -> None:
    from tests.smoke.scripted_server import Script, scripted_server

    with scripted_server(Script(first_chunk_delay_s=1.5)) as srv:
        result = run_cli(
            "smoke",
            "--endpoint",
            srv.url,
            "--requests",
            "1",
            "--output-tokens",
            "20",
            "--request-timeout",
            "0.3",
            "--overall-timeout",
            "60",
            "-o",
            "json",
        )
    assert result.returncode == 1, result.stderr
    import json

    report = json.loads(result.stdout)
    throughput = next(c for c in report["checks"] if c["name"] == "throughput")
    assert throughput["detail"] == "request 0: request timed out after 0.3 s (smoke.request_timeout_s)"


def test_timeout_flag_must_be_positive() -> None:
    result = run_cli("smoke", "--endpoint", _NOWHERE, "--request-timeout", "0")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == "error: --request-timeout '0' must be positive"


def test_overall_timeout_on_a_stalled_health_is_exit_3() -> None:
    """/health accepts and never answers: the endpoint could not be tested (3), not a check that failed (1)."""
    from tests.kube.stalling_server import stalling_server

    with stalling_server("silent") as url:
        result = run_cli("smoke", "--endpoint", url, "--overall-timeout", "2s", "--request-timeout", "60s")
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines()[-2] == (
        f"error: endpoint {url} cannot be tested: {url}/health did not answer within smoke.overall_timeout_s (2 s)"
    )
