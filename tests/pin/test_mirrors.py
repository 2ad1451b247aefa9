"""Where an image is read from: K3DEPLOY_REGISTRY_URL, the profile's mirrors, or the registry itself (pure)."""

from __future__ import annotations

import pytest

from k3deploy.errors import ProfileError, UsageError
from k3deploy.pin.mirrors import Location, locate, parse_env
from k3deploy.pin.oci import parse_image
from k3deploy.profile import load_profile

VLLM = parse_image("vllm/vllm-openai:kimi-k3")
SMOKE = parse_image("ghcr.io/k3deploy/k3deploy:0.1.0")


def test_without_a_mirror_the_registry_itself_is_asked() -> None:
    assert locate(VLLM, {}, None) == Location("https://registry-1.docker.io", "vllm/vllm-openai")
    assert locate(parse_image("localhost:5000/team/img:1"), {}, None).base == "http://localhost:5000"


def test_a_mirror_prefix_is_the_repository_path_there() -> None:
    mirrors = {"docker.io": "https://mirror.example:8443/hub/", "ghcr.io": "https://mirror.example:8443"}
    assert locate(VLLM, mirrors, None) == Location(
        "https://mirror.example:8443", "hub/vllm/vllm-openai", "https://mirror.example:8443/hub/"
    )
    assert locate(SMOKE, mirrors, None).repository == "k3deploy/k3deploy"
    assert locate(parse_image("python:3.12-slim"), {"index.docker.io": "https://m.example/h"}, None).repository == (
        "h/library/python"
    )


def test_the_environment_wins_one_url_for_all_or_per_registry() -> None:
    mirrors = {"docker.io": "https://site.example/hub"}
    assert locate(VLLM, mirrors, "https://laptop.example").base == "https://laptop.example"
    per = "ghcr.io=https://other.example/g, docker.io=https://env.example/d"
    assert locate(VLLM, mirrors, per) == Location("https://env.example", "d/vllm/vllm-openai", "https://env.example/d")
    assert locate(SMOKE, {}, "docker.io=https://env.example").base == "https://ghcr.io"


@pytest.mark.parametrize(
    "bad", ["mirror.example", "docker.io=mirror.example", "=https://x.example", "https://x.example/?a=1"]
)
def test_a_malformed_environment_value_is_a_usage_error(bad: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse_env(bad)
    assert exc.value.exit_code == 2 and exc.value.hint


def test_the_profile_field_takes_registry_hosts_and_urls() -> None:
    profile = load_profile(
        "kimi-k3-gb300-tp16", ["kubernetes.registry_mirrors={docker.io: 'https://m.example:5000/hub'}"]
    )
    assert profile.kubernetes.registry_mirrors == {"docker.io": "https://m.example:5000/hub"}
    with pytest.raises(ProfileError, match="not a registry host"):
        load_profile("kimi-k3-gb300-tp16", ["kubernetes.registry_mirrors={'https://docker.io': 'https://m.example'}"])
    with pytest.raises(ProfileError, match="http"):
        load_profile("kimi-k3-gb300-tp16", ["kubernetes.registry_mirrors={docker.io: 'm.example'}"])
