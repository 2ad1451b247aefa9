"""`smoke --wait-ready`: wait for /health to answer 200 up to a bound before judging; never ready is exit 3.

The real CLI against the scripted server (503 until it has "loaded"), a port nothing listens on, and a socket
that accepts and never answers.
"""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.integration.vllm_server import free_port
from tests.kube.stalling_server import stalling_server
from tests.smoke.scripted_server import Script, scripted_server

FAST = [f"--set={s}" for s in ("smoke.requests=2", "smoke.output_tokens=20", "smoke.request_timeout_s=10")]


def test_smoke_waits_for_a_loading_server_then_judges_it() -> None:
    with scripted_server(Script(health_ready_after_s=3)) as srv:
        hasty = run_cli("smoke", "--endpoint", srv.url, *FAST)
        patient = run_cli("smoke", "--endpoint", srv.url, *FAST, "--wait-ready", "60s")
    assert hasty.returncode == 1 and "error: smoke failed: liveness: /health answered 503" in hasty.stderr
    assert patient.returncode == 0, patient.stderr
    lines = patient.stderr.splitlines()
    assert f"waiting up to 60s for {srv.url}/health to answer 200" in lines
    assert any(line.startswith(f"{srv.url}/health answered 200 after ") for line in lines)


def test_a_server_that_never_becomes_healthy_is_a_timeout_exit_3() -> None:
    with scripted_server(Script(health_status=503)) as srv:
        result = run_cli("smoke", "--endpoint", srv.url, *FAST, "--wait-ready", "3s", "-o", "json")
    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines()[-2:] == [
        f"error: endpoint {srv.url} cannot be tested: {srv.url}/health did not answer 200 within 3s "
        "(smoke.ready_timeout_s); last: answered 503",
        "hint: the model may still be loading: read the server log, or wait longer with --wait-ready (smoke.ready_timeout_s)",
    ]
    report = json.loads(result.stdout)
    assert [c["status"] for c in report["checks"]] == ["fail", "skip", "skip", "skip", "skip"]
    assert report["requests"] == []


def test_nothing_listening_within_the_wait_is_exit_3() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = run_cli("smoke", "--endpoint", url, *FAST, "--wait-ready", "2s")
    assert result.returncode == 3, result.stderr
    assert (
        f"error: endpoint {url} cannot be tested: {url}/health did not answer 200 within 2s (smoke.ready_timeout_s); "
        f"last: cannot connect to {url}/health: connection refused (nothing listens there)" in result.stderr
    )


def test_a_health_endpoint_that_never_answers_is_exit_3_with_or_without_waiting() -> None:
    with stalling_server("silent") as url:
        waited = run_cli("smoke", "--endpoint", url, *FAST, "--wait-ready", "3s")
        at_once = run_cli("smoke", "--endpoint", url, *FAST, "--request-timeout", "1s")
    assert waited.returncode == 3, waited.stderr
    assert (
        f"{url}/health did not answer 200 within 3s (smoke.ready_timeout_s); last: no answer within " in waited.stderr
    )
    assert at_once.returncode == 3, at_once.stderr
    assert (
        f"error: endpoint {url} cannot be tested: {url}/health did not answer in time (ReadTimeout)" in at_once.stderr
    )


def test_wait_ready_must_be_a_duration() -> None:
    result = run_cli("smoke", "--endpoint", "http://127.0.0.1:1", "--wait-ready", "nan")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == "error: --wait-ready 'nan' is not a finite duration"
