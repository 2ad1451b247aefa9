"""`up` with N = 2 groups on the real plane: a template change rolls one group at a time through the real LWS
controller under k3deploy's partition walk, each new group smoke-tested by its leader before the next goes, and the
real EndpointSlice controller's slice of the API Service always has a ready leader (a watch records every write)."""

from __future__ import annotations

import subprocess

import pytest

from tests.realk8s.client import wait_until
from tests.realk8s.cluster_fixtures import (
    API_SERVICE,
    LWS,
    NEW_IMAGE,
    SCRIPTED,
    Deployment,
    SliceRecorder,
    ready_endpoints,
)
from tests.realk8s.objects import clique_ids
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
TWO = ("--set", "parallel.replicas=2", *SCRIPTED)
LWS_LABEL = "leaderworkerset.sigs.k8s.io/name"
#: 10 ms between chunks: a loaded host must not read whole streams in bursts (smoke calls that a WARN).
GOOD = Script(models=["moonshotai/Kimi-K3"], tokens_per_chunk=[4, 4, 4, 4], chunk_delay_s=0.01)


def _up(deploy: Deployment, *args: str) -> subprocess.CompletedProcess[str]:
    return deploy.k3("up", *TWO, *args)


def _pods(deploy: Deployment) -> list[dict]:
    return [
        p
        for p in deploy.list("pods")
        if (p["metadata"].get("labels") or {}).get(LWS_LABEL) == LWS and not p["metadata"].get("deletionTimestamp")
    ]


def _serving(deploy: Deployment) -> list[str]:
    slices = deploy.plane.api.get(
        deploy.path("endpointslices") + f"?labelSelector=kubernetes.io/service-name={API_SERVICE}"
    )["items"]
    return sorted({e for s in slices for e in ready_endpoints(s)})


def _installed(deploy: Deployment) -> SliceRecorder:
    first = _up(deploy, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    wait_until("both leaders behind the API Service", lambda: _serving(deploy) == [LWS + "-0", LWS + "-1"], 60)
    return SliceRecorder(deploy.plane, deploy.namespace, API_SERVICE)


def test_two_groups_roll_one_at_a_time_smoked_by_leader_and_the_service_never_empties(deploy: Deployment) -> None:
    recorder = _installed(deploy)
    api = deploy.plane.api
    cliques = {
        api.get(f"/api/v1/nodes/{p['spec']['nodeName']}")["metadata"]["labels"]["nvidia.com/gpu.clique"]
        for p in _pods(deploy)
    }
    assert len(cliques) == 2 and cliques <= set(clique_ids(3))

    with scripted_server(GOOD) as server:
        upgrade = _up(deploy, *NEW_IMAGE, "--endpoint", server.url, "--group-endpoint", server.url)
        assert upgrade.returncode == 0, upgrade.stderr
        # A re-run with nothing to change holds no group and walks nothing.
        again = _up(deploy, *NEW_IMAGE, "--endpoint", server.url, "--group-endpoint", server.url)
    assert again.returncode == 0 and "ok   apply: no changes: all" in again.stderr, again.stderr
    assert "rolling group" not in again.stderr
    err = upgrade.stderr
    # Group 1 goes first, is smoke-tested by its leader, and only then does group 0 go.
    order = [
        err.index(line)
        for line in (
            f"rolling group 1 of {LWS} (partition 1",
            f"group 1 of {LWS} is ready on the new template",
            f"smoke of group 1 through its leader {LWS}-1",
            f"rolling group 0 of {LWS} (partition 0",
            f"smoke of group 0 through its leader {LWS}-0",
            f"all 2 groups of {LWS} rolled",
        )
    ]
    assert order == sorted(order), err
    assert {p["spec"]["containers"][0]["image"] for p in _pods(deploy)} == {"vllm/vllm-openai:kimi-k3-next"}
    # The partition k3deploy walked is gone from the live object: what is live is the rendered set.
    live = deploy.get("leaderworkersets", LWS)
    assert live is not None
    assert live["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"].get("partition", 0) == 0

    wait_until("both leaders back behind the API Service", lambda: _serving(deploy) == [LWS + "-0", LWS + "-1"], 60)
    states = recorder.stop()
    assert states, "no EndpointSlice write was seen during the upgrade"
    assert all(states), f"the API Service had no ready leader at some point: {states}"
    # Both leaders left the Service in turn (each group really went down and came back).
    assert [LWS + "-0"] in states and [LWS + "-1"] in states
    assert states[-1] == [LWS + "-0", LWS + "-1"]


def test_a_new_group_that_fails_its_smoke_stops_the_roll_and_the_old_template_comes_back(deploy: Deployment) -> None:
    recorder = _installed(deploy)
    with scripted_server(Script(models=["moonshotai/Kimi-K3"], completion_status=500)) as server:
        upgrade = _up(deploy, *NEW_IMAGE, "--endpoint", server.url, "--group-endpoint", server.url)
    assert upgrade.returncode == 1, upgrade.stderr
    assert "smoke of the new group via the given endpoint" in upgrade.stderr
    assert "rolling group 0" not in upgrade.stderr
    assert "rollback: restored revision 1" in upgrade.stderr
    wait_until("both leaders back behind the API Service", lambda: _serving(deploy) == [LWS + "-0", LWS + "-1"], 60)
    images = [p["spec"]["containers"][0]["image"] for p in _pods(deploy)]
    assert len(images) == 8 and not any("kimi-k3-next" in image for image in images)
    assert all(recorder.stop())
