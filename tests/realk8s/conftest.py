"""Per-test namespaces on the session's real plane (tests/realk8s/fixtures.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.realk8s.plane import Plane


@pytest.fixture
def namespace(realk8s: Plane) -> Iterator[str]:
    """A fresh namespace for one test, deleted after it."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    realk8s.api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    realk8s.api.delete(f"/api/v1/namespaces/{name}")
