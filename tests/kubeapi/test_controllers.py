"""The simulated controllers: LeaderWorkerSet groups, scheduling by clique and GPUs, kubelet failure modes, Jobs."""

from __future__ import annotations

import pytest
from kubernetes import client, config

from tests.kubeapi.server import KubeApiServer

NS = "default"
CLIQUE_A, CLIQUE_B = "0d3f.1", "0d3f.2"
HASH = "leaderworkerset.sigs.k8s.io/template-revision-hash"


def _lws(
    name: str = "k3",
    replicas: int = 1,
    size: int = 4,
    image: str = "vllm/vllm-openai:kimi-k3",
    gpus: int = 4,
    restart: str = "RecreateGroupOnPodRestart",
) -> dict:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": name,
            "namespace": NS,
            "annotations": {"leaderworkerset.sigs.k8s.io/exclusive-topology": "nvidia.com/gpu.clique"},
        },
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "restartPolicy": restart,
                "workerTemplate": {
                    "metadata": {"labels": {"app": "k3"}},
                    "spec": {
                        "containers": [
                            {"name": "vllm", "image": image, "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
                        ]
                    },
                },
            },
        },
    }


def _apply_lws(kube: KubeApiServer, body: dict) -> dict:
    return kube.store.apply("leaderworkersets", body, NS, manager="k3deploy")


def _condition(obj: dict | None, type_: str) -> dict:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions", []) if c["type"] == type_), {})


def _available(kube: KubeApiServer, name: str = "k3") -> dict | None:
    lws = kube.store.get("leaderworkersets", name, NS)
    ok = (
        _condition(lws, "Available").get("status") == "True"
        and lws["status"].get("observedGeneration") == lws["metadata"]["generation"]
    )
    return lws if ok else None


@pytest.fixture
def cluster(kube: KubeApiServer) -> KubeApiServer:
    """Two cliques of GB300 trays (4 + 2 nodes, 4 GPUs each) and the CRDs."""
    kube.add_crds()
    kube.add_gb300_nodes(clique=CLIQUE_A, count=4)
    kube.add_gb300_nodes(clique=CLIQUE_B, count=2)
    return kube


def test_lws_becomes_available_with_real_pod_names_labels_env_and_one_clique(cluster: KubeApiServer) -> None:
    _apply_lws(cluster, _lws())
    lws = cluster.wait_for(lambda: _available(cluster))
    assert {k: lws["status"][k] for k in ("replicas", "readyReplicas", "updatedReplicas")} == {
        "replicas": 1,
        "readyReplicas": 1,
        "updatedReplicas": 1,
    }
    assert _condition(lws, "Available")["reason"] == "AllGroupsReady"
    assert _condition(lws, "Progressing")["status"] == "False"
    pods = {p["metadata"]["name"]: p for p in cluster.store.list("pods", NS)}
    assert sorted(pods) == ["k3-0", "k3-0-1", "k3-0-2", "k3-0-3"]
    worker = pods["k3-0-2"]
    labels = worker["metadata"]["labels"]
    assert labels["leaderworkerset.sigs.k8s.io/name"] == "k3" and labels["app"] == "k3"
    assert (labels["leaderworkerset.sigs.k8s.io/group-index"], labels["leaderworkerset.sigs.k8s.io/worker-index"]) == (
        "0",
        "2",
    )
    env = {e["name"]: e["value"] for e in worker["spec"]["containers"][0]["env"]}
    assert env == {"LWS_LEADER_ADDRESS": "k3-0.k3.default", "LWS_GROUP_SIZE": "4", "LWS_WORKER_INDEX": "2"}
    assert worker["metadata"]["ownerReferences"][0]["uid"] == lws["metadata"]["uid"]
    nodes = {n["metadata"]["name"]: n for n in cluster.store.list("nodes")}
    cliques = {nodes[p["spec"]["nodeName"]]["metadata"]["labels"]["nvidia.com/gpu.clique"] for p in pods.values()}
    assert len(cliques) == 1
    assert all(_condition(p, "Ready")["status"] == "True" for p in pods.values())


