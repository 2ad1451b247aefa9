"""Fixtures of the pin tests: a Hub API on 127.0.0.1, and the environment that points `pin` at it and the registry.

The registry fixtures (`registry`, `auth_registry`, `partial_registry`, `token_issuer`) are tests/pin/fixtures.py's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pin.distribution import Distribution
from tests.pin.hub_server import Hub, HubModel

MODEL_SHA = "1" * 40
DRAFT_SHA = "2" * 40


@pytest.fixture
def hub() -> Iterator[Hub]:
    """A Hub with the built-in GB300 profile's model and draft on `main`."""
    server = Hub().start()
    server.models["moonshotai/Kimi-K3"] = HubModel(refs={"main": MODEL_SHA})
    server.models["Inferact/Kimi-K3-DSpark"] = HubModel(refs={"main": DRAFT_SHA, "refs/pr/1": "3" * 40})
    yield server
    server.stop()


@pytest.fixture
def pin_env(monkeypatch: pytest.MonkeyPatch, registry: Distribution, hub: Hub) -> dict[str, str]:
    """Point this process and CLI subprocesses at the test registry and Hub; no HF token."""
    env = {"K3DEPLOY_REGISTRY_URL": registry.url, "HF_ENDPOINT": hub.url}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return env
