"""Smoke against a scripted HTTP server on 127.0.0.1: every failure users hit gives a clear check and exit code.

Most cases call `run_smoke` in-process (the same code path the CLI takes); the CLI cases check the one
`error:` / `hint:` lines, the exit code and that no traceback reaches the user.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from k3deploy.report.smoke import SmokeReport
from k3deploy.smoke.correctness import PROBES
from k3deploy.smoke.runner import exit_code, run_smoke
from tests.conftest import run_cli
from tests.integration.vllm_server import free_port
from tests.smoke.scripted_server import Script, scripted_server

FAST = ["smoke.requests=3", "smoke.output_tokens=20", "smoke.request_timeout_s=10", "smoke.overall_timeout_s=60"]
#: FAST as command-line options.
FAST_SETS = [arg for s in FAST for arg in ("--set", s)]
RIGHT_ANSWERS = {
    "arithmetic-multiply": "10063",
    "arithmetic-sum": "15924",
    "copy-string": "QX7-PLUM-4821-ZETA",
    "json-object": '{"city": "Lyon", "year": 1998, "ok": true}',
}


def smoke(url: str, *sets: str, profile: str = "local-cpu", api_key: str | None = None) -> SmokeReport:
    from k3deploy.smoke.runner import SmokeOptions

    return run_smoke(load_profile(profile, [*FAST, *sets]), url, SmokeOptions(api_key=api_key))


def statuses(report: SmokeReport) -> dict[str, str]:
    return {c.name: c.status.value for c in report.checks}


def assert_clean_cli(result, code: int, *needles: str) -> None:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_healthy_speculating_server_passes_and_agrees_with_its_counters() -> None:
    with scripted_server() as srv:
        report = smoke(srv.url)
        counters = srv.counters
    assert exit_code(report) == 0
    assert statuses(report) == {
        "liveness": "pass",
        "correctness": "skip",
        "throughput": "pass",
        "speculative decoding": "pass",
        "decode target": "pass",
    }
    measured = [r for r in report.requests if r.phase == "measured"]
    assert [r.chunk_tokens for r in measured] == [[1, 3, 2, 4, 1, 3, 2, 4]] * 3
    # Client token counts equal the server's own counter delta over the measured window.
    assert (
        report.metrics is not None
        and report.metrics.generation_tokens == sum(r.completion_tokens for r in measured) == 60
    )
    spec = report.metrics.spec_decode
    assert spec is not None and (spec.drafts, spec.accepted_tokens) == (21, 36)
    assert spec.mean_acceptance_length == 1 + 36 / 21 == report.check("speculative decoding").measured
    assert report.summary is not None and report.summary.overall.tokens_per_chunk.mean == 2.5
    assert counters.generation == 80 and counters.requests == 4  # warm-up + 3 measured


def test_connection_refused_exits_3() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = run_cli("smoke", "--endpoint", url, "--requests", "1")
    assert_clean_cli(
        result,
        3,
        f"error: endpoint {url} cannot be tested: cannot connect to {url}/health:",
        "connection refused (nothing listens there)",
        "hint: check the URL",
    )


@contextlib.contextmanager
def closing_server() -> Iterator[str]:
    """127.0.0.1 that accepts each connection, reads the request and closes without a byte of answer: what a
    port-forward gives when nothing listens behind the leader's port (the tunnel connects, then breaks)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            with conn, contextlib.suppress(OSError):
                conn.settimeout(5)
                conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def test_a_connection_that_breaks_before_any_answer_is_unreachable_exit_3() -> None:
    """Before: "Server disconnected" on /health failed liveness (exit 1), so `up` judged the server and removed a
    first install; no HTTP answer at all means the server was not reached."""
    with closing_server() as url:
        report = smoke(url)
    assert exit_code(report) == 3, report.checks
    assert report.blocked_by == f"connection to {url}/health closed before any HTTP answer (Server disconnected)"
    assert [c.status for c in report.checks[1:]] == [Status.SKIP] * 4


def test_dns_failure_exits_3() -> None:
    result = run_cli("smoke", "--endpoint", "http://k3deploy-smoke.invalid:8000", "-o", "json")
    assert_clean_cli(result, 3, "DNS lookup failed for k3deploy-smoke.invalid")
    report = json.loads(result.stdout)
    assert report["blocked_by"].startswith("DNS lookup failed") and report["checks"][0]["status"] == "fail"
    assert [c["status"] for c in report["checks"][1:]] == ["skip"] * 4


