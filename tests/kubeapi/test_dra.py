"""Dynamic Resource Allocation as the cluster runs it for a ComputeDomain channel claim.

Upstream: kubernetes pkg/controller/resourceclaim/controller.go (ResourceClaims made from templates, event
FailedResourceClaimCreation), pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go (PreEnqueue holds a
pod whose claim is not created yet, writing no condition), NVIDIA/k8s-dra-driver-gpu (the ComputeDomain's channel
template; the kubelet plugin prepares a channel claim only once the node's IMEX daemon is ready).
"""

from __future__ import annotations

import pytest

from tests.kubeapi.server import KubeApiServer

pytestmark = pytest.mark.timeout(60)
NS = "default"


def _pod(template: str) -> dict:
    return {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "vllm"}],
            "resourceClaims": [{"name": "channel", "resourceClaimTemplateName": template}],
        },
    }


def _domain(template: str) -> dict:
    return {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "cd"},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": template}}},
    }


def test_a_pod_waits_unscheduled_and_without_a_condition_until_its_claim_template_exists(kube: KubeApiServer) -> None:
    kube.add_gb300_nodes(count=1)
    kube.store.create("pods", _pod("channel-tpl"), NS)
    events = kube.wait_for(lambda: kube.store.list("events", NS, field="reason=FailedResourceClaimCreation"))
    assert events[0]["message"] == (
        'PodResourceClaim channel: resource claim template "channel-tpl": '
        'resourceclaimtemplate.resource.k8s.io "channel-tpl" not found'
    )
    pod = kube.store.get("pods", "p", NS)
    assert pod["spec"].get("nodeName") is None and pod["status"].get("conditions") is None
    kube.store.create("resourceclaimtemplates", {"metadata": {"name": "channel-tpl"}, "spec": {"spec": {}}}, NS)
    pod = kube.wait_for(lambda: (p := kube.store.get("pods", "p", NS))["spec"].get("nodeName") and p)
    (status,) = pod["status"]["resourceClaimStatuses"]
    claim = kube.store.get("resourceclaims", status["resourceClaimName"], NS)
    assert status["name"] == "channel" and claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]


def test_a_channel_claim_waits_in_container_creating_until_the_imex_daemons_are_ready(kube: KubeApiServer) -> None:
    kube.add_crds()
    kube.add_gb300_nodes(count=1)
    kube.controllers.compute_domains.imex_ready = False
    kube.store.create("computedomains", _domain("channel-tpl"), NS)
    kube.wait_for(lambda: kube.store.get("resourceclaimtemplates", "channel-tpl", NS))
    kube.store.create("pods", _pod("channel-tpl"), NS)

    def waiting() -> str | None:
        statuses = (kube.store.get("pods", "p", NS).get("status") or {}).get("containerStatuses") or [{}]
        return statuses[0].get("state", {}).get("waiting", {}).get("reason")

    assert kube.wait_for(lambda: waiting() == "ContainerCreating")
    assert kube.store.get("computedomains", "cd", NS)["status"]["status"] == "NotReady"
    kube.controllers.compute_domains.imex_ready = True
    kube.wait_for(lambda: kube.store.get("pods", "p", NS)["status"].get("phase") == "Running")
    kube.wait_for(lambda: kube.store.get("computedomains", "cd", NS)["status"]["status"] == "Ready")


def _waiting(kube: KubeApiServer, name: str) -> str | None:
    statuses = (kube.store.get("pods", name, NS).get("status") or {}).get("containerStatuses") or [{}]
    return statuses[0].get("state", {}).get("waiting", {}).get("reason")


def test_a_node_serves_one_compute_domain_at_a_time(kube: KubeApiServer) -> None:
    """The kubelet plugin labels the node with its domain and refuses another domain's claim while it is held
    (k8s-dra-driver-gpu cmd/compute-domain-kubelet-plugin/computedomain.go AddNodeLabel)."""
    kube.add_crds()
    (node,) = kube.add_gb300_nodes(count=1)
    for domain in ("one", "two"):
        kube.store.create("computedomains", {**_domain(f"{domain}-tpl"), "metadata": {"name": domain}}, NS)
        kube.wait_for(lambda d=domain: kube.store.get("resourceclaimtemplates", f"{d}-tpl", NS))
    first = {**_pod("one-tpl"), "metadata": {"name": "first"}}
    first["spec"]["nodeName"] = node["metadata"]["name"]
    kube.store.create("pods", first, NS)
    kube.wait_for(lambda: kube.store.get("pods", "first", NS)["status"].get("phase") == "Running")
    second = {**_pod("two-tpl"), "metadata": {"name": "second"}}
    second["spec"] = {**second["spec"], "nodeName": node["metadata"]["name"]}
    kube.store.create("pods", second, NS)
    assert kube.wait_for(lambda: _waiting(kube, "second") == "ContainerCreating")
    kube.store.delete("pods", "first", NS)
    kube.wait_for(lambda: kube.store.get("pods", "second", NS)["status"].get("phase") == "Running")


def test_one_domain_over_two_cliques_indexes_each_clique_from_zero(kube: KubeApiServer) -> None:
    """Groups in two cliques share one ComputeDomain; each clique is its own IMEX domain, so DNS indices restart
    (cmd/compute-domain-daemon/cdstatus.go getNextAvailableIndex counts only nodes with the same cliqueID)."""
    kube.add_crds()
    nodes = kube.add_gb300_nodes(clique="c.1", count=2, prefix="a") + kube.add_gb300_nodes(
        clique="c.2", count=2, prefix="b"
    )
    kube.store.create("computedomains", _domain("tpl"), NS)
    kube.wait_for(lambda: kube.store.get("resourceclaimtemplates", "tpl", NS))
    for index, node in enumerate(nodes):
        pod = {**_pod("tpl"), "metadata": {"name": f"p{index}"}}
        pod["spec"] = {**pod["spec"], "nodeName": node["metadata"]["name"]}
        kube.store.create("pods", pod, NS)
    done = kube.wait_for(
        lambda: (
            (d := kube.store.get("computedomains", "cd", NS)).get("status", {}).get("status") == "Ready"
            and len(d["status"]["nodes"]) == 4
            and d
        )
    )
    assert sorted((e["cliqueID"], e["index"]) for e in done["status"]["nodes"]) == [
        ("c.1", 0),
        ("c.1", 1),
        ("c.2", 0),
        ("c.2", 1),
    ]
