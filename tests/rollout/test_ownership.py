"""k3deploy deletes only what it created: the ownership mark, set at creation only, against the test API server."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from k3deploy.rollout.ownership import OWNER_ANNOTATION, OWNER_LABEL, for_apply, owned
from tests.rollout.conftest import K3, NAMESPACE, live
from tests.rollout.test_up import LWS, PVC, QUICK

pytestmark = pytest.mark.timeout(240)
RELEASE = "kimi-k3-gb300-tp16"
RENDERED = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": NAMESPACE, "labels": {"app.kubernetes.io/instance": RELEASE}},
}


def _user_objects(cluster: Any) -> None:
    """What a user makes before the first `up`: the namespace, the weight PVC (pre-provisioned) and the token."""
    cluster.store.create("namespaces", {"metadata": {"name": NAMESPACE, "labels": {"team": "inference"}}})
    cluster.store.create(
        "persistentvolumeclaims",
        {
            "metadata": {"name": PVC},
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "2Ti"}}},
        },
        namespace=NAMESPACE,
    )
    cluster.store.create(
        "secrets",
        {"metadata": {"name": "hf-token"}, "type": "Opaque", "data": {"token": base64.b64encode(b"t").decode()}},
        namespace=NAMESPACE,
    )


def _marked(obj: dict[str, Any] | None) -> bool:
    meta = (obj or {}).get("metadata") or {}
    return OWNER_LABEL in (meta.get("labels") or {}) or OWNER_ANNOTATION in (meta.get("annotations") or {})


def test_the_mark_goes_on_at_creation_stays_on_what_has_it_and_never_goes_on_what_another_made() -> None:
    created = for_apply(RENDERED, None)
    assert created is not None and created["metadata"]["labels"][OWNER_LABEL] == RELEASE
    assert created["metadata"]["annotations"][OWNER_ANNOTATION] == f"{NAMESPACE}/{RELEASE}"
    assert owned(created, RENDERED)
    # Re-applied with the mark: an apply without it would take the field away from k3deploy's field manager.
    assert for_apply(RENDERED, created) == created
    users = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    assert for_apply(RENDERED, users) is None and not owned(users, RENDERED)
    users_pvc = {"kind": "PersistentVolumeClaim", "metadata": {"name": PVC, "namespace": NAMESPACE}}
    rendered_pvc = {
        **users_pvc,
        "metadata": {**users_pvc["metadata"], "labels": {"app.kubernetes.io/instance": RELEASE}},
    }
    assert for_apply(rendered_pvc, users_pvc) == rendered_pvc
    # Another release's mark is not this one's.
    other = for_apply(
        {**RENDERED, "metadata": {"name": NAMESPACE, "labels": {"app.kubernetes.io/instance": "x"}}}, None
    )
    assert other is not None and not owned(other, RENDERED)


def test_up_and_down_purge_keep_the_users_namespace_pvc_and_secret(k3: K3, cluster: Any) -> None:
    _user_objects(cluster)
    up = k3("up", *QUICK)
    assert up.returncode == 0, up.stderr
    assert f"Namespace/{NAMESPACE} exists and k3deploy did not create it: kept as it is" in up.stderr
    namespace = cluster.store.get("namespaces", NAMESPACE)
    assert namespace["metadata"]["labels"] == {"team": "inference", "kubernetes.io/metadata.name": NAMESPACE}
    assert not _marked(namespace) and not _marked(live(cluster, "persistentvolumeclaims", PVC))
    assert _marked(live(cluster, "leaderworkersets", LWS))

    purge = k3("down", "--yes", "--purge")
    assert purge.returncode == 0, purge.stderr
    assert live(cluster, "leaderworkersets", LWS) is None
    assert f"kept {NAMESPACE}/PersistentVolumeClaim/{PVC}: k3deploy did not create it" in purge.stderr
    assert f"kept Namespace/{NAMESPACE}: k3deploy did not create it" in purge.stderr
    assert "kept, not k3deploy's:" in purge.stderr
    assert cluster.store.get("namespaces", NAMESPACE)["metadata"].get("deletionTimestamp") is None
    assert live(cluster, "persistentvolumeclaims", PVC) is not None
    assert live(cluster, "secrets", "hf-token") is not None


def test_purge_keeps_a_namespace_k3deploy_made_while_it_holds_a_users_secret(k3: K3, cluster: Any) -> None:
    assert k3("up", *QUICK).returncode == 0
    assert _marked(cluster.store.get("namespaces", NAMESPACE))
    cluster.store.create("secrets", {"metadata": {"name": "hf-token"}, "type": "Opaque"}, namespace=NAMESPACE)
    purge = k3("down", "--yes", "--purge")
    assert purge.returncode == 0, purge.stderr
    # Its own PVC goes; the namespace stays because deleting it would delete the user's Secret.
    assert live(cluster, "persistentvolumeclaims", PVC) is None or live(cluster, "persistentvolumeclaims", PVC)[
        "metadata"
    ].get("deletionTimestamp")
    assert f"kept Namespace/{NAMESPACE}: it holds Secret/hf-token, which k3deploy did not create" in purge.stderr
    assert cluster.store.get("namespaces", NAMESPACE)["metadata"].get("deletionTimestamp") is None
    assert live(cluster, "secrets", "hf-token") is not None


def test_purge_deletes_the_namespace_k3deploy_made_when_it_holds_only_its_own(k3: K3, cluster: Any) -> None:
    assert k3("up", *QUICK).returncode == 0
    purge = k3("down", "--yes", "--purge")
    assert purge.returncode == 0, purge.stderr
    assert f"deleted Namespace/{NAMESPACE}" in purge.stderr
    cluster.wait_for(lambda: cluster.store.get("namespaces", NAMESPACE) is None)
