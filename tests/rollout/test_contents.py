"""What a Namespace holds that is not the release's (rollout/contents.py): the rule `down --purge` deletes a
Namespace k3deploy made by; on the real plane in tests/realk8s/rollout/test_ownership.py."""

from __future__ import annotations

from k3deploy.kobject import KubeObject
from k3deploy.rollout.contents import MAX_NAMED, foreign_contents, named
from k3deploy.rollout.ownership import with_mark

NS, RELEASE = "kimi-k3", "kimi-k3-gb300-tp16"


def _obj(kind: str, name: str, uid: str, owners: tuple[str, ...] = (), *, marked: bool = False) -> KubeObject:
    meta: KubeObject = {"name": name, "namespace": NS, "uid": uid}
    if owners:
        meta["ownerReferences"] = [{"uid": owner} for owner in owners]
    obj: KubeObject = {"kind": kind, "metadata": meta}
    return with_mark(obj, RELEASE, NS) if marked else obj


def test_only_the_releases_objects_their_dependents_and_what_kubernetes_makes_leave_nothing_foreign() -> None:
    lws = _obj("LeaderWorkerSet", RELEASE, "u-lws", marked=True)
    service = _obj("Service", f"{RELEASE}-api", "u-svc")  # deleted by this removal: read before, owned
    listed = [
        ("LeaderWorkerSet", [lws]),
        ("StatefulSet", [_obj("StatefulSet", RELEASE, "u-sts", ("u-lws",))]),
        ("Pod", [_obj("Pod", f"{RELEASE}-0", "u-pod", ("u-sts",))]),
        ("ResourceClaim", [_obj("ResourceClaim", "claim", "u-rc", ("u-pod",))]),
        ("EndpointSlice", [_obj("EndpointSlice", "api-x", "u-es", ("u-svc",))]),
        ("Endpoints", [_obj("Endpoints", f"{RELEASE}-api", "u-ep")]),
        ("ServiceAccount", [_obj("ServiceAccount", "default", "u-sa")]),
        ("ConfigMap", [_obj("ConfigMap", "kube-root-ca.crt", "u-ca")]),
        ("Event", [_obj("Event", "x.1", "u-ev")]),
    ]
    assert foreign_contents(listed, RELEASE, NS, gone=[service]) == []


def test_what_a_user_made_and_what_it_owns_is_named_even_beside_the_releases() -> None:
    listed = [
        ("Deployment", [_obj("Deployment", "web", "u-dep")]),
        ("ReplicaSet", [_obj("ReplicaSet", "web-1", "u-rs", ("u-dep",))]),
        ("Service", [_obj("Service", "web", "u-web")]),
        ("Endpoints", [_obj("Endpoints", "web", "u-webep")]),
        ("RoleBinding", [_obj("RoleBinding", "web", "u-rb")]),
        ("LeaderWorkerSet", [_obj("LeaderWorkerSet", RELEASE, "u-lws", marked=True)]),
        # Marked for another release in the same namespace: not this release's either.
        ("ConfigMap", [with_mark(_obj("ConfigMap", "other", "u-o"), "other", NS)]),
    ]
    assert foreign_contents(listed, RELEASE, NS) == [
        "ConfigMap/other",
        "Deployment/web",
        "Endpoints/web",
        "ReplicaSet/web-1",
        "RoleBinding/web",
        "Service/web",
    ]


def test_an_object_whose_owners_are_all_gone_is_going_with_the_garbage_collector() -> None:
    """The worker pods of a group whose StatefulSet (owned by the leader pod) went a moment ago: the garbage collector
    deletes them next. An owner of a kind the namespace does not list (cluster-scoped) says nothing."""
    worker = _obj("Pod", f"{RELEASE}-0-1", "u-w1", ("u-sts-gone",))
    worker["metadata"]["ownerReferences"][0]["kind"] = "StatefulSet"
    held = _obj("ConfigMap", "held", "u-held", ("u-node",))
    held["metadata"]["ownerReferences"][0]["kind"] = "Node"
    listed = [("Pod", [worker]), ("StatefulSet", []), ("ConfigMap", [held])]
    assert foreign_contents(listed, RELEASE, NS) == ["ConfigMap/held"]


def test_an_object_already_being_deleted_is_not_a_reason_to_keep_the_namespace() -> None:
    going = _obj("Secret", "old", "u-s")
    going["metadata"]["deletionTimestamp"] = "2026-12-05T10:00:00Z"
    assert foreign_contents([("Secret", [going])], RELEASE, NS) == []


def test_a_long_list_is_cut_and_counted() -> None:
    found = [f"Secret/s{i:02d}" for i in range(MAX_NAMED + 3)]
    assert named(found) == ", ".join(found[:MAX_NAMED]) + " and 3 more"
    assert named(found[:2]) == "Secret/s00, Secret/s01"
