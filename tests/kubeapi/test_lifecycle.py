"""Object lifecycles as a cluster runs them: asynchronous garbage collection, Terminating namespaces, PVC protection.

Upstream: kubernetes pkg/controller/garbagecollector (background deletion of dependents),
pkg/controller/namespace/deletion and staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/
admission.go (403 on creates in a terminating namespace, cause NamespaceTerminating),
plugin/pkg/admission/storage/storageobjectinuseprotection and pkg/controller/volume/pvcprotection.
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.kubeapi.server import KubeApiServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def core(kube: KubeApiServer) -> client.CoreV1Api:
    from kubernetes import config

    return client.CoreV1Api(config.new_client_from_config(str(kube.kubeconfig)))


def test_dependents_outlive_their_owner_for_a_while(kube: KubeApiServer, core: client.CoreV1Api) -> None:
    kube.controllers.gc.delay = 0.5
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map("default", {"metadata": {"name": "child", "ownerReferences": [ref]}})
    core.delete_namespaced_config_map("owner", "default")
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["child"]
    kube.wait_for(lambda: kube.store.get("configmaps", "child", "default") is None)


def test_a_terminating_namespace_refuses_new_content_until_it_is_gone(
    kube: KubeApiServer, core: client.CoreV1Api
) -> None:
    kube.add_gb300_nodes(count=1)
    kube.controllers.kubelet.termination_delay = 1.0
    core.create_namespace({"metadata": {"name": "doomed"}})
    assert core.read_namespace("doomed").spec.finalizers == ["kubernetes"]
    core.create_namespaced_pod(
        "doomed", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    )
    kube.wait_for(lambda: (kube.store.get("pods", "p", "doomed") or {}).get("spec", {}).get("nodeName"))
    core.delete_namespace("doomed")
    assert core.read_namespace("doomed").status.phase == "Terminating"
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("doomed", {"metadata": {"name": "late"}})
    body = json.loads(info.value.body)
    assert (info.value.status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == (
        'configmaps "late" is forbidden: unable to create new content in namespace doomed '
        "because it is being terminated"
    )
    assert body["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "field": "metadata.namespace",
            "message": "namespace doomed is being terminated",
        }
    ]
    kube.wait_for(lambda: kube.store.get("namespaces", "doomed") is None)
    assert kube.store.list("pods", "doomed") == []


def test_a_claim_in_use_stays_terminating_until_its_pod_is_gone(kube: KubeApiServer, core: client.CoreV1Api) -> None:
    kube.add_gb300_nodes(count=1)
    kube.add_storage_class(default=True)
    claim = core.create_namespaced_persistent_volume_claim(
        "default",
        {
            "metadata": {"name": "cache"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    )
    assert claim.metadata.finalizers == ["kubernetes.io/pvc-protection"]
    core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "user"},
            "spec": {
                "containers": [{"name": "c", "image": "busybox"}],
                "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "cache"}}],
            },
        },
    )
    core.delete_namespaced_persistent_volume_claim("cache", "default")
    assert kube.store.get("persistentvolumeclaims", "cache", "default")["metadata"].get("deletionTimestamp")
    core.delete_namespaced_pod("user", "default")
    kube.wait_for(lambda: kube.store.get("persistentvolumeclaims", "cache", "default") is None)
