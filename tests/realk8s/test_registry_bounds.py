"""A trickling registry cannot hold up `preflight --cluster` or `up --timeout` on the real plane: the advisory image
check ends at its budget (or what is left of the command's deadline) as a WARN, having read a few bytes of the
answer, and the command goes on (issue: a registry that trickles kept both running for minutes).

The registry is tests/trickling_server.py (a fault on demand: the real distribution registry cannot be made to
send a byte every 0.1 s); everything else is the real plane. The bound is shown by the bytes the server got out
before the client went away, never by the wall clock."""

from __future__ import annotations

import json

import pytest

from k3deploy.preflight.run import REGISTRY_BUDGET_S
from tests.realk8s.cluster_fixtures import QUICK, Deployment
from tests.trickling_server import Trickle, trickling_server

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
#: One body byte every 0.1 s: each read lands well inside the registry client's per-read timeout.
INTERVAL_S = 0.1


def _image_check(checks: list[dict]) -> dict:
    (check,) = [c for c in checks if c["name"] == "image.platforms"]
    return check


def test_preflight_cluster_ends_the_registry_check_at_its_budget(deploy: Deployment) -> None:
    trickle = Trickle(interval_s=INTERVAL_S)
    with trickling_server(trickle) as url:
        result = deploy.k3("preflight", "--cluster", "-o", "json", env={"K3DEPLOY_REGISTRY_URL": url})
    assert "Traceback" not in result.stderr, result.stderr
    check = _image_check(json.loads(result.stdout)["checks"])
    assert check["status"] == "warn" and "could not ask the registry" in check["detail"], check
    # Read for at most the 30 s budget: about 300 of the answer's 4,011 bytes (unbounded, it is all of them).
    assert 0 < trickle.sent <= REGISTRY_BUDGET_S / INTERVAL_S + 20 < len(trickle.body)


def test_ups_timeout_bounds_the_registry_check_of_its_preflight(deploy: Deployment) -> None:
    trickle = Trickle(interval_s=INTERVAL_S)
    quick = [flag for flag in QUICK if flag != "--skip-preflight"]
    # The last --timeout wins: 8 s for the whole command, preflight's registry check included.
    with trickling_server(trickle) as url:
        result = deploy.k3("up", *quick, "--timeout", "8s", "-o", "json", env={"K3DEPLOY_REGISTRY_URL": url})
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (0, 1, 3), result.stderr
    assert "image.platforms" in result.stderr + result.stdout
    # At most what 8 s lets through (about 80 bytes), far below the 30 s budget's 300 had the deadline been ignored.
    assert 0 < trickle.sent <= 8 / INTERVAL_S + 20
