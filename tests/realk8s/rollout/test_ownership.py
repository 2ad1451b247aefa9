"""k3deploy deletes only what it created, on the real plane: the ownership mark set at creation only, a user's
namespace, weight claim and Secret kept by `down --purge`, the real namespace controller deleting a namespace
k3deploy made once it holds only k3deploy's objects."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.rollout.ownership import OWNER_ANNOTATION, OWNER_LABEL
from tests.realk8s.client import wait_until
from tests.realk8s.cluster_fixtures import LWS, PROFILE, QUICK, Deployment

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
PVC = f"{LWS}-model-cache"


def _marked(obj: dict[str, Any] | None) -> bool:
    meta = (obj or {}).get("metadata") or {}
    return OWNER_LABEL in (meta.get("labels") or {}) or OWNER_ANNOTATION in (meta.get("annotations") or {})


def _namespace(deploy: Deployment) -> dict | None:
    found = deploy.plane.api.find(f"/api/v1/namespaces/{deploy.namespace}")
    return None if found is None else dict(found)


def _secret(deploy: Deployment) -> None:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token"}, "type": "Opaque"}
    deploy.plane.api.create(deploy.path("secrets"), {**body, "stringData": {"token": "t"}})


def test_up_and_down_purge_keep_the_users_namespace_pvc_and_secret(deploy: Deployment) -> None:
    ns = deploy.namespace
    api = deploy.plane.api
    # What a user makes before the first `up`: the namespace, the weight PVC (pre-provisioned) and the token.
    api.create(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": "inference"}}},
    )
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": PVC},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "2Ti"}}},
    }
    api.create(deploy.path("persistentvolumeclaims"), claim)
    _secret(deploy)
    up = deploy.k3("up", *QUICK)
    assert up.returncode == 0, up.stderr
    assert f"Namespace/{ns} exists and k3deploy did not create it: kept as it is" in up.stderr
    namespace = _namespace(deploy)
    assert namespace is not None
    assert namespace["metadata"]["labels"] == {"team": "inference", "kubernetes.io/metadata.name": ns}
    assert not _marked(namespace) and not _marked(deploy.get("persistentvolumeclaims", PVC))
    assert _marked(deploy.get("leaderworkersets", LWS))

    purge = deploy.k3("down", "--yes", "--purge", "--timeout", "120s")
    assert purge.returncode == 0, purge.stderr
    assert deploy.get("leaderworkersets", LWS) is None
    assert f"kept {ns}/PersistentVolumeClaim/{PVC}: k3deploy did not create it" in purge.stderr
    assert f"kept Namespace/{ns}: k3deploy did not create it" in purge.stderr
    assert "kept, not k3deploy's:" in purge.stderr
    namespace = _namespace(deploy)
    assert namespace is not None and namespace["metadata"].get("deletionTimestamp") is None
    assert deploy.get("persistentvolumeclaims", PVC) is not None
    assert deploy.get("secrets", "hf-token") is not None


def test_purge_keeps_a_namespace_k3deploy_made_while_it_holds_a_users_secret(deploy: Deployment) -> None:
    ns = deploy.namespace
    assert deploy.k3("up", *QUICK).returncode == 0
    assert _marked(_namespace(deploy))
    _secret(deploy)
    purge = deploy.k3("down", "--yes", "--purge", "--timeout", "120s")
    assert purge.returncode == 0, purge.stderr
    # Its own PVC goes; the namespace stays because deleting it would delete the user's Secret.
    left = deploy.get("persistentvolumeclaims", PVC)
    assert left is None or left["metadata"].get("deletionTimestamp")
    assert f"kept Namespace/{ns}: it holds Secret/hf-token, which k3deploy did not create" in purge.stderr
    namespace = _namespace(deploy)
    assert namespace is not None and namespace["metadata"].get("deletionTimestamp") is None
    assert deploy.get("secrets", "hf-token") is not None


def test_purge_deletes_the_namespace_k3deploy_made_when_it_holds_only_its_own(deploy: Deployment) -> None:
    assert deploy.k3("up", *QUICK).returncode == 0
    purge = deploy.k3("down", "--yes", "--purge", "--timeout", "120s")
    assert purge.returncode == 0, purge.stderr
    assert f"deleted Namespace/{deploy.namespace}" in purge.stderr
    wait_until("the real namespace controller to delete it", lambda: _namespace(deploy) is None, 180)


def _users_objects(deploy: Deployment) -> None:
    """What a user puts in the namespace between two `up`s: a Deployment, its Service and a RoleBinding."""
    api = deploy.plane.api
    labels = {"app": "web"}
    container = {"name": "web", "image": "nginx:1.27"}
    api.create(
        deploy.path("deployments"),
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        },
    )
    service = {"selector": labels, "ports": [{"port": 80}]}
    api.create(
        deploy.path("services"), {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": service}
    )
    rbac = "rbac.authorization.k8s.io"
    api.create(
        deploy.path("rolebindings"),
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "web"},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": deploy.namespace}],
        },
    )


def test_purge_keeps_a_namespace_k3deploy_made_with_what_the_user_put_there_between_two_ups(
    deploy: Deployment,
) -> None:
    """Before: "deleted Namespace/..." and the user's Deployment, Service and RoleBinding went with it."""
    ns = deploy.namespace
    assert deploy.k3("up", *QUICK).returncode == 0
    assert deploy.k3("down", "--yes", "--timeout", "120s").returncode == 0
    _users_objects(deploy)
    again = deploy.k3("up", *QUICK)
    assert again.returncode == 0, again.stderr
    purge = deploy.k3("down", "--yes", "--purge", "--timeout", "120s")
    assert purge.returncode == 0, purge.stderr
    kept = next(line for line in purge.stderr.splitlines() if f"kept Namespace/{ns}: it holds" in line)
    for name in ("Deployment/web", "Service/web", "RoleBinding/web"):
        assert name in kept, kept
    assert f"deleted Namespace/{ns}" not in purge.stderr
    namespace = _namespace(deploy)
    assert namespace is not None and namespace["metadata"].get("deletionTimestamp") is None
    assert deploy.get("deployments", "web") is not None and deploy.get("services", "web") is not None
    assert deploy.get("rolebindings", "web") is not None
    # k3deploy's own objects went; what the namespace controller or the user made stays.
    assert deploy.get("leaderworkersets", LWS) is None
    left = deploy.get("persistentvolumeclaims", PVC)
    assert left is None or left["metadata"].get("deletionTimestamp")


