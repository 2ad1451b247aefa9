"""Read-only cluster queries preflight needs, as plain dicts and strings: version, served resources, nodes,
pods, namespace, Secret keys, StorageClasses, a PersistentVolumeClaim, a RuntimeClass and SelfSubjectAccessReviews.

Every call is retried once on a transient failure (preflight should fail fast on a dead API server) and
every other error is translated once, here, by `translate`.
"""

from __future__ import annotations

import json
from typing import Any

from k3deploy.kube.client import translate
from k3deploy.kube.retry import call_with_retries

#: Preflight looks, it does not wait: one retry, then the error.
_ATTEMPTS = 2
#: (connect, read) seconds: a black-holed address must not hang preflight.
_TIMEOUT = (5, 30)
_DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def _request(
    api: Any,
    method: str,
    path: str,
    action: str,
    *,
    query: list[tuple[str, str]] | None = None,
    body: dict | None = None,
    missing_ok: bool = False,
) -> Any:
    """One API request for raw JSON (no model objects); None for a 404 when `missing_ok`; errors translated."""
    # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
    from kubernetes.client.exceptions import ApiException

    def call() -> Any:
        request = api.param_serialize(
            method,
            path,
            query_params=query or [],
            body=body,
            auth_settings=["BearerToken"],
            header_params={
                "Accept": "application/json",
                **({"Content-Type": "application/json"} if body is not None else {}),
            },
        )
        response = api.call_api(*request, _request_timeout=_TIMEOUT)
        response.read()
        if not 200 <= response.status <= 299:
            api.response_deserialize(response, {})  # raises the ApiException for this status
        return json.loads(response.data or b"null")

    try:
        return call_with_retries(call, attempts=_ATTEMPTS)
    except ApiException as exc:
        if missing_ok and exc.status == 404:
            return None
        raise translate(exc, action) from None
    except Exception as exc:
        raise translate(exc, action) from None


def server_version(api: Any) -> str:
    """The API server's gitVersion (`v1.34.1`)."""
    return str(_request(api, "GET", "/version", "read the server version")["gitVersion"])


def served_resources(api: Any, groups: list[str]) -> list[str]:
    """`plural.group` of every resource the server serves in `groups` (any served version), from discovery."""
    listed = _request(api, "GET", "/apis", "discover API groups")
    out: set[str] = set()
    for group in listed.get("groups") or []:
        if group.get("name") not in groups:
            continue
        for version in group.get("versions") or []:
            gv = version["groupVersion"]
            found = _request(api, "GET", f"/apis/{gv}", f"discover {gv}", missing_ok=True) or {}
            out.update(f"{r['name']}.{group['name']}" for r in found.get("resources") or [] if "/" not in r["name"])
    return sorted(out)


def nodes(api: Any) -> list[dict]:
    """Every node, raw."""
    return list(_request(api, "GET", "/api/v1/nodes", "list nodes").get("items") or [])


def active_pods(api: Any) -> list[dict]:
    """Pods of all namespaces that still hold resources (not Succeeded or Failed), raw."""
    listed = _request(
        api,
        "GET",
        "/api/v1/pods",
        "list pods",
        query=[("fieldSelector", "status.phase!=Succeeded,status.phase!=Failed")],
    )
    return list(listed.get("items") or [])


def _request_raw(api: Any, path: str) -> Any:
    """A GET whose ApiException reaches the caller (which tells 403 from 404 itself)."""

    def call() -> Any:
        request = api.param_serialize(
            "GET", path, auth_settings=["BearerToken"], header_params={"Accept": "application/json"}
        )
        response = api.call_api(*request, _request_timeout=_TIMEOUT)
        response.read()
        if not 200 <= response.status <= 299:
            api.response_deserialize(response, {})
        return json.loads(response.data or b"null")

    return call_with_retries(call, attempts=_ATTEMPTS)


def namespace_exists(api: Any, name: str) -> bool:
    """Whether the namespace exists."""
    return namespace_labels(api, name) is not None


def namespace_labels(api: Any, name: str) -> dict[str, str] | None:
    """The namespace's labels (Pod Security Admission reads its level there); None when it does not exist."""
    namespace = _request(api, "GET", f"/api/v1/namespaces/{name}", f"read namespace {name}", missing_ok=True)
    if namespace is None:
        return None
    return dict((namespace.get("metadata") or {}).get("labels") or {})


def secret_keys(api: Any, namespace: str, name: str) -> list[str] | None:
    """The data keys of a Secret (values are never kept); None when it does not exist."""
    secret = _request(
        api, "GET", f"/api/v1/namespaces/{namespace}/secrets/{name}", f"read secret {namespace}/{name}", missing_ok=True
    )
    if secret is None:
        return None
    return sorted({*(secret.get("data") or {}), *(secret.get("stringData") or {})})


def storage_classes(api: Any) -> tuple[list[str], str | None, dict[str, str]]:
    """Names of the StorageClasses, the default one (None when no class is marked default), each one's provisioner."""
    items = _request(api, "GET", "/apis/storage.k8s.io/v1/storageclasses", "list storage classes").get("items") or []
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


def persistent_volume_claim(api: Any, namespace: str, name: str) -> dict | None:
    """A PersistentVolumeClaim as a dict; None when it does not exist."""
    return _request(
        api,
        "GET",
        f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}",
        f"read persistentvolumeclaim {namespace}/{name}",
        missing_ok=True,
    )


def runtime_class_exists(api: Any, name: str) -> bool | None:
    """Whether a RuntimeClass (node.k8s.io/v1, cluster-scoped) exists; None when this user may not read it."""
    # kubernetes loads only when a cluster is used (~0.5-1 s): the local target and `render` never pay for it.
    from kubernetes.client.exceptions import ApiException

    try:
        found = _request_raw(api, f"/apis/node.k8s.io/v1/runtimeclasses/{name}")
    except ApiException as exc:
        if exc.status == 404:
            return False
        if exc.status == 403:
            return None
        raise translate(exc, f"read runtimeclass {name}") from None
    except Exception as exc:
        raise translate(exc, f"read runtimeclass {name}") from None
    return found is not None


def can_i(
    api: Any, verb: str, resource: str, group: str = "", namespace: str | None = None, subresource: str = ""
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
    review = _request(
        api,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        f"review access to {verb} {resource}",
        body=body,
    )
    status = review.get("status") or {}
    return bool(status.get("allowed")), str(status.get("reason") or "")
