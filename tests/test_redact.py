"""Credentials in URLs never reach a message, a report or a recorded verdict."""

from __future__ import annotations

import json
from pathlib import Path

from k3deploy.redact import redact_text, redact_url
from tests.conftest import run_cli
from tests.integration.vllm_server import free_port
from tests.smoke.scripted_server import Script, scripted_server

FAST = ["smoke.requests=2", "smoke.output_tokens=12", "smoke.request_timeout_s=10", "smoke.overall_timeout_s=60"]


def test_redact_url_masks_the_whole_userinfo() -> None:
    assert redact_url("https://user:s3cret@gw.example:8443/v1") == "https://***@gw.example:8443/v1"
    assert redact_url("http://tok3n@10.0.0.5:8000") == "http://***@10.0.0.5:8000"
    assert redact_url("http://10.0.0.5:8000") == "http://10.0.0.5:8000"
    assert redact_url("http://[::1]:8000") == "http://[::1]:8000"
    text = "cannot connect to http://u:s3cret@h:1/health; u:s3cret@ again"
    assert redact_text(text, "http://u:s3cret@h:1") == "cannot connect to http://***@h:1/health; ***@ again"


def test_smoke_with_credentials_in_the_endpoint_prints_and_stores_none(tmp_path: Path) -> None:
    sets = [a for s in FAST for a in ("--set", s)]
    report = tmp_path / "smoke.json"
    with scripted_server(Script()) as srv:
        url = srv.url.replace("http://", "http://alice:s3cret-pw@")
        done = run_cli("smoke", "-p", "local-cpu", *sets, "--endpoint", url, "--report", str(report), "-o", "json")
    assert done.returncode == 0, done.stderr
    saved = report.read_text()
    for where in (done.stdout, done.stderr, saved):
        assert "s3cret-pw" not in where and "alice" not in where
    assert json.loads(saved)["endpoint"].startswith("http://***@127.0.0.1:")


def test_an_unreachable_endpoint_with_credentials_is_named_without_them() -> None:
    url = f"http://bob:hunter2@127.0.0.1:{free_port()}"
    done = run_cli("smoke", "-p", "local-cpu", "--set", "smoke.ready_timeout_s=1", "--endpoint", url)
    assert done.returncode == 3, done.stderr
    assert "hunter2" not in done.stderr + done.stdout and "bob" not in done.stderr + done.stdout
    assert "http://***@127.0.0.1:" in done.stderr
