"""The EndpointSlice controller: ready endpoints follow the pods' Ready conditions, selector changes and deletions."""

from __future__ import annotations

from kubernetes import client, config

from tests.kubeapi.controllers.endpointslices import MANAGED_BY, ready_endpoints
from tests.kubeapi.server import KubeApiServer

NS = "default"


def _pod(kube: KubeApiServer, name: str, app: str) -> None:
    kube.store.create(
        "pods",
        {
            "metadata": {"name": name, "namespace": NS, "labels": {"app": app}},
            "spec": {
                "containers": [{"name": "c", "image": "img:1", "ports": [{"name": "http", "containerPort": 8000}]}]
            },
        },
        NS,
    )


def _service(kube: KubeApiServer, app: str) -> None:
    kube.store.create(
        "services",
        {
            "metadata": {"name": "api", "namespace": NS},
            "spec": {"selector": {"app": app}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
        },
        NS,
    )


def _slice(kube: KubeApiServer) -> dict:
    return kube.store.list("endpointslices", NS, label="kubernetes.io/service-name=api")[0]


def test_ready_endpoints_follow_pod_readiness_and_the_selector(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(count=2)
    _pod(kube, "blue", "blue")
    _pod(kube, "green", "green")
    _service(kube, "blue")
    kube.wait_for(lambda: ready_endpoints(kube.store, NS, "api") == ["blue"])
    endpoints = _slice(kube)
    assert endpoints["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == MANAGED_BY
    assert endpoints["ports"] == [{"name": "http", "port": 8000, "protocol": "TCP"}]
    assert endpoints["metadata"]["ownerReferences"][0]["kind"] == "Service"

    # A selector change moves the slice to the other pods in one write.
    kube.store.update("services", "api", NS, lambda s: s["spec"].update(selector={"app": "green"}))
    kube.wait_for(lambda: ready_endpoints(kube.store, NS, "api") == ["green"])

    # A terminating pod stays listed, not ready, terminating.
    kube.controllers.kubelet.termination_delay = 5.0
    kube.store.delete("pods", "green", NS)

    def terminating() -> dict | None:
        found = [e for e in _slice(kube)["endpoints"] if e["targetRef"]["name"] == "green"]
        return found[0] if found and found[0]["conditions"]["terminating"] else None

    assert kube.wait_for(terminating)["conditions"] == {"ready": False, "serving": True, "terminating": True}
    assert ready_endpoints(kube.store, NS, "api") == []


def test_a_service_without_selector_has_no_managed_slice_and_clients_can_list_them(kube: KubeApiServer) -> None:
    kube.store.create("services", {"metadata": {"name": "api", "namespace": NS}, "spec": {"ports": [{"port": 80}]}}, NS)
    _service_selecting = {
        "metadata": {"name": "other", "namespace": NS},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]},
    }
    kube.store.create("services", _service_selecting, NS)
    kube.wait_for(lambda: kube.store.list("endpointslices", NS, label="kubernetes.io/service-name=other"))
    assert kube.store.list("endpointslices", NS, label="kubernetes.io/service-name=api") == []
    api = client.DiscoveryV1Api(config.new_client_from_config(str(kube.kubeconfig)))
    names = [s.metadata.labels["kubernetes.io/service-name"] for s in api.list_namespaced_endpoint_slice(NS).items]
    assert names == ["other"]
