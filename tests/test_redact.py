"""Credentials in URLs never reach a message, a report or a recorded verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3deploy.errors import UsageError
from k3deploy.pin.hub import HubClient
from k3deploy.pin.mirrors import parse_env
from k3deploy.profile.names import check_http_url
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


#: Passwords that urlsplit reads whole (a space) and ones it misreads as port, path, query or fragment.
_SECRETS = ("S3cret PW", "S3c/ret", "S3c#ret", "S3c?ret", "S3c[ret")


@pytest.mark.parametrize("secret", _SECRETS)
@pytest.mark.parametrize("tail", ["h:99999", "h:0", "[zz]:1", "h:1", ""])
@pytest.mark.parametrize("scheme", ["http", "ftp"])
def test_a_url_refused_by_validation_never_echoes_its_password(secret: str, tail: str, scheme: str) -> None:
    url = f"{scheme}://alice:{secret}@{tail}"
    try:
        check_http_url(url)
    except ValueError as exc:
        message = str(exc)
    else:
        return  # accepted: nothing printed
    assert "S3c" not in message and "alice" not in message, message
    assert "***@" in message


def test_redact_url_masks_a_password_urlsplit_misreads() -> None:
    assert redact_url("http://alice:S3c/ret@h:1") == "http://***@h:1"
    assert redact_url("http://alice:S3c#ret@h:1/v1") == "http://***@h:1/v1"
    assert redact_url("http://a:b[@h") == "http://***@h"
    assert redact_text("port of http://alice:S3c/ret@h:1 is 'x'", "http://alice:S3c/ret@h:1") == (
        "port of http://***@h:1 is 'x'"
    )


@pytest.mark.parametrize(
    "args",
    [
        ("smoke", "-p", "local-cpu", "--endpoint", "ftp://alice:S3cret PW@h:1"),
        ("smoke", "-p", "local-cpu", "--endpoint", "http://alice:S3c/ret@h:1"),
        ("bench", "-p", "local-cpu", "--endpoint", "http://alice:S3cret PW@h:99999"),
        ("watch", "-p", "local-cpu", "--endpoint", "http://alice:S3cret@[zz]:1"),
        ("watch", "-p", "local-cpu", "--prometheus", "http://alice:S3cret@h:0"),
        ("render", "-p", "kimi-k3-gb300-tp16", "-o", "-", "--set", "kubernetes.https_proxy=http://alice:S3c/ret@h"),
        ("render", "-p", "kimi-k3-gb300-tp16", "-o", "-", "--set", "kubernetes.hf_endpoint=ftp://alice:S3cret@h"),
        ("up", "-p", "kimi-k3-gb300-tp16", "--group-endpoint", "http://alice:S3cret@{pod}:99999"),
    ],
)
def test_the_commands_refuse_such_a_url_without_its_password(args: tuple[str, ...]) -> None:
    done = run_cli(*args)
    assert done.returncode == 2, done.stderr
    assert "S3c" not in done.stderr + done.stdout and "alice" not in done.stderr + done.stdout, done.stderr
    assert "***@" in done.stderr


def test_registry_mirror_and_hub_endpoint_messages_never_echo_a_password(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("ftp://alice:S3cret@mirror", "docker.io=ftp://alice:S3cret@m", "http://alice:S3c/ret@mirror:1"):
        with pytest.raises(UsageError) as caught:
            parse_env(value)
        assert "S3c" not in str(caught.value) and "alice" not in str(caught.value), caught.value
    monkeypatch.setenv("HF_ENDPOINT", "http://alice:S3c/ret@hub:1")
    with pytest.raises(UsageError) as caught:
        HubClient()
    assert "S3c" not in str(caught.value) and "***@" in str(caught.value), caught.value
