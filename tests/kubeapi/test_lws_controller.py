"""The simulated LeaderWorkerSet controller behaves as kubernetes-sigs/lws does, per version.

Upstream files: pkg/controllers/leaderworkerset_controller.go (revisions, status, conditions),
pkg/controllers/pod_controller.go (handleRestartPolicy), pkg/utils/pod/pod_utils.go (ContainerRestarted,
PodDeleted), api/leaderworkerset/v1/leaderworkerset_types.go (restart policies; observedGeneration from v0.9.0).
"""

from __future__ import annotations

import pytest

from tests.kubeapi.controllers.lws_revision import REVISION_KEY, patch, revision_key
from tests.kubeapi.server import KubeApiServer
from tests.kubeapi.test_controllers import NS, _apply_lws, _condition, _lws

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def cluster(kube: KubeApiServer) -> KubeApiServer:
    """One clique of four GB300 trays and the CRDs; pods end their grace period after 0.3 s."""
    kube.add_crds()
    kube.add_gb300_nodes(count=4)
    kube.controllers.kubelet.termination_delay = 0.3
    return kube


def _lws_obj(kube: KubeApiServer) -> dict:
    return kube.store.get("leaderworkersets", "k3", NS)


def _available(kube: KubeApiServer) -> dict | None:
    lws = _lws_obj(kube)
    return lws if _condition(lws, "Available").get("status") == "True" else None


def _uids(kube: KubeApiServer) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in kube.store.list("pods", NS)
        if not p["metadata"].get("deletionTimestamp")
    }


def test_v08_writes_no_observed_generation_and_v09_does_on_status_and_conditions(cluster: KubeApiServer) -> None:
    cluster.controllers.lws.version = "v0.8"
    _apply_lws(cluster, _lws())
    lws = cluster.wait_for(lambda: _available(cluster))
    assert "observedGeneration" not in lws["status"]
    assert all("observedGeneration" not in c for c in lws["status"]["conditions"])
    cluster.controllers.lws.version = "v0.9"
    lws = cluster.wait_for(lambda: (o := _lws_obj(cluster))["status"].get("observedGeneration") and o)
    assert lws["status"]["observedGeneration"] == 1
    assert {c["observedGeneration"] for c in lws["status"]["conditions"]} == {1}


def test_revision_key_labels_every_pod_and_old_revisions_go_once_the_update_is_done(cluster: KubeApiServer) -> None:
    _apply_lws(cluster, _lws())
    lws = cluster.wait_for(lambda: _available(cluster))
    key = revision_key(patch(lws))
    assert {p["metadata"]["labels"][REVISION_KEY] for p in cluster.store.list("pods", NS)} == {key}
    assert [r["metadata"]["name"] for r in cluster.store.list("controllerrevisions", NS)] == [f"k3-{key}-1"]
    _apply_lws(cluster, _lws(image="vllm/vllm-openai:kimi-k3-v2"))
    new_key = revision_key(patch(_lws_obj(cluster)))
    cluster.wait_for(
        lambda: [r["metadata"]["name"] for r in cluster.store.list("controllerrevisions", NS)] == [f"k3-{new_key}-2"]
    )
    assert {p["metadata"]["labels"][REVISION_KEY] for p in cluster.store.list("pods", NS)} == {new_key}


def test_available_and_progressing_are_exclusive_and_only_true_ones_are_added(cluster: KubeApiServer) -> None:
    cluster.controllers.kubelet.ready_delay = 0.5
    _apply_lws(cluster, _lws())
    progressing = cluster.wait_for(
        lambda: _condition(_lws_obj(cluster), "Progressing").get("status") == "True" and _lws_obj(cluster)
    )
    assert [c["type"] for c in progressing["status"]["conditions"]] == ["Progressing"]
    lws = cluster.wait_for(lambda: _available(cluster))
    assert {c["type"]: c["status"] for c in lws["status"]["conditions"]} == {
        "Progressing": "False",
        "Available": "True",
    }
    _apply_lws(cluster, _lws(image="vllm/vllm-openai:kimi-k3-v2"))
    rolling = cluster.wait_for(
        lambda: _condition(_lws_obj(cluster), "UpdateInProgress").get("status") == "True" and _lws_obj(cluster)
    )
    states = {c["type"]: c["status"] for c in rolling["status"]["conditions"]}
    assert states["Available"] == "False" and states["Progressing"] == "True"
    done = cluster.wait_for(lambda: _available(cluster))
    assert {c["type"]: c["status"] for c in done["status"]["conditions"]} == {
        "Progressing": "False",
        "Available": "True",
        "UpdateInProgress": "False",
    }


def test_deleting_a_worker_recreates_the_whole_group(cluster: KubeApiServer) -> None:
    _apply_lws(cluster, _lws())
    cluster.wait_for(lambda: _available(cluster))
    before = _uids(cluster)
    cluster.store.delete("pods", "k3-0-2", NS)

    def recreated() -> dict[str, str] | None:
        uids = _uids(cluster)
        fresh = len(uids) == 4 and all(uids.get(n) != before[n] for n in before)
        return uids if fresh and _available(cluster) else None

    after = cluster.wait_for(recreated)
    assert set(after) == set(before)
    reasons = [e["message"] for e in cluster.store.list("events", NS, field="reason=RecreateGroup")]
    assert reasons == ["Worker pod k3-0-2 failed, deleted leader pod k3-0 to recreate group 0"]


@pytest.mark.parametrize("policy", ["None", "Default"])
def test_none_and_default_recreate_nothing(cluster: KubeApiServer, policy: str) -> None:
    """`Default` is deprecated and behaves as `None` (the webhook turns it into None): a crash-looping worker
    restarts in place and a deleted worker is replaced alone."""
    cluster.controllers.kubelet.fail("CrashLoopBackOff", pod="^k3-0-1$", logs=["boom"])
    _apply_lws(cluster, _lws(restart=policy))

    def restarted_twice() -> dict[str, str] | None:
        pod = cluster.store.get("pods", "k3-0-1", NS) or {}
        statuses = pod.get("status", {}).get("containerStatuses") or [{}]
        uids = _uids(cluster)
        return uids if statuses[0].get("restartCount", 0) >= 2 and len(uids) == 4 else None

    before = cluster.wait_for(restarted_twice)
    cluster.store.delete("pods", "k3-0-2", NS)

    def replaced() -> dict[str, str] | None:
        uids = _uids(cluster)
        return uids if len(uids) == 4 and uids.get("k3-0-2") not in (None, before["k3-0-2"]) else None

    after = cluster.wait_for(replaced)
    assert {n: after[n] == before[n] for n in before} == {"k3-0": True, "k3-0-1": True, "k3-0-2": False, "k3-0-3": True}
    assert cluster.store.list("events", NS, field="reason=RecreateGroup") == []


def test_recreate_group_after_start_waits_while_a_pod_is_pending(cluster: KubeApiServer) -> None:
    cluster.controllers.kubelet.start_delay = 1.0
    cluster.controllers.kubelet.fail("CrashLoopBackOff", pod="^k3-0-1$", times=1, logs=["boom"])
    _apply_lws(cluster, _lws(restart="RecreateGroupAfterStart"))
    cluster.wait_for(lambda: _available(cluster))
    messages = [e["message"] for e in cluster.store.list("events", NS, field="reason=RecreateGroup")]
    assert messages == ["Worker pod k3-0-1 failed, deleted leader pod k3-0 to recreate group 0"]
