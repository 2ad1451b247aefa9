"""`up` with N = 2 groups: a template change rolls one group at a time, each new group smoke-tested by its leader
before the next goes, and the API Service always has a ready leader behind it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import run_cli
from tests.kubeapi.controllers.endpointslices import ready_endpoints
from tests.rollout.conftest import FAST, NAMESPACE, PROFILE
from tests.rollout.upgrade_cluster import (
    API_SERVICE,
    CLIQUES,
    NEW_IMAGE,
    QUICK_UP,
    first_install,
    ready_behind,
)
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = pytest.mark.timeout(300)
LWS = "kimi-k3-gb300-tp16"
TWO = ("--set", "parallel.replicas=2", *QUICK_UP)


def _k3(kube: Any, *args: str) -> Any:
    return run_cli("up", "-p", PROFILE, "--kubeconfig", str(kube.kubeconfig), *FAST, *TWO, *args, timeout=240)


def _images(kube: Any) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
        for p in kube.store.list("pods", NAMESPACE)
        if p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/name") == LWS
    }


def test_two_groups_roll_one_at_a_time_smoked_by_leader_and_the_service_never_empties(racks: Any) -> None:
    first = first_install(racks, LWS, NAMESPACE, lambda: _k3(racks, "--skip-smoke"))
    assert first.returncode == 0, first.stderr
    cliques = {
        racks.store.get("nodes", p["spec"]["nodeName"])["metadata"]["labels"]["nvidia.com/gpu.clique"]
        for p in racks.store.list("pods", NAMESPACE, label=f"leaderworkerset.sigs.k8s.io/name={LWS}")
    }
    assert len(cliques) == 2 and cliques <= set(CLIQUES)
    racks.wait_for(lambda: ready_endpoints(racks.store, NAMESPACE, API_SERVICE) == [LWS + "-0", LWS + "-1"])
    start = racks.store.rv

    with scripted_server(Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4])) as server:
        upgrade = _k3(racks, *NEW_IMAGE, "--endpoint", server.url, "--group-endpoint", server.url)
        assert upgrade.returncode == 0, upgrade.stderr
        # A re-run with nothing to change holds no group and walks nothing.
        again = _k3(racks, *NEW_IMAGE, "--endpoint", server.url, "--group-endpoint", server.url)
    assert again.returncode == 0 and "ok   apply: no changes: all" in again.stderr, again.stderr
    assert "rolling group" not in again.stderr
    err = upgrade.stderr
    # Group 1 goes first, is smoke-tested by its leader, and only then does group 0 go.
    order = [
        err.index(line)
        for line in (
            "rolling group 1 of kimi-k3-gb300-tp16 (partition 1",
            "group 1 of kimi-k3-gb300-tp16 is ready on the new template",
            "smoke of group 1 through its leader kimi-k3-gb300-tp16-1",
            "rolling group 0 of kimi-k3-gb300-tp16 (partition 0",
            "smoke of group 0 through its leader kimi-k3-gb300-tp16-0",
            "all 2 groups of kimi-k3-gb300-tp16 rolled",
        )
    ]
    assert order == sorted(order), err
    assert set(_images(racks).values()) == {"vllm/vllm-openai:kimi-k3-next"}
    # The partition k3deploy walked is gone from the live object: what is live is the rendered set.
    rolling = racks.store.get("leaderworkersets", LWS, NAMESPACE)["spec"]["rolloutStrategy"][
        "rollingUpdateConfiguration"
    ]
    assert rolling.get("partition", 0) == 0

    states = ready_behind(racks, start)
    assert states, "no EndpointSlice write was seen during the upgrade"
    assert all(states), f"the API Service had no ready leader at some point: {states}"
    # Both leaders left the Service in turn (each group really went down and came back).
    assert [LWS + "-0"] in states and [LWS + "-1"] in states
    assert states[-1] == [LWS + "-0", LWS + "-1"]


def test_a_new_group_that_fails_its_smoke_stops_the_roll_and_the_old_template_comes_back(racks: Any) -> None:
    assert first_install(racks, LWS, NAMESPACE, lambda: _k3(racks, "--skip-smoke")).returncode == 0
    racks.wait_for(lambda: ready_endpoints(racks.store, NAMESPACE, API_SERVICE) == [LWS + "-0", LWS + "-1"])
    start = racks.store.rv
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], completion_status=500)) as server:
        upgrade = _k3(racks, *NEW_IMAGE, "--endpoint", server.url, "--group-endpoint", server.url)
    assert upgrade.returncode == 1, upgrade.stderr
    assert "smoke of the new group via the given endpoint" in upgrade.stderr
    assert "rolling group 0" not in upgrade.stderr
    assert "rollback: restored revision 1" in upgrade.stderr
    images = _images(racks)
    assert len(images) == 8 and not any("kimi-k3-next" in image for image in images.values())
    assert all(ready_behind(racks, start))
