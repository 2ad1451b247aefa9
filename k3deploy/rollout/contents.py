"""What a Namespace holds that is not the release's: the rule by which `down --purge` deletes a Namespace (pure).

Deleting a Namespace deletes everything in it, so k3deploy deletes one it made only when every object in it is the
release's: it carries the release's mark (rollout/ownership.py); or it has an owner reference, however deep, to such
an object or to one this removal has just deleted (the garbage collector takes it next: a pod of the release's
LeaderWorkerSet, an EndpointSlice of its Service, a claim made for its pod); or it is what Kubernetes itself puts in
every namespace (the `default` ServiceAccount, the `kube-root-ca.crt` ConfigMap, Events) or the Endpoints of one of
the release's Services; or it is already being deleted, or every owner it names is gone (the garbage collector deletes
it next). Anything else (a user's Deployment, Service, RoleBinding made there after `up`) is named, and the Namespace
is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from k3deploy.kobject import KubeObject
from k3deploy.rollout.ownership import SYSTEM_CONFIGMAPS, owned_by

#: What Kubernetes makes in every namespace by itself (kind, name): never a reason to keep one.
SYSTEM_OBJECTS = frozenset({("ServiceAccount", "default"), *(("ConfigMap", name) for name in SYSTEM_CONFIGMAPS)})
#: Records of what happened, not objects a user keeps there.
RECORD_KINDS = frozenset({"Event"})
#: Most foreign objects named in one line (the rest counted).
MAX_NAMED = 10


def _meta(obj: KubeObject) -> KubeObject:
    return obj.get("metadata") or {}


def _uid(obj: KubeObject) -> str:
    return str(_meta(obj).get("uid") or "")


def _owners(obj: KubeObject) -> set[str]:
    return {str(ref.get("uid") or "") for ref in _meta(obj).get("ownerReferences") or []}


def _orphaned(obj: KubeObject, kinds: set[str], present: set[str]) -> bool:
    """Every owner of `obj` is of a kind listed in the namespace and no longer there: the garbage collector deletes it
    (a worker pod whose StatefulSet went with the release's LeaderWorkerSet a moment ago)."""
    refs = _meta(obj).get("ownerReferences") or []
    return bool(refs) and all(ref.get("kind") in kinds and str(ref.get("uid") or "") not in present for ref in refs)


def foreign_contents(
    listed: Sequence[tuple[str, list[KubeObject]]],
    release: str,
    namespace: str,
    gone: Sequence[KubeObject] = (),
) -> list[str]:
    """`Kind/name` of what the namespace holds that is not `release`'s (`listed`: each listable kind with its items
    as the server listed them; `gone`: the objects this removal deleted, as they were read before), sorted."""
    ours = {_uid(obj) for obj in gone} - {""}
    kinds = {kind for kind, _ in listed}
    present = {_uid(item) for _, items in listed for item in items}
    services = {_meta(obj).get("name") for obj in gone if obj.get("kind") == "Service"}
    pending: list[tuple[str, KubeObject]] = []
    for kind, items in listed:
        for item in items:
            meta = _meta(item)
            if kind in RECORD_KINDS or (kind, meta.get("name")) in SYSTEM_OBJECTS:
                continue
            if meta.get("deletionTimestamp") or owned_by(item, release, namespace) or _orphaned(item, kinds, present):
                ours.add(_uid(item))
                services |= {meta.get("name")} if kind == "Service" else set()
                continue
            pending.append((kind, item))
    changed = True
    while changed:
        # An owner reference makes an object the release's once its owner is: follow the chains to their end.
        changed = False
        for kind, item in list(pending):
            if _owners(item) & ours:
                ours.add(_uid(item))
                services |= {_meta(item).get("name")} if kind == "Service" else set()
                pending.remove((kind, item))
                changed = True
    return sorted(
        f"{kind}/{_meta(item).get('name')}"
        for kind, item in pending
        if not (kind == "Endpoints" and _meta(item).get("name") in services)
    )


def occupants(listed: Sequence[tuple[str, list[KubeObject]]], ignore: frozenset[tuple[str, str]]) -> list[str]:
    """`Kind/name` of every object in the namespace but what Kubernetes makes in each, what is being deleted and
    the (kind, name) pairs in `ignore`: whoever made them, sorted."""
    return sorted(
        f"{kind}/{_meta(item).get('name')}"
        for kind, items in listed
        for item in items
        if kind not in RECORD_KINDS
        and (kind, _meta(item).get("name")) not in SYSTEM_OBJECTS | ignore
        and not _meta(item).get("deletionTimestamp")
    )


def named(found: list[str]) -> str:
    """`found`, joined, at most MAX_NAMED of them named (the rest counted)."""
    shown = ", ".join(found[:MAX_NAMED])
    return shown if len(found) <= MAX_NAMED else f"{shown} and {len(found) - MAX_NAMED} more"