def test_tls_error_exits_3() -> None:
    with scripted_server() as srv:
        report = smoke(srv.url.replace("http://", "https://"))
    assert exit_code(report) == 3 and report.blocked_by is not None
    assert report.blocked_by.startswith(f"TLS handshake with {srv.url.replace('http://', 'https://')}/health failed")


def test_401_without_the_key_exits_3_and_passes_with_it(tmp_path: Path) -> None:
    with scripted_server(Script(api_key="s3cret")) as srv:
        denied = run_cli("smoke", "--endpoint", srv.url, *FAST_SETS)
        allowed = run_cli(
            "smoke",
            "--endpoint",
            srv.url,
            "--api-key-env",
            "K3_TEST_KEY",
            *FAST_SETS,
            "--report",
            str(tmp_path / "r.json"),
            env={"K3_TEST_KEY": "s3cret"},
        )
        unset = run_cli("smoke", "--endpoint", srv.url, "--api-key-env", "K3_TEST_UNSET_KEY")
    assert_clean_cli(denied, 3, f"{srv.url}/v1/models answered 401: ", "hint: pass the API key with --api-key-env")
    assert_clean_cli(allowed, 0, "liveness", "PASS")
    report = SmokeReport.load(tmp_path / "r.json")
    # With the key every check is run and none fails; a WARN is the host's load (a stream read in one burst).
    assert report.checks[0].status is Status.PASS and report.status is not Status.FAIL
    assert len(report.checks) == 5 and report.metrics is not None and report.metrics.available
    assert_clean_cli(unset, 2, "error: --api-key-env K3_TEST_UNSET_KEY: that environment variable is not set")


def test_5xx_fails_the_throughput_check() -> None:
    with scripted_server(Script(completion_status=500)) as srv:
        report = smoke(srv.url, "smoke.api=chat")
    assert exit_code(report) == 1 and statuses(report)["throughput"] == "fail"
    assert (
        report.check("throughput").detail == f"request 0: {srv.url}/v1/chat/completions answered 500: "
        '{"error": {"message": "engine core died", "code": 500}}'
    )


def test_unhealthy_or_wrong_model_fails_liveness() -> None:
    with scripted_server(Script(health_status=503)) as srv:
        sick = smoke(srv.url)
    with scripted_server(Script(models=["someone-else"])) as srv:
        other = smoke(srv.url)
    assert exit_code(sick) == 1 and sick.check("liveness").detail == "/health answered 503"
    assert (
        exit_code(other) == 1
        and other.check("liveness").detail == "/v1/models lists ['someone-else'], not 'rehearsal-llama-tiny'"
    )
    assert statuses(other)["throughput"] == "skip"


def test_stream_stopping_mid_way() -> None:
    with scripted_server(Script(stop_after_chunks=3)) as srv:
        result = run_cli("smoke", "--endpoint", srv.url, *FAST_SETS, "-o", "json")
    assert_clean_cli(result, 1, "error: smoke failed: throughput: request 0: connection to", "/v1/completions broke")
    report = SmokeReport.model_validate_json(result.stdout)
    first = next(r for r in report.requests if r.phase == "measured")
    assert not first.ok and first.completion_tokens == 6  # 1 + 3 + 2 tokens arrived before the drop


def test_malformed_sse_lines() -> None:
    with scripted_server(Script(malformed_line="data: {this is not json")) as srv:
        report = smoke(srv.url)
    assert exit_code(report) == 1
    assert (
        report.check("throughput").detail
        == "request 0: 1 malformed SSE line(s), first: not JSON (Expecting property name enclosed in double quotes at column 2): '{this is not json'"
    )


def test_no_continuous_usage_stats_falls_back_and_says_so() -> None:
    with scripted_server(Script(continuous_usage=False)) as srv:
        report = smoke(srv.url)
    assert exit_code(report) == 0 and statuses(report)["throughput"] == "warn"
    assert "per-chunk figures unavailable" in report.check("throughput").detail
    assert all(r.completion_tokens == 20 and not r.per_chunk_usage for r in report.requests if r.phase == "measured")
    assert report.check("speculative decoding").detail.endswith("; tokens per chunk unavailable")


