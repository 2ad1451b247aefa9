"""The registry fixture itself: missing binary fails under CI, the process is stopped by its pid, pushes are real."""

from __future__ import annotations

import os

import httpx
import pytest

from tests.pin import distribution
from tests.pin.distribution import Distribution
from tests.pin.token_issuer import TokenIssuer


def test_a_missing_registry_binary_fails_under_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("K3DEPLOY_DISTRIBUTION_REGISTRY", raising=False)
    monkeypatch.setattr(distribution, "venv_tool", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"bash \.ci/setup"):
        distribution.registry_binary()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        distribution.registry_binary()


def test_stop_ends_the_process_it_started(registry: Distribution) -> None:
    proc = registry._proc
    assert proc is not None and proc.poll() is None
    registry.stop()
    assert proc.poll() is not None
    with pytest.raises(ProcessLookupError):
        os.kill(proc.pid, 0)


def test_the_token_registry_refuses_a_token_it_cannot_verify(
    auth_registry: Distribution, token_issuer: TokenIssuer
) -> None:
    token_issuer.public.add("vllm/vllm-openai")
    auth_registry.push_index("vllm/vllm-openai", "kimi-k3", ["arm64"])
    url = f"{auth_registry.url}/v2/vllm/vllm-openai/manifests/kimi-k3"
    token = httpx.get(
        token_issuer.realm, params={"service": "k3deploy-test-registry", "scope": "repository:vllm/vllm-openai:pull"}
    ).json()["token"]
    good = httpx.get(url, headers={"Authorization": f"Bearer {token}"})
    assert good.status_code == 200
    header, claims, signature = token.split(".")
    forged = f"{header}.{claims}.{signature[:-4]}AAAA"
    assert httpx.get(url, headers={"Authorization": f"Bearer {forged}"}).status_code == 401
