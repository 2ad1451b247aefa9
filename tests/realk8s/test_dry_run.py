"""`apply --dry-run=server` on the real API server: every object goes through real admission, nothing persists."""

from __future__ import annotations

import uuid

import pytest

from tests.realk8s.client import resource_path
from tests.realk8s.plane import Plane
from tests.realk8s.test_rollout import LWS, k3

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]


@pytest.mark.parametrize("flag", [("--dry-run",), ("--dry-run", "server"), ("--dry-run=server",)])
def test_a_server_dry_run_of_a_first_install_persists_nothing(realk8s: Plane, flag: tuple[str, ...]) -> None:
    namespace = f"k3-{uuid.uuid4().hex[:8]}"
    done = k3(realk8s, namespace, "apply", *flag)
    assert done.returncode == 0, done.stderr
    assert "dry run" in done.stderr.lower(), done.stderr
    api = realk8s.api
    assert api.find(resource_path("v1", "namespaces", None, namespace)) is None
    assert api.find(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS)) is None
