"""The registry client against a registry of our own: index, manifest list, single images, token auth, errors."""

from __future__ import annotations

import socket

import httpx
import pytest

from k3deploy.errors import CheckFailed, EnvironmentProblem
from k3deploy.pin.registry import RegistryClient
from tests.pin.registry_server import DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST, Registry

IMAGE = "vllm/vllm-openai:kimi-k3"


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch, registry: Registry):
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", registry.url)
    with RegistryClient(timeout_s=5) as c:
        yield c


def test_oci_index_resolves_to_its_digest_and_platforms(registry: Registry, client: RegistryClient) -> None:
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3", ["amd64", "arm64"])
    result = client.resolve(IMAGE)
    assert (result.digest, result.media_type, result.is_index) == (digest, OCI_INDEX, True)
    assert [str(p) for p in result.platforms] == ["linux/amd64", "linux/arm64/v8"]
    assert result.pinned == f"{IMAGE}@{digest}"
    accept = registry.requests[-1][1]["Accept"]
    assert all(t in accept for t in (OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST))


def test_docker_manifest_list_is_read_as_a_list_not_rewritten(registry: Registry, client: RegistryClient) -> None:
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3", ["amd64", "arm64"], media_type=DOCKER_LIST)
    result = client.resolve(IMAGE)
    assert (result.digest, result.media_type) == (digest, DOCKER_LIST)
    assert {p.architecture for p in result.platforms} == {"amd64", "arm64"}


@pytest.mark.parametrize("media_type", [OCI_MANIFEST, DOCKER_MANIFEST])
def test_single_platform_image_reads_its_platform_from_the_config_blob(
    registry: Registry, client: RegistryClient, media_type: str
) -> None:
    digest = registry.push_image("vllm/vllm-openai", "kimi-k3-aarch64", "arm64", media_type)
    result = client.resolve("vllm/vllm-openai:kimi-k3-aarch64")
    assert (result.digest, result.is_index, [str(p) for p in result.platforms]) == (digest, False, ["linux/arm64"])
    assert any(path.startswith("/_storage/") for path, _ in registry.requests)  # followed the blob redirect


def test_a_pinned_reference_is_fetched_by_digest(registry: Registry, client: RegistryClient) -> None:
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    assert client.resolve(f"{IMAGE}@{digest}").digest == digest
    assert registry.requests[-1][0] == f"/v2/vllm/vllm-openai/manifests/{digest}"


def test_bearer_challenge_is_answered_with_an_anonymous_pull_token(
    monkeypatch: pytest.MonkeyPatch, auth_registry: Registry
) -> None:
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", auth_registry.url)
    digest = auth_registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    with RegistryClient(timeout_s=5) as client:
        assert client.resolve(IMAGE).digest == digest
        assert client.resolve(IMAGE).digest == digest
    token_requests = [h for path, h in auth_registry.requests if path == "/token"]
    assert len(token_requests) == 1  # the token is reused for the same scope
    manifest_calls = [h for path, h in auth_registry.requests if "/manifests/" in path]
    assert "Authorization" not in manifest_calls[0] and manifest_calls[1]["Authorization"].startswith("Bearer ")


def test_unknown_repository_behind_auth_is_refused_like_docker_hub(
    monkeypatch: pytest.MonkeyPatch, auth_registry: Registry
) -> None:
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", auth_registry.url)
    with (
        RegistryClient(timeout_s=5) as client,
        pytest.raises(CheckFailed, match=r"refused anonymous access.*UNAUTHORIZED"),
    ):
        client.resolve("nobody/nothing:1")


def test_unknown_tag_and_unknown_repository_fail_with_the_registry_error(
    registry: Registry, client: RegistryClient
) -> None:
    registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    with pytest.raises(CheckFailed, match="MANIFEST_UNKNOWN: manifest unknown") as tag:
        client.resolve("vllm/vllm-openai:kimi-k3-aarch64-cu130")
    assert tag.value.exit_code == 1
    with pytest.raises(CheckFailed, match="NAME_UNKNOWN: repository name not known to registry"):
        client.resolve("vllm/nothing:1")


def test_unreachable_registry_is_an_environment_problem_naming_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", f"http://127.0.0.1:{port}")
        with RegistryClient(timeout_s=5) as client, pytest.raises(EnvironmentProblem, match=f"127.0.0.1:{port}") as exc:
            client.resolve(IMAGE)
    assert exc.value.exit_code == 3


def test_manifest_that_does_not_match_its_digest_is_refused(registry: Registry, client: RegistryClient) -> None:
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    registry.tamper = True
    with pytest.raises(EnvironmentProblem, match=f"Docker-Content-Digest {digest} of {IMAGE} is not the sha256") as exc:
        client.resolve(IMAGE)
    assert exc.value.exit_code == 3


# The test registry itself: it must refuse what distribution refuses, or the tests above prove little.


def test_server_refuses_an_oci_index_to_a_client_that_does_not_accept_it(registry: Registry) -> None:
    registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    response = httpx.get(f"{registry.url}/v2/vllm/vllm-openai/manifests/kimi-k3", headers={"Accept": DOCKER_MANIFEST})
    assert response.status_code == 404
    assert response.json()["errors"][0]["message"] == "OCI index found, but accept header does not support OCI indexes"


def test_server_rewrites_a_manifest_list_to_amd64_for_an_old_client(registry: Registry) -> None:
    registry.push_index("vllm/vllm-openai", "kimi-k3", ["amd64", "arm64"], media_type=DOCKER_LIST)
    response = httpx.get(f"{registry.url}/v2/vllm/vllm-openai/manifests/kimi-k3", headers={"Accept": DOCKER_MANIFEST})
    assert response.headers["Content-Type"] == DOCKER_MANIFEST
    only_arm = registry.push_index("vllm/vllm-openai", "arm-only", ["arm64"], media_type=DOCKER_LIST)
    assert only_arm
    refused = httpx.get(f"{registry.url}/v2/vllm/vllm-openai/manifests/arm-only", headers={"Accept": DOCKER_MANIFEST})
    assert refused.json()["errors"][0]["code"] == "MANIFEST_UNKNOWN"


def test_token_server_checks_service_and_scope(auth_registry: Registry) -> None:
    auth_registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    assert (
        httpx.get(
            f"{auth_registry.url}/token", params={"service": "other", "scope": "repository:vllm/vllm-openai:pull"}
        ).status_code
        == 400
    )
    assert (
        httpx.get(
            f"{auth_registry.url}/token", params={"service": "test-registry", "scope": "vllm/vllm-openai"}
        ).status_code
        == 400
    )
    token = httpx.get(
        f"{auth_registry.url}/token", params={"service": "test-registry", "scope": "repository:other/repo:pull"}
    ).json()["token"]
    denied = httpx.get(
        f"{auth_registry.url}/v2/vllm/vllm-openai/manifests/kimi-k3",
        headers={"Authorization": f"Bearer {token}", "Accept": OCI_INDEX},
    )
    assert denied.status_code == 401 and 'error="insufficient_scope"' in denied.headers["WWW-Authenticate"]
