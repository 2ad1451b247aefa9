"""The ownership mark: what k3deploy creates carries it, and only what carries it is ever deleted.

The mark is a label naming the release (the profile's name) and an annotation naming it with its namespace, as
Helm marks what it installs (`app.kubernetes.io/managed-by` plus `meta.helm.sh/release-name` and
`meta.helm.sh/release-namespace`, helm/helm pkg/action/validate.go). Unlike the rendered labels, which a
server-side apply would put on any object of the same name, the mark is added to an apply only when the object
does not exist yet, and kept on later applies only when the live object already carries it: an object that
existed before `k3deploy up` (a user's Namespace, weight PVC or Secret) never gets it, so `down`, `down --purge`
and the removal of a failed first install keep it. A Namespace that exists without the mark is not applied at all:
k3deploy creates its namespace only when it is absent.
"""

from __future__ import annotations

import copy

from k3deploy.kobject import KubeObject

#: The label naming the release that created the object (the profile's name).
OWNER_LABEL = "k3deploy/release"
#: The annotation naming that release with its namespace: `<namespace>/<release>`.
OWNER_ANNOTATION = "k3deploy/created-by"
#: The rendered label the release's name is read from (render/manifests.py puts it on every object).
INSTANCE_LABEL = "app.kubernetes.io/instance"
#: What the namespace controller puts in every namespace: never a reason to keep one.
SYSTEM_CONFIGMAPS = frozenset({"kube-root-ca.crt"})
#: Kinds a rollback or a plain `down` never deletes: the weight cache and the namespace that holds it.
KEPT_KINDS = frozenset({"PersistentVolumeClaim", "Namespace"})
#: What a user most often keeps in a namespace k3deploy made (a token Secret, a weight PVC): the access review asks to
#: list these at least; `remove` lists every kind before it deletes a Namespace (rollout/contents.py).
HELD_KINDS = ("Secret", "ConfigMap", "PersistentVolumeClaim")


def identity(obj: KubeObject) -> tuple[str, str, str, str]:
    """What names one object: API version, kind, namespace ("" when cluster-scoped) and name."""
    meta = obj.get("metadata", {})
    return (obj.get("apiVersion", ""), obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", ""))


def history_name(deployment: str) -> str:
    """Name of the revision history ConfigMap of a deployment (targets/kubernetes/history.py): k3deploy's own, always marked."""
    return f"{deployment}-k3deploy-revisions"


def _meta(obj: KubeObject) -> KubeObject:
    return obj.get("metadata") or {}


def release_of(obj: KubeObject) -> tuple[str, str]:
    """(release, namespace) a rendered object belongs to: its instance label, and its namespace (a Namespace's own
    name for a Namespace)."""
    meta = _meta(obj)
    release = str((meta.get("labels") or {}).get(INSTANCE_LABEL) or "")
    namespace = meta.get("name") if obj.get("kind") == "Namespace" else meta.get("namespace")
    return release, str(namespace or "")


def mark(release: str, namespace: str) -> tuple[dict[str, str], dict[str, str]]:
    """The (labels, annotations) of the mark of `release` in `namespace`."""
    return {OWNER_LABEL: release}, {OWNER_ANNOTATION: f"{namespace}/{release}"}


def with_mark(obj: KubeObject, release: str, namespace: str) -> KubeObject:
    """A copy of `obj` carrying the mark."""
    marked = copy.deepcopy(obj)
    meta = marked.setdefault("metadata", {})
    labels, annotations = mark(release, namespace)
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    return marked


def owned_by(live: KubeObject, release: str, namespace: str) -> bool:
    """True when the live object carries the mark of `release` in `namespace` (label and annotation both)."""
    meta = _meta(live)
    labels, annotations = mark(release, namespace)
    live_labels, live_annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    return (
        bool(release)
        and all(live_labels.get(k) == v for k, v in labels.items())
        and all(live_annotations.get(k) == v for k, v in annotations.items())
    )


def owned(live: KubeObject, rendered: KubeObject) -> bool:
    """True when the live object carries the mark of the release `rendered` belongs to."""
    return owned_by(live, *release_of(rendered))


def for_apply(obj: KubeObject, live: KubeObject | None) -> KubeObject | None:
    """What to apply for `obj` given its live state: marked when k3deploy creates it or created it before (an apply
    without the mark would remove it); as rendered when someone else created it; None for a Namespace someone
    else created (left as it is)."""
    release, namespace = release_of(obj)
    if not release:
        return obj
    if live is None or owned_by(live, release, namespace):
        return with_mark(obj, release, namespace)
    if obj.get("kind") == "Namespace":
        return None
    return obj