@pytest.mark.parametrize(
    ("metrics", "detail"),
    [
        (
            "missing",
            'cannot verify speculative decoding: /metrics unavailable: {url}/metrics answered 404: {{"detail": "Not Found"}}',
        ),
        ("no_spec", "speculative decoding is not active: no spec-decode series in /metrics"),
        ("garbage", "cannot verify speculative decoding: /metrics unavailable: /metrics is not Prometheus text: "),
    ],
)
def test_metrics_missing_broken_or_without_spec_series(metrics: str, detail: str) -> None:
    with scripted_server(Script(metrics=metrics)) as srv:
        report = smoke(srv.url)
        plain = smoke(srv.url, "speculative=null")
    assert exit_code(report) == 1 and report.check("speculative decoding").detail.startswith(detail.format(url=srv.url))
    assert statuses(plain)["speculative decoding"] == "skip" and exit_code(plain) == 0


def test_request_timeout() -> None:
    with scripted_server(Script(first_chunk_delay_s=1.5)) as srv:
        report = smoke(srv.url, "smoke.request_timeout_s=0.3", "smoke.requests=1")
    assert exit_code(report) == 1
    assert report.check("throughput").detail == "request 0: request timed out after 0.3 s (smoke.request_timeout_s)"


def test_overall_timeout() -> None:
    # 21 requests of 20 chunks 50 ms apart need 20 s; 4 s leaves a loaded host time to answer /health first, so
    # the stop falls in the measured phase (exit 1), not before liveness (an untested endpoint, exit 3).
    with scripted_server(Script(chunk_delay_s=0.05)) as srv:
        report = smoke(srv.url, "smoke.overall_timeout_s=4", "smoke.requests=20")
    assert report.checks[0].status.value == "pass", report.checks[0]
    assert exit_code(report) == 1
    stop = report.check("overall timeout")
    assert stop is not None and stop.detail == "the run passed smoke.overall_timeout_s (4 s) and was stopped"
    assert 0 < len(report.requests) < 21


def test_correctness_catches_fluent_nonsense() -> None:
    right = {p.prompt: RIGHT_ANSWERS[p.id] for p in PROBES}
    nonsense = {p.prompt: "The quiet harmonics of the estuary suggest a gentle morning" for p in PROBES}
    with scripted_server(Script(answers=right)) as srv:
        good = smoke(srv.url, "smoke.correctness=true")
    with scripted_server(Script(answers=nonsense)) as srv:
        bad = smoke(srv.url, "smoke.correctness=true")
    assert statuses(good)["correctness"] == "pass" and exit_code(good) == 0
    check = bad.check("correctness")
    assert exit_code(bad) == 1 and check.measured == "0/4 right"
    assert check.detail.startswith("arithmetic-multiply: no number in the answer (expected 10063)")
    # Nonsense streams at full speed: the throughput check alone would have passed.
    assert statuses(bad)["throughput"] == "pass"


def test_unreachable_target_names_the_metric() -> None:
    with scripted_server() as srv:
        result = run_cli("smoke", "--endpoint", srv.url, *FAST_SETS, "--min-tok-s", "1000000")
    assert_clean_cli(
        result,
        1,
        "error: smoke failed: decode target: decode tok/s (median, low_entropy tier, bs=1) ",
        "is below the target 1e+06",
    )


def test_concurrency_sweep() -> None:
    with scripted_server() as srv:
        report = smoke(srv.url, "smoke.concurrency=[1,2,4]")
    assert report.summary is not None
    points = {p.concurrency: p for p in report.summary.sweep}
    assert sorted(points) == [1, 2, 4]
    assert (points[2].requests, points[4].requests, points[4].completion_tokens, points[4].failed) == (3, 4, 80, 0)
    assert all(p.aggregate_tok_s and p.aggregate_tok_s > 0 for p in points.values())


def test_bad_concurrency_flag_is_a_usage_error() -> None:
    assert_clean_cli(
        run_cli("smoke", "--endpoint", "http://127.0.0.1:9", "--concurrency", "1,x"),
        2,
        "error: --concurrency '1,x' is not a list of positive integers",
    )