def test_group_larger_than_a_clique_is_unschedulable_with_the_scheduler_message(kube: KubeApiServer) -> None:
    # The leader lands in the 2-node clique (first by name), so two workers fit nowhere.
    kube.add_crds()
    kube.add_gb300_nodes(clique=CLIQUE_A, count=2)
    kube.add_gb300_nodes(clique=CLIQUE_B, count=4)
    cluster = kube
    _apply_lws(cluster, _lws())
    expected = "0/6 nodes are available: 2 Insufficient nvidia.com/gpu, 4 node(s) didn't match pod affinity rules."

    def stuck() -> dict | None:
        pending = [p for p in cluster.store.list("pods", NS) if _condition(p, "PodScheduled").get("status") == "False"]
        return pending[0] if pending else None

    pod = cluster.wait_for(stuck)
    cond = _condition(pod, "PodScheduled")
    assert (cond["reason"], cond["message"]) == ("Unschedulable", expected)
    core = client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig)))
    events = core.list_namespaced_event(
        NS, field_selector=f"involvedObject.name={pod['metadata']['name']},reason=FailedScheduling"
    ).items
    assert [(e.type, e.message, e.source.component) for e in events] == [("Warning", expected, "default-scheduler")]
    lws = cluster.store.get("leaderworkersets", "k3", NS)
    # Only True conditions are ever added (lws pkg/controllers/leaderworkerset_controller.go setCondition).
    assert _condition(lws, "Available") == {} and _condition(lws, "Progressing")["status"] == "True"


def test_node_selector_mismatch_and_no_nodes_messages(kube: KubeApiServer) -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-GB300"},
            "containers": [{"name": "c", "image": "i"}],
        },
    }
    kube.store.create("pods", pod, NS)
    assert (
        kube.wait_for(lambda: _condition(kube.store.get("pods", "p", NS), "PodScheduled").get("message"))
        == "no nodes available to schedule pods"
    )
    kube.add_node("cpu-1", {}, {"cpu": "8", "memory": "32Gi", "pods": "110"})
    assert kube.wait_for(
        lambda: _condition(kube.store.get("pods", "p", NS), "PodScheduled").get("message").startswith("0/1")
    )
    kube.add_gb300_nodes(count=1)
    assert kube.wait_for(lambda: kube.store.get("pods", "p", NS)["spec"].get("nodeName")) == "gb300-02"
    assert [e["message"] for e in kube.store.list("events", NS, field="reason=FailedScheduling")] == [
        "no nodes available to schedule pods",
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
    ]


def test_image_pull_failure(cluster: KubeApiServer) -> None:
    cluster.controllers.kubelet.fail("ImagePullBackOff", image="does-not-exist")
    _apply_lws(cluster, _lws(image="vllm/does-not-exist:1"))

    def waiting() -> str | None:
        pod = cluster.store.get("pods", "k3-0", NS)
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or [{}]
        return statuses[0].get("state", {}).get("waiting", {}).get("reason")

    assert cluster.wait_for(lambda: waiting() == "ImagePullBackOff")
    reasons = {e["reason"] for e in cluster.store.list("events", NS, field="involvedObject.name=k3-0")}
    assert {"Pulling", "Failed", "BackOff"} <= reasons


