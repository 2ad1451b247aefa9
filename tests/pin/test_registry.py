"""The registry client against the real distribution registry: index, manifest list, single images, token auth, errors.

The faults distribution does not produce (a lying digest, a huge manifest, a stalled answer) are staged by
tests/pin/registry_server.py at the end.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from k3deploy.errors import CheckFailed, EnvironmentProblem
from k3deploy.pin.oci import DOCKER_MANIFEST, DOCKER_MANIFEST_LIST, OCI_INDEX, OCI_MANIFEST
from k3deploy.pin.registry import MAX_MANIFEST_BYTES, RegistryClient
from tests.pin.distribution import Distribution
from tests.pin.registry_server import HUGE_BYTES, FaultyRegistry
from tests.pin.token_issuer import TokenIssuer

IMAGE = "vllm/vllm-openai:kimi-k3"


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch, registry: Distribution) -> Iterator[RegistryClient]:
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", registry.url)
    with RegistryClient(timeout_s=10) as c:
        yield c


def test_oci_index_resolves_to_its_digest_and_verifies_the_nodes_image(
    registry: Distribution, client: RegistryClient
) -> None:
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3", ["amd64", "arm64"])
    result = client.resolve(IMAGE, arch="arm64")
    assert (result.digest, result.media_type, result.is_index) == (digest, OCI_INDEX, True)
    assert [str(p) for p in result.platforms] == ["linux/amd64", "linux/arm64/v8"]  # the attestation entry is not one
    assert result.pinned == f"{IMAGE}@{digest}"
    arm = result.platform_digest
    assert arm is not None and arm != digest
    asked = [path for method, path in registry.requests() if method == "GET"]
    assert asked[-3:-1] == ["/v2/vllm/vllm-openai/manifests/kimi-k3", f"/v2/vllm/vllm-openai/manifests/{arm}"]
    assert asked[-1].startswith("/v2/vllm/vllm-openai/blobs/sha256:")  # the arm64 image's config: its platform


def test_docker_manifest_list_is_read_as_a_list_not_rewritten(registry: Distribution, client: RegistryClient) -> None:
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3", ["amd64", "arm64"], media_type=DOCKER_MANIFEST_LIST)
    result = client.resolve(IMAGE, arch="arm64")
    assert (result.digest, result.media_type) == (digest, DOCKER_MANIFEST_LIST)
    assert {p.architecture for p in result.platforms} == {"amd64", "arm64"}


def test_the_registry_rewrites_a_list_for_a_client_that_does_not_accept_lists(registry: Distribution) -> None:
    """Why pin sends every manifest type in Accept: distribution answers an old client with the amd64 image."""
    registry.push_index("vllm/vllm-openai", "kimi-k3", ["amd64", "arm64"], media_type=DOCKER_MANIFEST_LIST)
    old = httpx.get(f"{registry.url}/v2/vllm/vllm-openai/manifests/kimi-k3", headers={"Accept": DOCKER_MANIFEST})
    assert old.status_code == 200 and old.headers["Content-Type"] == DOCKER_MANIFEST
    amd64 = httpx.get(f"{registry.url}/v2/vllm/vllm-openai/blobs/{old.json()['config']['digest']}").json()
    assert amd64["architecture"] == "amd64"


@pytest.mark.parametrize("media_type", [OCI_MANIFEST, DOCKER_MANIFEST])
def test_single_platform_image_reads_its_platform_from_the_config_blob(
    registry: Distribution, client: RegistryClient, media_type: str
) -> None:
    digest = registry.push_image("vllm/vllm-openai", "kimi-k3-aarch64", "arm64", media_type)
    result = client.resolve("vllm/vllm-openai:kimi-k3-aarch64", arch="arm64")
    assert (result.digest, result.is_index, [str(p) for p in result.platforms]) == (digest, False, ["linux/arm64"])
    assert registry.requests()[-1][1].startswith("/v2/vllm/vllm-openai/blobs/sha256:")


def test_a_pinned_reference_is_fetched_by_digest(registry: Distribution, client: RegistryClient) -> None:
    digest = registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    assert client.resolve(f"{IMAGE}@{digest}").digest == digest
    assert registry.requests()[-1] == ("GET", f"/v2/vllm/vllm-openai/manifests/{digest}")


def test_an_index_naming_an_image_the_registry_lacks_is_refused(
    partial_registry: Distribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", partial_registry.url)
    partial_registry.push_index("vllm/vllm-openai", "kimi-k3", ["amd64", "arm64"], missing=("arm64",))
    with RegistryClient(timeout_s=10) as client:
        assert client.resolve(IMAGE, arch="amd64").platform_digest is not None
        with pytest.raises(
            CheckFailed, match=r"lists linux/arm64 as sha256:[0-9a-f]{64}, but 127\.0\.0\.1:\d+ does not"
        ) as exc:
            client.resolve(IMAGE, arch="arm64")
    assert "MANIFEST_UNKNOWN" in exc.value.message and "copy every platform" in (exc.value.hint or "")


def test_bearer_challenge_is_answered_with_a_token_the_registry_verifies(
    monkeypatch: pytest.MonkeyPatch, auth_registry: Distribution, token_issuer: TokenIssuer
) -> None:
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", auth_registry.url)
    digest = auth_registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    token_issuer.public.add("vllm/vllm-openai")
    anonymous = httpx.get(f"{auth_registry.url}/v2/vllm/vllm-openai/manifests/kimi-k3")
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"] == (
        f'Bearer realm="{token_issuer.realm}",service="k3deploy-test-registry",scope="repository:vllm/vllm-openai:pull"'
    )
    before = len(token_issuer.requests)
    with RegistryClient(timeout_s=10) as client:
        assert client.resolve(IMAGE, arch="arm64").digest == digest
        assert client.resolve(IMAGE, arch="arm64").digest == digest
    asked = token_issuer.requests[before:]
    assert len(asked) == 1 and "Authorization" not in asked[0][1]  # one anonymous token, reused for the same scope


def test_private_repository_behind_auth_is_refused_like_docker_hub(
    monkeypatch: pytest.MonkeyPatch, auth_registry: Distribution
) -> None:
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", auth_registry.url)
    auth_registry.push_index("team/private", "1", ["arm64"])  # pushed, but not public: anonymous tokens grant nothing
    with (
        RegistryClient(timeout_s=10) as client,
        pytest.raises(CheckFailed, match=r"refused anonymous access to team/private:1 \(UNAUTHORIZED"),
    ):
        client.resolve("team/private:1")


def test_unknown_tag_and_unknown_repository_fail_with_the_registry_error(
    registry: Distribution, client: RegistryClient
) -> None:
    registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    with pytest.raises(CheckFailed, match="MANIFEST_UNKNOWN: manifest unknown") as tag:
        client.resolve("vllm/vllm-openai:kimi-k3-aarch64-cu130")
    assert tag.value.exit_code == 1
    with pytest.raises(
        CheckFailed, match=r"has no vllm/nothing:1 \(MANIFEST_UNKNOWN"
    ):  # distribution's answer for both
        client.resolve("vllm/nothing:1")


def test_a_registry_whose_ca_is_not_trusted_is_an_environment_problem(
    registry: Distribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", registry.url)
    monkeypatch.delenv("SSL_CERT_FILE")
    with (
        RegistryClient(timeout_s=10) as client,
        pytest.raises(EnvironmentProblem, match="CERTIFICATE_VERIFY_FAILED") as exc,
    ):
        client.resolve(IMAGE)
    assert "SSL_CERT_FILE" in (exc.value.hint or "")


def test_unreachable_registry_is_an_environment_problem_naming_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", f"http://127.0.0.1:{port}")
        with RegistryClient(timeout_s=5) as client, pytest.raises(EnvironmentProblem, match=f"127.0.0.1:{port}") as exc:
            client.resolve(IMAGE)
    assert exc.value.exit_code == 3


# Faults the real registry does not produce.


@pytest.fixture
def faulty(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultyRegistry]:
    server = FaultyRegistry(request.param).start()
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", server.url)
    yield server
    server.stop()


@pytest.mark.parametrize("faulty", ["lying-digest"], indirect=True)
def test_manifest_that_does_not_match_its_digest_is_refused(faulty: FaultyRegistry) -> None:
    with RegistryClient(timeout_s=5) as client, pytest.raises(EnvironmentProblem, match="is not the sha256") as exc:
        client.resolve(IMAGE)
    assert exc.value.exit_code == 3


@pytest.mark.parametrize("faulty", ["huge-manifest"], indirect=True)
def test_a_huge_manifest_is_not_read_to_its_end(faulty: FaultyRegistry) -> None:
    with (
        RegistryClient(timeout_s=5) as client,
        pytest.raises(EnvironmentProblem, match=f"over {MAX_MANIFEST_BYTES} bytes"),
    ):
        client.resolve(IMAGE)
    assert faulty.sent < HUGE_BYTES


@pytest.mark.parametrize("faulty", ["stall"], indirect=True)
def test_a_stalled_answer_ends_in_a_timeout(faulty: FaultyRegistry) -> None:
    with RegistryClient(timeout_s=0.5) as client, pytest.raises(EnvironmentProblem, match="ReadTimeout") as exc:
        client.resolve(IMAGE)
    assert exc.value.exit_code == 3
