"""pin's registry and Hub reads are bounded as a whole: a trickling answer, a malformed one, a bad URL."""

from __future__ import annotations

import json

import pytest

from k3deploy.errors import EnvironmentProblem, UsageError
from k3deploy.kube.deadline import Deadline
from k3deploy.pin.hub import HubClient
from k3deploy.pin.registry import RegistryClient
from k3deploy.preflight.run import image_platforms
from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from tests.trickling_server import Trickle, trickling_server

IMAGE = "vllm/vllm-openai:v0.32.0"


def test_a_trickling_registry_ends_at_the_clients_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """One byte every 0.05 s keeps each read inside a 1 s read timeout; the 1 s deadline still ends it after about
    20 bytes of the 4 KiB answer (before: the whole body, 200 s, per request)."""
    trickle = Trickle(interval_s=0.05)
    with trickling_server(trickle) as url:
        monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", url)
        with (
            RegistryClient(timeout_s=1.0, deadline=Deadline(1.0)) as client,
            pytest.raises(EnvironmentProblem, match="cannot reach registry") as info,
        ):
            client.resolve(IMAGE)
    assert info.value.exit_code == 3
    assert trickle.sent < len(trickle.body) // 4


def test_a_trickling_hub_ends_at_the_clients_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    trickle = Trickle(interval_s=0.05)
    with trickling_server(trickle) as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        with HubClient(timeout_s=1.0, deadline=Deadline(1.0)) as hub, pytest.raises(EnvironmentProblem) as info:
            hub.resolve("moonshotai/Kimi-K3", "main")
    assert "cannot reach the Hugging Face Hub" in info.value.message
    assert trickle.sent < len(trickle.body) // 4


@pytest.mark.parametrize(
    "body",
    [b"[1, 2]", b'{"sha": ["x"]}', b"[" * 100_000 + b"]" * 100_000, b'"text"'],
)
def test_a_malformed_hub_answer_is_an_environment_problem(monkeypatch: pytest.MonkeyPatch, body: bytes) -> None:
    with trickling_server(Trickle(body=body, interval_s=0)) as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        with (
            HubClient(timeout_s=5) as hub,
            pytest.raises(
                EnvironmentProblem, match=r"without a commit sha|malformed: sha: Input should be a valid string"
            ),
        ):
            hub.resolve("moonshotai/Kimi-K3", "main")


@pytest.mark.parametrize(
    "body",
    [
        {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": "not a map"},
        {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": "not a list"},
        {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [1, None]},
    ],
)
def test_a_malformed_oci_answer_is_an_environment_problem_in_pin_and_a_warn_in_preflight(
    monkeypatch: pytest.MonkeyPatch, body: dict
) -> None:
    raw = json.dumps(body).encode()
    with trickling_server(Trickle(body=raw, content_type=body["mediaType"], interval_s=0)) as url:
        monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", url)
        with RegistryClient(timeout_s=5) as client, pytest.raises(EnvironmentProblem) as info:
            client.resolve(IMAGE, arch="arm64")
        assert info.value.exit_code == 3 and "unexpected" not in info.value.message
        result = image_platforms(load_profile("kimi-k3-gb300-tp16", [f"vllm.image={IMAGE}"]))
    assert result.status is Status.WARN, result


@pytest.mark.parametrize("endpoint", ["http://[::1", "http://127.0.0.1:99999", "ftp://hub"])
def test_an_invalid_hub_url_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    with pytest.raises(UsageError, match="HF_ENDPOINT"):
        HubClient()


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999", "ftp://mirror"])
def test_an_invalid_mirror_url_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.delenv("K3DEPLOY_REGISTRY_URL", raising=False)  # the environment's URL wins over the profile's
    with RegistryClient(timeout_s=1, mirrors={"docker.io": url}) as client, pytest.raises(UsageError):
        client.resolve(IMAGE)
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", url)
    with RegistryClient(timeout_s=1) as client, pytest.raises(UsageError, match="K3DEPLOY_REGISTRY_URL"):
        client.resolve(IMAGE)


def test_preflights_registry_check_is_a_warn_within_the_commands_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A trickling registry: the advisory check ends at what is left of the command's deadline, as a WARN."""
    trickle = Trickle(interval_s=0.05)
    with trickling_server(trickle) as url:
        monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", url)
        result = image_platforms(load_profile("kimi-k3-gb300-tp16", [f"vllm.image={IMAGE}"]), Deadline(1.0))
    assert result.status is Status.WARN, result
    assert trickle.sent < len(trickle.body) // 4


@pytest.mark.parametrize("where", ["body", "head"])
def test_pins_timeout_bounds_the_whole_command(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """`pin --timeout 1s` shares one deadline across every registry and Hub request: with both trickling (the
    answer's body, or its status line and headers) the command ends with exit 3 having read a few bytes of one
    answer, however many images and repos the profile names (before: no overall bound)."""
    from tests.conftest import run_cli

    trickle = Trickle(interval_s=0.05) if where == "body" else Trickle(body=b"{}", head_interval_s=0.05)
    with trickling_server(trickle) as url:
        monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", url)
        monkeypatch.setenv("HF_ENDPOINT", url)
        result = run_cli("pin", "-p", "kimi-k3-gb300-tp16", "--timeout", "1s", "-o", "-", timeout=60)
    assert result.returncode == 3, result.stderr
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert (trickle.sent if where == "body" else trickle.head_sent) < 200