def test_a_users_configmap_with_the_history_name_is_never_taken_over_nor_deleted(deploy: Deployment) -> None:
    """Before: `up` wrote its history over the user's ConfigMap (marking it), and a plain `down` deleted it."""
    history = f"{PROFILE}-k3deploy-revisions"
    deploy.create_namespace()
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": history}, "data": {"mine": "yes"}}
    deploy.plane.api.create(deploy.path("configmaps"), body)
    up = deploy.k3("up", *QUICK)
    assert up.returncode == 2, up.stderr
    assert f"error: {deploy.namespace}/ConfigMap/{history} exists and k3deploy did not create it" in up.stderr
    assert deploy.get("leaderworkersets", LWS) is None  # refused before anything was applied
    down = deploy.k3("down", "--yes", "--timeout", "120s")
    assert down.returncode == 0, down.stderr
    assert f"kept {deploy.namespace}/ConfigMap/{history}: k3deploy did not create it" in down.stderr
    left = deploy.get("configmaps", history)
    assert left is not None and left["data"] == {"mine": "yes"} and not _marked(left)


def test_an_up_that_fails_preflight_removes_the_namespace_and_lease_it_made(deploy: Deployment) -> None:
    """`up -n NEW` makes NEW to hold its Lease first thing; before, a preflight FAIL left both behind."""
    ns = deploy.namespace
    # The profile's token Secret does not exist in the new namespace: preflight FAILs.
    result = deploy.k3("up", "--skip-smoke", "--timeout", "120s")
    assert result.returncode == 1, result.stderr
    assert "FAIL preflight" in result.stderr, result.stderr
    assert (
        f"removed Lease/{PROFILE}-k3deploy-lock, Namespace/{ns}: this command made them and left nothing in them"
        in result.stderr
    ), result.stderr
    namespace = _namespace(deploy)
    assert namespace is None or namespace["metadata"].get("deletionTimestamp")


def test_a_first_install_whose_apply_conflicts_on_a_users_claim_removes_what_it_created(deploy: Deployment) -> None:
    """The user's weight claim asks for another size: the server-side apply conflicts on it. Before: exit 1 with
    the objects applied before it left in place and no rollback."""
    deploy.create_namespace()
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": PVC},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    deploy.plane.api.create(deploy.path("persistentvolumeclaims"), claim)
    result = deploy.k3("up", *QUICK)
    assert result.returncode == 1, result.stderr
    assert f"PersistentVolumeClaim/{PVC}" in result.stderr and "conflict" in result.stderr.lower(), result.stderr
    assert "==> rollback (first install) because apply failed" in result.stderr, result.stderr
    assert "first install removed (" in result.stderr, result.stderr
    # Nothing the run created is left; the user's claim and namespace are as they were.
    for plural in ("configmaps", "serviceaccounts", "networkpolicies", "leaderworkersets", "services", "jobs"):
        assert [o["metadata"]["name"] for o in deploy.list(plural) if _marked(o)] == [], plural
    assert deploy.get("persistentvolumeclaims", PVC) is not None
    assert not _marked(deploy.get("persistentvolumeclaims", PVC))
