"""A real kubelet node (tests/realk8s/realnode.py) runs pods for real: init containers in order, probes executed by
the kubelet, volumes mounted, logs served through kube-apiserver; and a node started and stopped leaves this machine
as it found it."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.realk8s import hoststate
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.nodefiles import KUBELET_SYSCTLS
from tests.realk8s.plane import Plane
from tests.realk8s.realnode import REAL_NODE_KEY, RealNode
from tests.realk8s.standins import STANDIN_IMAGES, container, pod

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]

#: How long a pod of busybox containers may take to run on a real node (measured: ~1 s; the machine is shared).
POD_START_S = 90.0


def _phase(plane: Plane, namespace: str, name: str, *phases: str) -> dict[str, Any] | None:
    live = plane.api.get(resource_path("v1", "pods", namespace, name))
    return live if live.get("status", {}).get("phase") in phases else None


def _events(plane: Plane, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = plane.api.get(f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={name}")
    return listed.get("items", [])


def test_the_real_node_is_tainted_labelled_and_reached_at_loopback(realk8s: Plane, real_node: RealNode) -> None:
    node = realk8s.api.get(f"/api/v1/nodes/{real_node.name}")
    assert node["metadata"]["labels"][REAL_NODE_KEY] == "true"
    assert [(t["key"], t["effect"]) for t in node["spec"]["taints"]] == [(REAL_NODE_KEY, "NoSchedule")]
    assert node["status"]["addresses"][0] == {"type": "InternalIP", "address": "127.0.0.1"}
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == real_node.kubelet_port
    assert node["status"]["nodeInfo"]["kubeletVersion"] == realk8s.binaries.versions["K8S_VERSION"]
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://1.6.")


def test_a_pod_runs_its_init_containers_in_order_and_its_probes(
    realk8s: Plane, real_node: RealNode, namespace: str
) -> None:
    serve = "echo ready > /www/healthz; exec httpd -f -p 8080 -h /www"
    spec = {
        "initContainers": [
            container(
                "first", "date +%s%N > /work/first; sleep 1", volumeMounts=[{"name": "work", "mountPath": "/work"}]
            ),
            container(
                "second",
                "test -f /work/first && date +%s%N > /work/second && cp /work/first /work/second /www/",
                volumeMounts=[{"name": "work", "mountPath": "/work"}, {"name": "www", "mountPath": "/www"}],
            ),
        ],
        "containers": [
            container(
                "web",
                serve,
                ports=[{"containerPort": 8080}],
                volumeMounts=[{"name": "www", "mountPath": "/www"}],
                readinessProbe={"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1},
                livenessProbe={"exec": {"command": ["cat", "/www/healthz"]}, "periodSeconds": 1},
            )
        ],
        "volumes": [{"name": "work", "emptyDir": {}}, {"name": "www", "emptyDir": {}}],
    }
    realk8s.api.create(resource_path("v1", "pods", namespace), pod("web", spec))

    def ready() -> dict[str, Any] | None:
        live = _phase(realk8s, namespace, "web", "Running")
        conditions = {c["type"]: c["status"] for c in (live or {}).get("status", {}).get("conditions", [])}
        return live if conditions.get("Ready") == "True" else None

    live = wait_until("the pod to be Ready", ready, POD_START_S)
    assert live["spec"]["nodeName"] == real_node.name
    inits = live["status"]["initContainerStatuses"]
    assert [(s["name"], s["state"]["terminated"]["exitCode"]) for s in inits] == [("first", 0), ("second", 0)]
    first, second = (inits[i]["state"]["terminated"] for i in (0, 1))
    assert first["finishedAt"] <= second["startedAt"]
    # The pod's IP is on the node's bridge, and the kubelet's readiness probe reached it there.
    assert live["status"]["podIP"].startswith("10.88.0.")
    # Logs come from the kubelet, through kube-apiserver and the relay to it.
    log = realk8s.api.request("GET", resource_path("v1", "pods", namespace, "web") + "/log?container=second")
    assert log.status_code == 200, log.text
    reasons = {e["reason"] for e in _events(realk8s, namespace, "web")}
    assert {"Scheduled", "Pulled", "Created", "Started"} <= reasons
    assert "Pulling" not in reasons  # the local image was used, nothing pulled


def test_a_failing_probe_is_reported_by_the_kubelet(realk8s: Plane, real_node: RealNode, namespace: str) -> None:
    spec = {
        "containers": [
            container(
                "c",
                "exec sleep 3600",
                readinessProbe={"exec": {"command": ["cat", "/nonexistent"]}, "periodSeconds": 1},
            )
        ],
        "terminationGracePeriodSeconds": 0,
    }
    realk8s.api.create(resource_path("v1", "pods", namespace), pod("unready", spec))

    def unhealthy() -> dict[str, Any] | None:
        found = [e for e in _events(realk8s, namespace, "unready") if e["reason"] == "Unhealthy"]
        return found[0] if found else None

    event = wait_until("the kubelet's Unhealthy event", unhealthy, POD_START_S)
    assert event["message"].startswith("Readiness probe failed")
    assert event["source"]["component"] == "kubelet"
    live = realk8s.api.get(resource_path("v1", "pods", namespace, "unready"))
    assert {c["type"]: c["status"] for c in live["status"]["conditions"]}["Ready"] == "False"


def test_a_node_started_and_stopped_leaves_the_machine_as_it_found_it(realk8s: Plane, namespace: str) -> None:
    before = hoststate.snapshot()
    node = realk8s.add_real_node("real-probe", images=STANDIN_IMAGES)
    try:
        during = hoststate.snapshot()
        spec = {
            "containers": [container("c", "echo ok > /tmp/ok; exec sleep 3600")],
            "terminationGracePeriodSeconds": 0,
        }
        spec["nodeName"] = node.name
        realk8s.api.create(resource_path("v1", "pods", namespace), pod("probe", spec))
        wait_until("the pod to run", lambda: _phase(realk8s, namespace, "probe", "Running"), POD_START_S)
        # They were set, where the node runs: the bridge plugin's ip_forward in its network namespace, the kubelet's
        # values in the sysctl files faked in its mount namespace (so the host check below can fail, not pass idly).
        assert node.process is not None and node.process.pid is not None
        pid = node.process.pid
        inside = {key: _read_in(pid, "mount", key) for key in KUBELET_SYSCTLS}
        inside["net/ipv4/ip_forward"] = _read_in(pid, "net", "net/ipv4/ip_forward")
    finally:
        node.stop()
        realk8s.real_nodes.remove(node)
    after = hoststate.snapshot()
    # While it ran, the kubelet's sysctls and the bridge's ip_forward were set only inside the node's namespaces.
    assert during["sysctls"] == before["sysctls"]
    assert during["directories"] == before["directories"]
    assert during["mounts"] == before["mounts"]
    assert during["links"] == before["links"]
    assert after == before
    assert not node.dir.exists()
    assert inside["net/ipv4/ip_forward"] == "1"
    assert {k: inside[k] for k in KUBELET_SYSCTLS} == KUBELET_SYSCTLS


def _read_in(pid: int, namespace: str, key: str) -> str:
    """The sysctl `key` as read in the `namespace` (net or mount) of process `pid`."""
    done = subprocess.run(
        [
            "nsenter",
            f"--{namespace}=/proc/{pid}/ns/{'mnt' if namespace == 'mount' else namespace}",
            "cat",
            f"/proc/sys/{key}",
        ],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return done.stdout.strip()


def test_gpus_are_advertised_and_allocated_by_the_kubelets_device_manager(
    realk8s: Plane, real_node: RealNode, namespace: str
) -> None:
    def advertised() -> str | None:
        node = realk8s.api.get(f"/api/v1/nodes/{real_node.name}")
        return node["status"].get("allocatable", {}).get("nvidia.com/gpu")

    assert wait_until("the device plugin's GPUs on the node", advertised, POD_START_S) == "4"
    gpus = {"nvidia.com/gpu": "4"}
    spec = {
        "containers": [
            container(
                "c", "echo $NVIDIA_VISIBLE_DEVICES; exec sleep 3600", resources={"limits": gpus, "requests": gpus}
            )
        ],
        "terminationGracePeriodSeconds": 0,
    }
    realk8s.api.create(resource_path("v1", "pods", namespace), pod("gpus", spec))
    wait_until("the pod to run", lambda: _phase(realk8s, namespace, "gpus", "Running"), POD_START_S)
    logs = resource_path("v1", "pods", namespace, "gpus") + "/log"
    log = wait_until("the pod's log", lambda: realk8s.api.request("GET", logs).text.strip(), POD_START_S)
    assert sorted(log.split(",")) == [f"GPU-realk8s-{i}" for i in range(4)]
    # All four are taken: a second pod bound to the node past the scheduler is refused by the kubelet's admission.
    one = {"nvidia.com/gpu": "1"}
    blocked = {"containers": [container("c", "true", resources={"limits": one, "requests": one})]}
    realk8s.api.create(resource_path("v1", "pods", namespace), pod("more", {**blocked, "nodeName": real_node.name}))
    refused = wait_until(
        "the kubelet to refuse the pod", lambda: _phase(realk8s, namespace, "more", "Failed"), POD_START_S
    )
    assert refused["status"]["reason"] == "UnexpectedAdmissionError"


def test_the_leader_address_resolves_through_cluster_dns(realk8s: Plane, real_node: RealNode, namespace: str) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "grp"},
        "spec": {"clusterIP": "None", "selector": {"app": "grp"}},
    }
    realk8s.api.create(resource_path("v1", "services", namespace), service)
    leader = pod("grp-0", {"containers": [container("c", "exec sleep 3600")], "terminationGracePeriodSeconds": 0})
    leader["metadata"]["labels"] = {"app": "grp"}
    leader["spec"] |= {"hostname": "grp-0", "subdomain": "grp"}
    realk8s.api.create(resource_path("v1", "pods", namespace), leader)
    live = wait_until("the leader to run", lambda: _phase(realk8s, namespace, "grp-0", "Running"), POD_START_S)
    # LWS_LEADER_ADDRESS is <lws>-<group>.<lws>.<namespace>: the pod's resolver completes it with the kubelet's
    # search path (busybox's nslookup does not, so it is given the completed name).
    lookup = (
        f"cat /etc/resolv.conf; nslookup grp-0.grp.{namespace}.svc.cluster.local; "
        f"nslookup nowhere.grp.{namespace}.svc.cluster.local || echo NX"
    )
    client = pod("client", {"containers": [container("c", lookup)], "restartPolicy": "Never"})
    realk8s.api.create(resource_path("v1", "pods", namespace), client)
    wait_until("the lookup to finish", lambda: _phase(realk8s, namespace, "client", "Succeeded"), POD_START_S)
    log = realk8s.api.request("GET", resource_path("v1", "pods", namespace, "client") + "/log").text
    assert f"search {namespace}.svc.cluster.local svc.cluster.local cluster.local" in log, log
    assert "nameserver 10.88.0.1" in log, log
    assert f"Address: {live['status']['podIP']}" in log, log
    assert log.rstrip().endswith("NX"), log
