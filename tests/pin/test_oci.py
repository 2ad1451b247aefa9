"""Image references, Bearer challenges and index platforms (pure)."""

from __future__ import annotations

import pytest

from k3deploy.errors import ImageReferenceError
from k3deploy.pin.answers import Manifest, parse_answer
from k3deploy.pin.oci import (
    Platform,
    index_platforms,
    parse_bearer_challenge,
    parse_image,
    runs_on,
)

DIGEST = "sha256:" + "a" * 64


def test_docker_hub_names_map_to_the_api_host_and_library() -> None:
    ref = parse_image("vllm/vllm-openai:kimi-k3")
    assert (ref.registry, ref.api_host, ref.repository, ref.tag, ref.digest) == (
        "docker.io",
        "registry-1.docker.io",
        "vllm/vllm-openai",
        "kimi-k3",
        None,
    )
    single = parse_image("python:3.12-slim")
    assert (single.repository, single.reference) == ("library/python", "3.12-slim")
    assert parse_image("docker.io/ubuntu").reference == "latest"
    assert parse_image("index.docker.io/library/ubuntu:24.04").repository == "library/ubuntu"


def test_other_registries_keep_their_host_and_port() -> None:
    ref = parse_image(f"ghcr.io/k3deploy/k3deploy:0.1.0@{DIGEST}")
    assert (ref.api_host, ref.repository, ref.tag, ref.reference) == ("ghcr.io", "k3deploy/k3deploy", "0.1.0", DIGEST)
    assert parse_image("localhost:5000/team/img:v1").api_host == "localhost:5000"
    assert ref.pinned("sha256:" + "b" * 64) == "ghcr.io/k3deploy/k3deploy:0.1.0@sha256:" + "b" * 64


@pytest.mark.parametrize("bad", ["Vllm/Upper:tag", "repo:bad tag", "repo@sha256:short"])
def test_invalid_references_are_refused(bad: str) -> None:
    with pytest.raises(ImageReferenceError):
        parse_image(bad)


def test_docker_hub_challenge_is_parsed() -> None:
    header = 'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:vllm/vllm-openai:pull"'
    challenge = parse_bearer_challenge(header)
    assert challenge is not None
    assert (challenge.realm, challenge.service, challenge.scope) == (
        "https://auth.docker.io/token",
        "registry.docker.io",
        "repository:vllm/vllm-openai:pull",
    )
    assert parse_bearer_challenge('Basic realm="Registry Realm"') is None


def test_attestation_entries_are_not_platforms() -> None:
    index = {
        "manifests": [
            {"platform": {"os": "linux", "architecture": "amd64"}},
            {"platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
            {"platform": {"os": "unknown", "architecture": "unknown"}},
        ]
    }
    platforms = index_platforms(parse_answer(Manifest, index, "the index"))
    assert [str(p) for p in platforms] == ["linux/amd64", "linux/arm64/v8"]
    assert runs_on(platforms, "arm64") and not runs_on([Platform("linux", "amd64")], "arm64")
