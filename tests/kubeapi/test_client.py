"""The official kubernetes client against the test API server: discovery, CRUD, patches, selectors, status,
logs, events, access reviews and garbage collection.
"""

from __future__ import annotations

import pytest
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException

from tests.kubeapi.server import KubeApiServer


@pytest.fixture
def api(kube: KubeApiServer) -> client.ApiClient:
    """An ApiClient loaded from the fixture's kubeconfig, as k3deploy loads one."""
    return config.new_client_from_config(str(kube.kubeconfig))


def _pod(name: str, labels: dict[str, str] | None = None, image: str = "busybox:1.36") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": image}]},
    }


def test_version_and_discovery_follow_set_version(kube: KubeApiServer, api: client.ApiClient) -> None:
    assert client.VersionApi(api).get_code().git_version == "v1.34.1"
    groups = {g.name: g.preferred_version.version for g in client.ApisApi(api).get_api_versions().groups}
    assert groups["apps"] == "v1" and groups["resource.k8s.io"] == "v1"
    assert "leaderworkerset.x-k8s.io" not in groups
    kube.set_version("v1.33.2")
    assert client.VersionApi(api).get_code().minor == "33"
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert "resource.k8s.io" not in groups


def test_crds_appear_in_discovery_and_dynamic_client_uses_them(kube: KubeApiServer, api: client.ApiClient) -> None:
    kube.add_crds()
    dyn = dynamic.DynamicClient(api)
    lws = dyn.resources.get(api_version="leaderworkerset.x-k8s.io/v1", kind="LeaderWorkerSet")
    assert lws.namespaced and lws.name == "leaderworkersets"
    cd = dyn.resources.get(api_version="resource.nvidia.com/v1beta1", kind="ComputeDomain")
    sm = dyn.resources.get(api_version="monitoring.coreos.com/v1", kind="ServiceMonitor")
    created = cd.create(
        body={
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "ComputeDomain",
            "metadata": {"name": "k3-cd"},
            "spec": {"numNodes": 4, "channel": {"resourceClaimTemplate": {"name": "k3-channel"}}},
        },
        namespace="default",
    )
    assert created.metadata.generation == 1 and created.spec.numNodes == 4
    assert [o.metadata.name for o in cd.get(namespace="default").items] == ["k3-cd"]
    assert sm.get(namespace="default").items == []