def test_crash_loop_restarts_with_readable_logs(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(count=1)
    kube.controllers.kubelet.fail("CrashLoopBackOff", pod="^crash$", logs=["NCCL error: unhandled system error"])
    kube.store.create(
        "pods", {"metadata": {"name": "crash"}, "spec": {"containers": [{"name": "vllm", "image": "vllm"}]}}, NS
    )

    def restarts() -> int:
        status = kube.store.get("pods", "crash", NS).get("status", {})
        return (status.get("containerStatuses") or [{}])[0].get("restartCount", 0)

    kube.wait_for(lambda: restarts() >= 2)
    status = kube.store.get("pods", "crash", NS)["status"]["containerStatuses"][0]
    assert status["lastState"]["terminated"]["reason"] == "Error"
    core = client.CoreV1Api(config.new_client_from_config(str(kube.kubeconfig)))
    previous = core.read_namespaced_pod_log("crash", NS, previous=True)
    assert previous.splitlines()[-1] == "NCCL error: unhandled system error"


def test_oom_killed_container(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(count=1)
    kube.controllers.kubelet.fail("OOMKilled", pod="^oom$")
    kube.store.create("pods", {"metadata": {"name": "oom"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}, NS)

    def last() -> dict:
        statuses = kube.store.get("pods", "oom", NS).get("status", {}).get("containerStatuses") or [{}]
        return statuses[0].get("lastState", {}).get("terminated", {})

    terminated = kube.wait_for(last)
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)


def test_lws_recreates_a_group_after_a_restart_and_recovers(cluster: KubeApiServer) -> None:
    cluster.controllers.kubelet.fail("CrashLoopBackOff", pod="^k3-0-1$", times=1, logs=["boom"])
    _apply_lws(cluster, _lws())
    first = cluster.wait_for(lambda: cluster.store.get("pods", "k3-0-1", NS))["metadata"]["uid"]
    lws = cluster.wait_for(lambda: _available(cluster))
    assert cluster.store.get("pods", "k3-0-1", NS)["metadata"]["uid"] != first
    about = f"involvedObject.uid={lws['metadata']['uid']}"
    reasons = [e["reason"] for e in cluster.store.list("events", NS, field=about)]
    assert "RecreateGroup" in reasons


def test_template_change_rolls_the_group_and_deleting_the_lws_collects_its_pods(cluster: KubeApiServer) -> None:
    _apply_lws(cluster, _lws())
    cluster.wait_for(lambda: _available(cluster))
    old_hash = cluster.store.get("pods", "k3-0", NS)["metadata"]["labels"][HASH]
    _apply_lws(cluster, _lws(image="vllm/vllm-openai:kimi-k3-v2"))
    cluster.wait_for(
        lambda: _condition(cluster.store.get("leaderworkersets", "k3", NS), "UpdateInProgress").get("status") == "True"
    )
    lws = cluster.wait_for(
        lambda: (
            _available(cluster)
            if not any(p["metadata"]["labels"][HASH] == old_hash for p in cluster.store.list("pods", NS))
            else None
        )
    )
    assert lws["status"]["updatedReplicas"] == 1 and lws["metadata"]["generation"] == 2
    assert _condition(lws, "UpdateInProgress")["status"] == "False"
    images = {p["spec"]["containers"][0]["image"] for p in cluster.store.list("pods", NS)}
    assert images == {"vllm/vllm-openai:kimi-k3-v2"}
    cluster.store.delete("leaderworkersets", "k3", NS)
    cluster.wait_for(lambda: not cluster.store.list("pods", NS) and not cluster.store.list("services", NS))


def _job(name: str, backoff: int = 0) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": backoff,
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "prefetch", "image": "hf-prefetch:1"}]}
            },
        },
    }


