"""Read-only cluster queries preflight needs, as plain dicts and strings: version, served resources, nodes,
pods, namespace, Secret keys, StorageClasses, a PersistentVolumeClaim, a RuntimeClass and SelfSubjectAccessReviews.

Each is one `KubeApi.request` (kube/api.py, the one way to the cluster) for a path as JSON, without API discovery;
each is retried once on a transient failure (preflight should fail fast on a dead API server).
"""

from __future__ import annotations

from typing import Any

from k3deploy.errors import KubeError
from k3deploy.kube.api import KubeApi

#: Preflight looks, it does not wait: one retry, then the error.
_ATTEMPTS = 2
#: (connect, read) seconds: a black-holed address must not hang preflight.
_TIMEOUT = (5, 30)
_DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def get_json(
    api: KubeApi, path: str, action: str, *, query: list[tuple[str, str]] | None = None, missing_ok: bool = False
) -> Any:
    """A GET of `path` as JSON as preflight reads: one retry, bounded; None for a 404 when `missing_ok`."""
    return api.request("GET", path, action, query=query, missing_ok=missing_ok, attempts=_ATTEMPTS, timeout=_TIMEOUT)


def server_version(api: KubeApi) -> str:
    """The API server's gitVersion (`v1.34.1`)."""
    return str(get_json(api, "/version", "read the server version")["gitVersion"])


def served_resources(api: KubeApi, groups: list[str]) -> list[str]:
    """`plural.group` of every resource the server serves in `groups` (any served version), from discovery."""
    listed = get_json(api, "/apis", "discover API groups")
    out: set[str] = set()
    for group in listed.get("groups") or []:
        if group.get("name") not in groups:
            continue
        for version in group.get("versions") or []:
            gv = version["groupVersion"]
            found = get_json(api, f"/apis/{gv}", f"discover {gv}", missing_ok=True) or {}
            out.update(f"{r['name']}.{group['name']}" for r in found.get("resources") or [] if "/" not in r["name"])
    return sorted(out)


def nodes(api: KubeApi) -> list[dict]:
    """Every node, raw."""
    return list(get_json(api, "/api/v1/nodes", "list nodes").get("items") or [])


def active_pods(api: KubeApi) -> list[dict]:
    """Pods of all namespaces that still hold resources (not Succeeded or Failed), raw."""
    listed = get_json(
        api,
        "/api/v1/pods",
        "list pods",
        query=[("fieldSelector", "status.phase!=Succeeded,status.phase!=Failed")],
    )
    return list(listed.get("items") or [])


def namespace_exists(api: KubeApi, name: str) -> bool:
    """Whether the namespace exists."""
    return namespace_labels(api, name) is not None


def namespace_labels(api: KubeApi, name: str) -> dict[str, str] | None:
    """The namespace's labels (Pod Security Admission reads its level there); None when it does not exist."""
    namespace = get_json(api, f"/api/v1/namespaces/{name}", f"read namespace {name}", missing_ok=True)
    if namespace is None:
        return None
    return dict((namespace.get("metadata") or {}).get("labels") or {})


def secret_keys(api: KubeApi, namespace: str, name: str) -> list[str] | None:
    """The data keys of a Secret (values are never kept); None when it does not exist."""
    secret = get_json(
        api, f"/api/v1/namespaces/{namespace}/secrets/{name}", f"read secret {namespace}/{name}", missing_ok=True
    )
    if secret is None:
        return None
    return sorted({*(secret.get("data") or {}), *(secret.get("stringData") or {})})


def storage_classes(api: KubeApi) -> tuple[list[str], str | None, dict[str, str]]:
    """Names of the StorageClasses, the default one (None when no class is marked default), each one's provisioner."""
    items = get_json(api, "/apis/storage.k8s.io/v1/storageclasses", "list storage classes").get("items") or []
    names = sorted(i["metadata"]["name"] for i in items)
    default = next(
        (
            i["metadata"]["name"]
            for i in items
            if any((i["metadata"].get("annotations") or {}).get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS)
        ),
        None,
    )
    return names, default, {i["metadata"]["name"]: str(i.get("provisioner", "")) for i in items}


def persistent_volume_claim(api: KubeApi, namespace: str, name: str) -> dict | None:
    """A PersistentVolumeClaim as a dict; None when it does not exist."""
    return get_json(
        api,
        f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}",
        f"read persistentvolumeclaim {namespace}/{name}",
        missing_ok=True,
    )


def runtime_class_exists(api: KubeApi, name: str) -> bool | None:
    """Whether a RuntimeClass (node.k8s.io/v1, cluster-scoped) exists; None when this user may not read it."""
    try:
        found = get_json(
            api, f"/apis/node.k8s.io/v1/runtimeclasses/{name}", f"read runtimeclass {name}", missing_ok=True
        )
    except KubeError as exc:
        if exc.status == 403:
            return None
        raise
    return found is not None


def can_i(
    api: KubeApi, verb: str, resource: str, group: str = "", namespace: str | None = None, subresource: str = ""
) -> tuple[bool, str]:
    """(allowed, reason) from a SelfSubjectAccessReview, as `kubectl auth can-i` asks it."""
    attributes: dict[str, Any] = {"verb": verb, "resource": resource, "group": group}
    if namespace:
        attributes["namespace"] = namespace
    if subresource:
        attributes["subresource"] = subresource
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    review = api.request(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        f"review access to {verb} {resource}",
        body=body,
        attempts=_ATTEMPTS,
        timeout=_TIMEOUT,
    )
    status = review.get("status") or {}
    return bool(status.get("allowed")), str(status.get("reason") or "")
