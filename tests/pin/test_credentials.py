"""Registry credentials never go into a profile or a rendered object: a profile URL with userinfo is refused (pin,
render), and pin reads a private mirror with the credentials of the environment or the Docker config, against the
real distribution registry behind token auth (tests/pin/token_issuer.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from k3deploy.pin.credentials import from_docker_config
from k3deploy.pin.registry import RegistryClient
from tests.conftest import run_cli
from tests.pin.distribution import Distribution
from tests.pin.hub_server import Hub
from tests.pin.token_issuer import TokenIssuer

PROFILE = "kimi-k3-gb300-tp16"
SECRET = "S3cretPW"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_the_docker_config_is_read_as_docker_reads_it() -> None:
    config = {
        "auths": {
            "mirror.example:5000": {"auth": _b64("alice:pw:with:colons")},
            "https://other.example/": {"username": "bob", "password": "pw2"},
            "https://index.docker.io/v1/": {"auth": _b64("hubuser:hubpw")},
            "broken.example": {"auth": "not base64!"},
        }
    }
    assert from_docker_config("mirror.example:5000", config) == ("alice", "pw:with:colons")
    assert from_docker_config("other.example", config) == ("bob", "pw2")
    assert from_docker_config("registry-1.docker.io", config) == ("hubuser", "hubpw")
    assert from_docker_config("broken.example", config) is None
    assert from_docker_config("mirror.example", config) is None  # another port is another registry
    assert from_docker_config("x", {"auths": []}) is None


@pytest.mark.parametrize("command", ["pin", "render"])
@pytest.mark.parametrize(
    "field",
    [
        "kubernetes.registry_mirrors={docker.io: 'https://alice:%s@mirror.example/hub'}",
        "kubernetes.https_proxy=http://alice:%s@proxy.example:3128",
        "kubernetes.hf_endpoint=https://alice:%s@hub.example",
    ],
)
def test_a_profile_url_with_credentials_is_refused_and_never_written(command: str, field: str, tmp_path: Path) -> None:
    """Before: pin wrote `alice:S3cretPW@` into the pinned profile and render into the profile ConfigMap."""
    out = tmp_path / ("out" if command == "render" else "pinned.yaml")
    args = ["-o", str(out)]
    done = run_cli(command, "-p", PROFILE, "--set", field % SECRET, *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-2].startswith("error: ") and "carries credentials" in lines[-2]
    assert lines[-1].startswith("hint: ")
    assert SECRET not in done.stderr + done.stdout and "alice" not in done.stderr + done.stdout
    assert not out.exists()


def _private_image(auth_registry: Distribution, token_issuer: TokenIssuer) -> str:
    """A private repository (anonymous tokens grant nothing), its digest."""
    digest = auth_registry.push_index("team/private", "1", ["arm64"])
    assert "team/private" not in token_issuer.public
    return digest


def test_the_environment_mirror_url_gives_its_credentials_to_the_token_server(
    monkeypatch: pytest.MonkeyPatch, auth_registry: Distribution, token_issuer: TokenIssuer
) -> None:
    digest = _private_image(auth_registry, token_issuer)
    user, password = token_issuer.pusher
    host = auth_registry.url.removeprefix("https://")
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", f"https://{user}:{password}@{host}")
    monkeypatch.setenv("DOCKER_CONFIG", "/nonexistent")
    before = len(token_issuer.requests)
    with RegistryClient(timeout_s=10) as client:
        assert client.resolve("team/private:1", arch="arm64").digest == digest
    asked = token_issuer.requests[before:]
    assert asked and asked[0][1]["Authorization"] == "Basic " + _b64(f"{user}:{password}")


def test_pin_reads_a_private_mirror_with_the_docker_configs_credentials_and_writes_none(
    monkeypatch: pytest.MonkeyPatch, auth_registry: Distribution, token_issuer: TokenIssuer, hub: Hub, tmp_path: Path
) -> None:
    """The profile names the mirror without credentials; `docker login`'s config holds them; the pinned profile does
    not. Before: the only way was `user:password@` in the profile's URL, written out by pin."""
    vllm = auth_registry.push_index("hub/vllm/vllm-openai", "kimi-k3", ["arm64"])
    auth_registry.push_index("ghcr/k3deploy/k3deploy", "0.1.0", ["amd64", "arm64"])
    user, password = token_issuer.pusher
    host = auth_registry.url.removeprefix("https://")
    docker = tmp_path / "docker"
    docker.mkdir()
    (docker / "config.json").write_text(json.dumps({"auths": {host: {"auth": _b64(f"{user}:{password}")}}}))
    monkeypatch.delenv("K3DEPLOY_REGISTRY_URL")
    url = auth_registry.url
    mirrors = ["--set", f"kubernetes.registry_mirrors={{docker.io: '{url}/hub', ghcr.io: '{url}/ghcr'}}"]
    out = tmp_path / "pinned.yaml"
    env = {"DOCKER_CONFIG": str(docker), "HF_ENDPOINT": hub.url}
    done = run_cli("pin", "-p", PROFILE, *mirrors, "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert password not in text and password not in done.stderr
    pinned = yaml.safe_load(text)
    assert pinned["vllm"]["image"] == f"vllm/vllm-openai:kimi-k3@{vllm}"
    assert pinned["kubernetes"]["registry_mirrors"] == {"docker.io": f"{url}/hub", "ghcr.io": f"{url}/ghcr"}
    # without the Docker config, the same mirror refuses: the credentials came from there
    refused = run_cli("pin", "-p", PROFILE, *mirrors, env={**env, "DOCKER_CONFIG": str(tmp_path / "none")})
    assert refused.returncode == 1 and "refused anonymous access to hub/vllm/vllm-openai" in refused.stderr
