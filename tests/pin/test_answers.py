"""Registry and Hub answers of unexpected shapes: read through pin/answers.py's models, each a clear error of its
own check; a digest is followed into a path only as sha256:<64 hex>."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

import pytest

from k3deploy.errors import MalformedAnswer
from k3deploy.pin.answers import Manifest, checked_digest, parse_answer
from k3deploy.pin.hub import HubClient
from k3deploy.pin.oci import DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST, index_platforms
from k3deploy.pin.registry import RegistryClient
from k3deploy.preflight.checks import Status
from k3deploy.preflight.run import image_platforms
from k3deploy.profile import load_profile
from tests.pin.registry_server import FaultyRegistry

IMAGE = "registry.example/team/vllm:v1"
MANIFEST_PATH = "/v2/team/vllm/manifests/v1"
GOOD = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"manifests": {"digest": GOOD}}, "manifests: Input should be a valid list (got dict)"),
        ({"manifests": "linux/arm64"}, "manifests: Input should be a valid list (got str)"),
        ({"manifests": [{"platform": "linux/arm64"}]}, "manifests.0.platform"),
        ({"manifests": [{"platform": {"os": ["linux"], "architecture": "arm64"}}]}, "manifests.0.platform.os"),
        ({"manifests": [{"size": "12"}]}, "manifests.0.size"),
        ({"config": "sha256:x"}, "config: "),
        ({"mediaType": 7}, "mediaType"),
    ],
)
def test_a_field_of_the_wrong_type_is_one_clear_error(body: dict, field: str) -> None:
    with pytest.raises(MalformedAnswer, match="the manifest is malformed") as caught:
        parse_answer(Manifest, body, "the manifest")
    assert field in caught.value.message and caught.value.exit_code == 3
    assert "AttributeError" not in caught.value.message and "TypeError" not in caught.value.message


def test_unknown_fields_are_ignored() -> None:
    body = {
        "schemaVersion": 2,
        "annotations": {"org.opencontainers.image.created": "2026-01-01"},
        "artifactType": "application/x",
        "manifests": [{"digest": GOOD, "platform": {"os": "linux", "architecture": "arm64", "os.features": ["x"]}}],
    }
    assert [str(p) for p in index_platforms(parse_answer(Manifest, body, "the index"))] == ["linux/arm64"]


@pytest.mark.parametrize(
    "digest",
    ["../../../../token?x=", "sha256:" + "A" * 64, "sha256:" + "a" * 63, "sha512:" + "a" * 128, "", None, GOOD + "/x"],
)
def test_only_a_sha256_digest_goes_into_a_path(digest: str | None) -> None:
    with pytest.raises(MalformedAnswer, match="not sha256:<64 hex digits>"):
        checked_digest(digest, "the config")
    assert checked_digest(GOOD, "the config") == GOOD


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultyRegistry]:
    server = FaultyRegistry("answers").start()
    monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", server.url)
    yield server
    server.stop()


@pytest.mark.parametrize(
    "manifest",
    [
        {"mediaType": OCI_MANIFEST, "config": {"digest": "../../../../token?x="}},
        {
            "mediaType": OCI_INDEX,
            "manifests": [{"digest": "../../../token?x=", "platform": {"os": "linux", "architecture": "arm64"}}],
        },
    ],
)
def test_a_digest_that_is_a_path_is_never_followed(registry: FaultyRegistry, manifest: dict) -> None:
    registry.answers[MANIFEST_PATH] = (manifest["mediaType"], manifest)
    with RegistryClient(timeout_s=5) as client, pytest.raises(MalformedAnswer, match="token") as caught:
        client.resolve(IMAGE, arch="arm64")
    assert "not sha256:<64 hex digits>" in caught.value.message
    assert registry.paths == [MANIFEST_PATH]  # nothing asked past the manifest: no /token, no /blobs/..


def test_a_wellformed_image_still_resolves(registry: FaultyRegistry) -> None:
    config = {"os": "linux", "architecture": "arm64", "rootfs": {"type": "layers"}}
    config_digest = "sha256:" + hashlib.sha256(json.dumps(config).encode()).hexdigest()
    registry.answers[f"/v2/team/vllm/blobs/{config_digest}"] = ("application/json", config)
    registry.answers[MANIFEST_PATH] = (
        DOCKER_MANIFEST,
        {"mediaType": DOCKER_MANIFEST, "config": {"digest": config_digest}},
    )
    with RegistryClient(timeout_s=5) as client:
        resolved = client.resolve(IMAGE, arch="arm64")
    assert [str(p) for p in resolved.platforms] == ["linux/arm64"]


@pytest.mark.parametrize(
    "manifest",
    [
        {"mediaType": OCI_INDEX, "manifests": {"linux": GOOD}},
        {"mediaType": OCI_INDEX, "manifests": "linux/arm64"},
        {"mediaType": OCI_INDEX, "manifests": [{"digest": GOOD, "platform": "linux/arm64"}]},
        {"mediaType": OCI_INDEX, "manifests": [{"digest": GOOD, "platform": {"os": ["linux"], "architecture": "x"}}]},
    ],
)
def test_preflight_turns_a_malformed_answer_into_a_warn_of_its_one_check(
    registry: FaultyRegistry, manifest: dict
) -> None:
    registry.answers[MANIFEST_PATH] = (OCI_INDEX, manifest)
    profile = load_profile("kimi-k3-gb300-tp16", [f"vllm.image={IMAGE}"])
    result = image_platforms(profile)
    assert result.name == "image.platforms" and result.status is Status.WARN, result
    assert "is malformed: manifests" in result.detail
    assert "AttributeError" not in result.detail and "TypeError" not in result.detail


@pytest.mark.parametrize("answer", [{"sha": 123}, {"sha": ["0" * 40]}, {"sha": None}])
def test_a_hub_answer_of_the_wrong_type_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, registry: FaultyRegistry, answer: dict
) -> None:
    registry.answers["/api/models/org/model/revision/main"] = ("application/json", answer)
    monkeypatch.setenv("HF_ENDPOINT", registry.url)
    with HubClient(timeout_s=5) as hub, pytest.raises(MalformedAnswer, match=r"is malformed: sha: ") as caught:
        hub.resolve("org/model", None)
    assert caught.value.exit_code == 3