def test_create_get_replace_delete_with_resource_versions(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    assert cm.metadata.uid and cm.metadata.creation_timestamp
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {}})
    assert exc.value.status == 409 and '"AlreadyExists"' in exc.value.body
    cm.data = {"a": "2"}
    replaced = core.replace_namespaced_config_map("c", "default", cm)
    assert int(replaced.metadata.resource_version) > int(cm.metadata.resource_version)
    cm.data = {"a": "3"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("c", "default", cm)
    assert exc.value.status == 409 and "the object has been modified" in exc.value.body
    core.delete_namespaced_config_map("c", "default")
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("c", "default")
    assert exc.value.status == 404 and 'configmaps \\"c\\" not found' in exc.value.body


def test_namespaced_create_needs_the_namespace(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_secret("k3", {"metadata": {"name": "hf"}, "stringData": {"token": "x"}})
    assert exc.value.status == 404 and 'namespaces \\"k3\\" not found' in exc.value.body
    core.create_namespace({"metadata": {"name": "k3"}})
    core.create_namespaced_secret("k3", {"metadata": {"name": "hf"}, "stringData": {"token": "x"}})
    assert [s.metadata.name for s in core.list_namespaced_secret("k3").items] == ["hf"]


def test_generation_moves_on_spec_changes_only(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    body = {
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }
    dep = apps.create_namespaced_deployment("default", body)
    assert dep.metadata.generation == 1
    dep = apps.patch_namespaced_deployment("d", "default", {"metadata": {"labels": {"x": "y"}}})
    assert dep.metadata.generation == 1
    dep = apps.patch_namespaced_deployment("d", "default", {"spec": {"replicas": 3}})
    assert dep.metadata.generation == 2 and dep.spec.replicas == 3
    status = apps.patch_namespaced_deployment_status("d", "default", {"status": {"readyReplicas": 3}})
    assert status.metadata.generation == 2 and status.status.ready_replicas == 3
    # A write to the main resource cannot change status.
    dep = apps.patch_namespaced_deployment("d", "default", {"status": {"readyReplicas": 0}})
    assert dep.status.ready_replicas == 3


def test_merge_patch_removes_with_null_and_json_patch_applies(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}})
    cm = core.patch_namespaced_config_map("c", "default", {"metadata": {"labels": {"a": None}}})
    assert cm.metadata.labels == {"b": "2"}
    cm = core.patch_namespaced_config_map("c", "default", [{"op": "add", "path": "/data", "value": {"k": "v"}}])
    assert cm.data == {"k": "v"}


def test_label_and_field_selectors(kube: KubeApiServer, api: client.ApiClient) -> None:
    kube.controllers.disable()
    core = client.CoreV1Api(api)
    for name, labels in (
        ("a", {"app": "k3", "role": "leader"}),
        ("b", {"app": "k3", "role": "worker"}),
        ("c", {"app": "other"}),
    ):
        core.create_namespaced_pod("default", _pod(name, labels))

    def names(**kw: str) -> list[str]:
        return [p.metadata.name for p in core.list_namespaced_pod("default", **kw).items]

    assert names(label_selector="app=k3") == ["a", "b"]
    assert names(label_selector="app=k3,role!=leader") == ["b"]
    assert names(label_selector="role in (leader, worker)") == ["a", "b"]
    assert names(label_selector="app notin (k3)") == ["c"]
    assert names(label_selector="role") == ["a", "b"]
    assert names(label_selector="!role") == ["c"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="status.phase=Pending,metadata.name!=a") == ["b", "c"]
    with pytest.raises(ApiException) as exc:
        core.list_namespaced_pod("default", field_selector="spec.bogus=1")
    assert exc.value.status == 400
    listing = core.list_namespaced_pod("default")
    assert int(listing.metadata.resource_version) == kube.store.rv


def test_pod_logs_with_tail_and_container(kube: KubeApiServer, api: client.ApiClient) -> None:
    kube.controllers.disable()
    core = client.CoreV1Api(api)
    core.create_namespaced_pod("default", _pod("p"))
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_pod_log("p", "default")
    assert exc.value.status == 400 and "is waiting to start: ContainerCreating" in exc.value.body
    kube.store.logs[("default", "p", "main")] = ["one", "two", "three"]
    assert core.read_namespaced_pod_log("p", "default") == "one\ntwo\nthree\n"
    assert core.read_namespaced_pod_log("p", "default", tail_lines=2, container="main") == "two\nthree\n"


def test_events_select_by_involved_object(kube: KubeApiServer, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    for name, reason in (("a", "BackOff"), ("b", "Pulled")):
        core.create_namespaced_event(
            "default",
            {
                "metadata": {"name": f"{name}.1"},
                "involvedObject": {"kind": "Pod", "name": name, "namespace": "default"},
                "reason": reason,
                "message": "m",
                "type": "Normal",
            },
        )
    found = core.list_namespaced_event("default", field_selector="involvedObject.name=a,involvedObject.kind=Pod")
    assert [e.reason for e in found.items] == ["BackOff"]


def test_self_subject_access_review_answers_from_the_deny_list(kube: KubeApiServer, api: client.ApiClient) -> None:
    authz = client.AuthorizationV1Api(api)
    kube.access.deny(verb="create", resource="leaderworkersets", group="leaderworkerset.x-k8s.io")

    def allowed(verb: str, resource: str, group: str) -> bool:
        review = authz.create_self_subject_access_review(
            {
                "spec": {
                    "resourceAttributes": {"verb": verb, "resource": resource, "group": group, "namespace": "default"}
                }
            }
        )
        return review.status.allowed

    assert allowed("create", "leaderworkersets", "leaderworkerset.x-k8s.io") is False
    assert allowed("get", "leaderworkersets", "leaderworkerset.x-k8s.io") is True
    assert allowed("create", "pods", "") is True
    kube.access.deny(verb="list", resource="nodes", group="")
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api).list_node()
    assert exc.value.status == 403
    assert 'User \\"test-user\\" cannot list resource \\"nodes\\"' in exc.value.body


def test_nodes_carry_gb300_labels_and_allocatable(kube: KubeApiServer, api: client.ApiClient) -> None:
    kube.add_gb300_nodes(clique="aaaa.1", count=2, driver="580.95.05")
    nodes = client.CoreV1Api(api).list_node(label_selector="nvidia.com/gpu.clique=aaaa.1").items
    assert [n.metadata.name for n in nodes] == ["gb300-01", "gb300-02"]
    labels = nodes[0].metadata.labels
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-GB300" and labels["kubernetes.io/arch"] == "arm64"
    assert labels["nvidia.com/gpu.memory"] == "284208" and labels["nvidia.com/cuda.driver-version.major"] == "580"
    assert nodes[0].status.allocatable["nvidia.com/gpu"] == "4"


def test_delete_collects_dependents_and_namespaces_take_their_objects(
    kube: KubeApiServer, api: client.ApiClient
) -> None:
    kube.controllers.disable()
    core = client.CoreV1Api(api)
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map("default", {"metadata": {"name": "child", "ownerReferences": [ref]}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "free"}})
    core.delete_namespaced_config_map("owner", "default")
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["free"]
    core.create_namespace({"metadata": {"name": "gone"}})
    core.create_namespaced_config_map("gone", {"metadata": {"name": "x"}})
    core.delete_namespace("gone")
    # Terminating until the namespace controller (switched off here) empties it: tests/kubeapi/test_lifecycle.py.
    assert kube.store.get("namespaces", "gone")["status"]["phase"] == "Terminating"


def test_dry_run_writes_nothing(kube: KubeApiServer, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    rv = kube.store.rv
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}}, dry_run="All")
    assert kube.store.get("configmaps", "c", "default") is None and kube.store.rv == rv