def test_job_completes(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(count=1)
    kube.controllers.fail_job("bad")
    kube.store.create("jobs", _job("ok"), NS)
    job = kube.wait_for(
        lambda: (
            _condition(kube.store.get("jobs", "ok", NS), "Complete").get("status") == "True"
            and kube.store.get("jobs", "ok", NS)
        )
    )
    assert (job["status"]["succeeded"], job["status"]["active"]) == (1, 0)
    pods = kube.store.list("pods", NS, label="job-name=ok")
    assert len(pods) == 1 and pods[0]["status"]["phase"] == "Succeeded"


def test_job_fails_after_the_backoff_limit_with_logs(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(count=1)
    kube.controllers.fail_job("bad", logs=["401 Client Error: Unauthorized"])
    kube.store.create("jobs", _job("bad", backoff=1), NS)
    job = kube.wait_for(
        lambda: (
            _condition(kube.store.get("jobs", "bad", NS), "Failed").get("status") == "True"
            and kube.store.get("jobs", "bad", NS)
        )
    )
    assert _condition(job, "Failed")["reason"] == "BackoffLimitExceeded"
    assert job["status"]["failed"] == 2
    pod = kube.store.list("pods", NS, label="job-name=bad")[0]["metadata"]["name"]
    core = client.CoreV1Api(config.new_client_from_config(str(kube.kubeconfig)))
    assert core.read_namespaced_pod_log(pod, NS).splitlines()[-1] == "401 Client Error: Unauthorized"


def test_claims_bind_and_pods_wait_for_them(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(count=1)
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "volumes": [{"name": "w", "persistentVolumeClaim": {"claimName": "weights"}}],
        },
    }
    kube.store.create("pods", pod, NS)
    assert (
        kube.wait_for(lambda: _condition(kube.store.get("pods", "p", NS), "PodScheduled").get("message"))
        == '0/1 nodes are available: persistentvolumeclaim "weights" not found.'
    )
    kube.store.create(
        "persistentvolumeclaims",
        {
            "metadata": {"name": "weights"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "shared-rwx",
                "resources": {"requests": {"storage": "3000Gi"}},
            },
        },
        NS,
    )
    unbound = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    assert kube.wait_for(lambda: _condition(kube.store.get("pods", "p", NS), "PodScheduled").get("message") == unbound)
    kube.add_storage_class("shared-rwx")
    claim = kube.wait_for(
        lambda: (
            kube.store.get("persistentvolumeclaims", "weights", NS)["status"]["phase"] == "Bound"
            and kube.store.get("persistentvolumeclaims", "weights", NS)
        )
    )
    assert claim["status"]["capacity"] == {"storage": "3000Gi"}
    assert kube.wait_for(lambda: kube.store.get("pods", "p", NS)["spec"].get("nodeName")) == "gb300-01"


def test_compute_domain_creates_its_claim_template_and_turns_ready(cluster: KubeApiServer) -> None:
    cluster.store.create(
        "computedomains",
        {
            "metadata": {"name": "k3-cd"},
            "spec": {"numNodes": 4, "channel": {"resourceClaimTemplate": {"name": "k3-channel"}}},
        },
        NS,
    )
    cluster.wait_for(lambda: cluster.store.get("resourceclaimtemplates", "k3-channel", NS))
    assert (
        cluster.wait_for(lambda: (cluster.store.get("computedomains", "k3-cd", NS).get("status") or {}).get("status"))
        == "NotReady"
    )
    body = _lws()
    spec = body["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    spec["resourceClaims"] = [{"name": "channel", "resourceClaimTemplateName": "k3-channel"}]
    _apply_lws(cluster, body)
    domain = cluster.wait_for(
        lambda: (
            cluster.store.get("computedomains", "k3-cd", NS)["status"]["status"] == "Ready"
            and cluster.store.get("computedomains", "k3-cd", NS)
        )
    )
    assert sorted(n["name"] for n in domain["status"]["nodes"]) == ["gb300-01", "gb300-02", "gb300-03", "gb300-04"]


def test_when_times_the_change_that_made_the_lws_available(cluster: KubeApiServer) -> None:
    assert cluster.when("leaderworkersets", "k3", lambda o: True) is None
    _apply_lws(cluster, _lws())
    cluster.wait_for(lambda: _available(cluster))
    became = cluster.when("leaderworkersets", "k3", lambda o: _condition(o, "Available").get("status") == "True")
    applied = cluster.when("leaderworkersets", "k3", lambda o: True)
    assert applied is not None and became is not None and applied < became
