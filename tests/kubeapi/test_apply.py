"""Server-side apply through the official client: create, field ownership, conflicts and force, removal of
fields a manager stops sending, dry run, no-op applies and the status subresource.
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException

from tests.kubeapi import crds
from tests.kubeapi.server import KubeApiServer

LWS_API = "leaderworkerset.x-k8s.io/v1"


def _lws(replicas: int = 1, labels: dict[str, str] | None = None, image: str = "vllm:1") -> dict:
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "k3", "namespace": "default", "labels": labels or {"app": "k3"}},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": 2,
                "workerTemplate": {"spec": {"containers": [{"name": "vllm", "image": image}]}},
            },
        },
    }


@pytest.fixture
def lws(kube: KubeApiServer) -> dynamic.Resource:
    """The LeaderWorkerSet resource of a DynamicClient (controllers off: only the test writes)."""
    kube.controllers.disable()
    kube.add_crds()
    dyn = dynamic.DynamicClient(config.new_client_from_config(str(kube.kubeconfig)))
    return dyn.resources.get(api_version=LWS_API, kind="LeaderWorkerSet")


def _apply(
    lws: dynamic.Resource, body: dict, manager: str = "k3deploy", force: bool = False, **kw: object
) -> dynamic.ResourceInstance:
    return lws.client.server_side_apply(lws, body=body, field_manager=manager, force_conflicts=force, **kw)


def _owned(obj: object, manager: str) -> dict:
    entries = [e for e in obj.to_dict()["metadata"]["managedFields"] if e["manager"] == manager]
    return entries[0]["fieldsV1"] if entries else {}


def test_apply_creates_then_is_a_no_op_when_unchanged(lws: dynamic.Resource) -> None:
    created = _apply(lws, _lws())
    assert created.metadata.generation == 1
    fields = _owned(created, "k3deploy")
    assert fields["f:spec"]["f:replicas"] == {} and fields["f:metadata"]["f:labels"]["f:app"] == {}
    again = _apply(lws, _lws())
    assert again.metadata.resourceVersion == created.metadata.resourceVersion
    assert again.metadata.generation == 1
    changed = _apply(lws, _lws(replicas=2))
    assert changed.metadata.generation == 2
    assert int(changed.metadata.resourceVersion) > int(created.metadata.resourceVersion)


def test_conflict_names_the_field_and_the_other_manager_until_forced(lws: dynamic.Resource) -> None:
    _apply(lws, _lws(replicas=1))
    """Update managers are named with `using <apiVersion> at <time>` (apimachinery
    pkg/util/managedfields/internal/conflict.go printManager)."""
    edited = lws.patch(
        name="k3",
        namespace="default",
        body={"spec": {"replicas": 3}},
        content_type="application/merge-patch+json",
        field_manager="kubectl-edit",
    )
    at = next(e["time"] for e in edited.to_dict()["metadata"]["managedFields"] if e["manager"] == "kubectl-edit")
    with pytest.raises(ApiException) as exc:
        _apply(lws, _lws(replicas=1))
    assert exc.value.status == 409
    status = json.loads(exc.value.body)
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using '
        f"leaderworkerset.x-k8s.io/v1 at {at}: .spec.replicas"
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "field": ".spec.replicas",
            "message": f'conflict with "kubectl-edit" using leaderworkerset.x-k8s.io/v1 at {at}',
        }
    ]
    # Applying the value the other manager set is no conflict (shared ownership).
    _apply(lws, _lws(replicas=3))
    forced = _apply(lws, _lws(replicas=1), force=True)
    assert forced.spec.replicas == 1
    assert "f:replicas" not in _owned(forced, "kubectl-edit").get("f:spec", {})


def test_fields_a_manager_stops_sending_are_removed_unless_someone_else_owns_them(lws: dynamic.Resource) -> None:
    _apply(lws, _lws(labels={"app": "k3", "tier": "serve"}))
    _apply(lws, _lws(labels={"app": "k3", "team": "infra"}), manager="other")
    out = _apply(lws, _lws(labels={"app": "k3"}))
    assert out.to_dict()["metadata"]["labels"] == {"app": "k3", "team": "infra"}
    out = _apply(lws, _lws(labels={}), manager="other")
    assert out.to_dict()["metadata"]["labels"] == {"app": "k3"}


def test_dry_run_apply_returns_the_result_without_storing_it(kube: KubeApiServer, lws: dynamic.Resource) -> None:
    preview = _apply(lws, _lws(), dry_run="All")
    assert preview.spec.replicas == 1
    assert kube.store.get("leaderworkersets", "k3", "default") is None
    _apply(lws, _lws())
    rv = kube.store.rv
    preview = _apply(lws, _lws(replicas=5), dry_run="All")
    assert preview.spec.replicas == 5 and preview.metadata.generation == 2
    assert kube.store.get("leaderworkersets", "k3", "default")["spec"]["replicas"] == 1 and kube.store.rv == rv


def test_status_subresource_apply_and_put(lws: dynamic.Resource) -> None:
    _apply(lws, _lws())
    status_body = {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "k3", "namespace": "default"},
        "status": {"readyReplicas": 1},
    }
    out = lws.status.server_side_apply(body=status_body, name="k3", namespace="default", field_manager="ctrl")
    assert out.status.readyReplicas == 1 and out.metadata.generation == 1
    # Applying the main resource with a status leaves status alone.
    body = _lws()
    body["status"] = {"readyReplicas": 9}
    assert _apply(lws, body).status.readyReplicas == 1
    live = lws.get(name="k3", namespace="default").to_dict()
    live["status"] = {"readyReplicas": 2}
    assert lws.status.replace(body=live, name="k3", namespace="default").status["readyReplicas"] == 2


def test_core_api_apply_via_patch_content_type(kube: KubeApiServer) -> None:
    core = client.CoreV1Api(config.new_client_from_config(str(kube.kubeconfig)))
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "rev", "namespace": "default"},
        "data": {"rev": "1"},
    }
    cm = core.patch_namespaced_config_map(
        "rev", "default", body, field_manager="k3deploy", _content_type="application/apply-patch+yaml"
    )
    assert cm.data == {"rev": "1"}
    entry = cm.metadata.managed_fields[0]
    assert (entry.manager, entry.operation) == ("k3deploy", "Apply")
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_config_map("rev", "default", body, _content_type="application/apply-patch+yaml")
    assert exc.value.status == 400 and "fieldManager" in exc.value.body


def test_custom_objects_api_apply_and_list(kube: KubeApiServer, lws: dynamic.Resource) -> None:
    custom = client.CustomObjectsApi(config.new_client_from_config(str(kube.kubeconfig)))
    custom.patch_namespaced_custom_object(
        "leaderworkerset.x-k8s.io",
        "v1",
        "default",
        "leaderworkersets",
        "k3",
        _lws(),
        field_manager="k3deploy",
        _content_type="application/apply-patch+yaml",
    )
    listed = custom.list_namespaced_custom_object(
        "leaderworkerset.x-k8s.io", "v1", "default", "leaderworkersets", label_selector="app=k3"
    )
    assert [o["metadata"]["name"] for o in listed["items"]] == ["k3"]
    custom.delete_namespaced_custom_object("leaderworkerset.x-k8s.io", "v1", "default", "leaderworkersets", "k3")
    assert kube.store.get("leaderworkersets", "k3", "default") is None


def test_several_conflicts_are_listed_by_manager_and_apply_managers_have_no_version(lws: dynamic.Resource) -> None:
    """apimachinery pkg/util/managedfields/internal/conflict.go getConflictMessage: managers sorted, each with a
    `conflicts with M:` line and its `- path` lines; an Apply manager is printed by name only."""
    _apply(lws, _lws(replicas=1, labels={"app": "k3"}))
    _apply(lws, _lws(replicas=2, labels={"app": "other"}), manager="helm", force=True)
    with pytest.raises(ApiException) as exc:
        _apply(lws, _lws(replicas=1, labels={"app": "k3"}))
    status = json.loads(exc.value.body)
    assert status["message"] == (
        'Apply failed with 2 conflicts: conflicts with "helm":\n- .metadata.labels.app\n- .spec.replicas'
    )
    assert [c["message"] for c in status["details"]["causes"]] == ['conflict with "helm"'] * 2


def test_list_map_elements_merge_by_key_and_conflicts_name_the_element(lws: dynamic.Resource) -> None:
    """structured-merge-diff merge/update.go and fieldpath/pathelement.go: a `x-kubernetes-list-type: map` list (the
    CRD's containers, keyed by name) merges element by element, managedFields hold `k:{"name":...}` with `.`, and
    a conflict path names the element: `.spec...containers[name="vllm"].image`."""
    crds.require()
    _apply(lws, _lws(image="vllm:1"))
    sidecar = {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "k3", "namespace": "default"},
        "spec": {
            "leaderWorkerTemplate": {
                "workerTemplate": {"spec": {"containers": [{"name": "sidecar", "image": "proxy:1"}]}}
            }
        },
    }
    merged = _apply(lws, sidecar, manager="ops")
    containers = merged.to_dict()["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("vllm", "vllm:1"), ("sidecar", "proxy:1")]
    owned = _owned(merged, "ops")["f:spec"]["f:leaderWorkerTemplate"]["f:workerTemplate"]["f:spec"]["f:containers"]
    assert owned == {'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}}
    takeover = json.loads(json.dumps(sidecar))
    takeover["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"] = [
        {"name": "vllm", "image": "vllm:2"}
    ]
    with pytest.raises(ApiException) as exc:
        _apply(lws, takeover, manager="ops")
    assert json.loads(exc.value.body)["message"] == (
        'Apply failed with 1 conflict: conflict with "k3deploy": '
        '.spec.leaderWorkerTemplate.workerTemplate.spec.containers[name="vllm"].image'
    )
    # ops stops sending its sidecar: the element it alone owned goes, k3deploy's stays.
    _apply(lws, {**sidecar, "spec": {"replicas": 1}}, manager="ops")
    live = lws.get(name="k3", namespace="default").to_dict()
    assert [c["name"] for c in live["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]] == ["vllm"]
