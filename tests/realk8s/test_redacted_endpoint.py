"""Credentials in `up --endpoint` on the real plane: used for the smoke, never printed, never stored in the cluster."""

from __future__ import annotations

import json

import pytest

from tests.realk8s import release
from tests.realk8s.client import resource_path
from tests.realk8s.plane import Plane
from tests.realk8s.release import up
from tests.realk8s.test_rollout import LWS, k3
from tests.smoke.scripted_server import Script, scripted_server

release_ns = release.release_ns  # the fixture, used by name
pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]


def test_up_with_credentials_in_the_endpoint_prints_and_stores_none(realk8s: Plane, release_ns: str) -> None:
    script = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4], chunk_delay_s=0.02)
    with scripted_server(script) as server:
        url = server.url.replace("http://", "http://alice:pa55-w0rd@")
        done = up(realk8s, release_ns, "--endpoint", url, "-o", "json")
        status = k3(realk8s, release_ns, "status", "--endpoint", url, "-o", "json")
    assert done.returncode == 0, done.stderr
    history = realk8s.api.get(resource_path("v1", "configmaps", release_ns, f"{LWS}-k3deploy-revisions"))
    for where in (done.stdout, done.stderr, status.stdout, status.stderr, json.dumps(history)):
        assert "pa55-w0rd" not in where and "alice" not in where
    assert json.loads(done.stdout)["endpoint"].startswith("http://***@127.0.0.1:")
    assert json.loads(status.stdout)["endpoint"].startswith("http://***@127.0.0.1:")
