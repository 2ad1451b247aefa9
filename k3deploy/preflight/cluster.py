"""Probe a cluster: the facts preflight checks, read through k3deploy/kube (the only user of `kubernetes`).

Every read is one of `KubeApi`'s looks (kube/api.py: one retry, bounded, no API discovery); what is here makes
the answers into facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from k3deploy.errors import KubeError
from k3deploy.kobject import KubeObject
from k3deploy.kube.api import KubeApi
from k3deploy.kube.options import KubeOptions
from k3deploy.kube.port import KubePort
from k3deploy.kube.workloads import controller_workloads
from k3deploy.lws import NAME_LABEL, colours
from k3deploy.preflight.access import Access
from k3deploy.preflight.checks_cluster import CRD_GROUPS
from k3deploy.preflight.facts import (
    AccessFacts,
    ClaimFacts,
    ClusterFacts,
    KueueFacts,
    NodeFacts,
    parse_nodes,
)
from k3deploy.preflight.kueue import kueue_facts
from k3deploy.preflight.versions import installed_versions
from k3deploy.profile.model import Profile
from k3deploy.profile.object_names import model_cache_name

_REVIEW_WORKERS = 8
#: Pods that still hold resources: those neither Succeeded nor Failed.
_ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
_DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def nodes(api: KubePort) -> list[KubeObject]:
    """Every node, raw."""
    return list(api.look("list nodes", "v1", "nodes").get("items") or [])


def active_pods(api: KubePort) -> list[KubeObject]:
    """Pods of all namespaces that still hold resources (not Succeeded or Failed), raw."""
    return list(api.look("list pods", "v1", "pods", field_selector=_ACTIVE_PODS).get("items") or [])


def namespace_labels(api: KubePort, name: str) -> dict[str, str] | None:
    """The namespace's labels (Pod Security Admission reads its level there); None when it does not exist."""
    namespace = api.look(f"read namespace {name}", "v1", "namespaces", name, missing_ok=True)
    if namespace is None:
        return None
    return dict((namespace.get("metadata") or {}).get("labels") or {})


def secret_keys(api: KubePort, namespace: str, name: str) -> list[str] | None:
    """The data keys of a Secret (values are never kept); None when it does not exist."""
    secret = api.look(f"read secret {namespace}/{name}", "v1", "secrets", name, namespace=namespace, missing_ok=True)
    if secret is None:
        return None
    return sorted({*(secret.get("data") or {}), *(secret.get("stringData") or {})})


def storage_classes(api: KubePort) -> tuple[list[str], str | None, dict[str, str]]:
    """Names of the StorageClasses, the default one (None when no class is marked default), each one's provisioner."""
    items = api.look("list storage classes", "storage.k8s.io/v1", "storageclasses").get("items") or []
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


def persistent_volume_claim(api: KubePort, namespace: str, name: str) -> KubeObject | None:
    """A PersistentVolumeClaim as a dict; None when it does not exist."""
    found: KubeObject | None = api.look(
        f"read persistentvolumeclaim {namespace}/{name}",
        "v1",
        "persistentvolumeclaims",
        name,
        namespace=namespace,
        missing_ok=True,
    )
    return found


def runtime_class_exists(api: KubePort, name: str) -> bool | None:
    """Whether a RuntimeClass (node.k8s.io/v1, cluster-scoped) exists; None when this user may not read it."""
    try:
        found = api.look(f"read runtimeclass {name}", "node.k8s.io/v1", "runtimeclasses", name, missing_ok=True)
    except KubeError as exc:
        if exc.status == 403:
            return None
        raise
    return found is not None


def _review(api: KubePort, need: Access, namespace: str) -> AccessFacts:
    """Ask the API server whether this user may do `need`."""
    where = namespace if need.namespaced else None
    allowed, reason = api.can_i(need.verb, need.resource, need.group, where, need.subresource)
    resource = f"{need.resource}/{need.subresource}" if need.subresource else need.resource
    return AccessFacts(
        verb=need.verb, resource=resource, group=need.group, namespace=where, allowed=allowed, reason=reason
    )


def others_pods(pods: list[KubeObject], profile: Profile, namespace: str) -> list[KubeObject]:
    """Pods not of this deployment (either blue-green colour): an upgrade replaces our own group, so its GPUs count
    as free."""

    def ours(pod: KubeObject) -> bool:
        meta = pod.get("metadata") or {}
        return meta.get("namespace") == namespace and (meta.get("labels") or {}).get(NAME_LABEL) in colours(
            profile.name
        )

    return [pod for pod in pods if not ours(pod)]


def placement_nodes(profile: Profile, options: KubeOptions) -> list[NodeFacts]:
    """The GPU nodes and what other pods hold on them: all `plan --cluster` reads (exit 3 when it cannot)."""
    api = KubeApi(options)
    try:
        namespace = options.namespace or profile.kubernetes.namespace
        return parse_nodes(nodes(api), others_pods(active_pods(api), profile, namespace))
    finally:
        api.close()


def _claim(pvc: KubeObject) -> ClaimFacts:
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    capacity = (status.get("capacity") or {}).get("storage") or (
        (spec.get("resources") or {}).get("requests") or {}
    ).get("storage")
    return ClaimFacts(
        name=pvc["metadata"]["name"],
        access_modes=list(spec.get("accessModes") or []),
        storage_class=spec.get("storageClassName"),
        capacity=capacity,
        phase=status.get("phase"),
    )


def _installed(api: KubePort) -> dict[str, str] | None:
    """The LWS controller's and the DRA driver's versions, from their workloads (None: none could be read)."""
    workloads = controller_workloads(api)
    return None if workloads is None else installed_versions(workloads)


def _kueue(
    api: KubePort, profile: Profile, namespace: str, exists: bool, objects: Sequence[KubeObject]
) -> KueueFacts | None:
    """Kueue's setup when the groups may go through it (gang_admission kueue, or auto still to be decided)."""
    if profile.kubernetes.gang_admission not in ("kueue", "auto"):
        return None
    lws = next((o for o in objects if o.get("kind") == "LeaderWorkerSet"), None)
    return kueue_facts(api, profile, namespace, lws if exists else None)


def cluster_facts(
    profile: Profile, options: KubeOptions, needs: Sequence[Access], objects: Sequence[KubeObject] = ()
) -> ClusterFacts:
    """Everything the cluster checks need; EnvironmentProblem (exit 3) when the API cannot be reached or read.
    The access review asks the API server about each of `needs` (rollout/access.py `command_access`: what the
    command's set and plan use)."""
    api = KubeApi(options)
    try:
        namespace = options.namespace or profile.kubernetes.namespace
        version = api.server_version()
        labels = namespace_labels(api, namespace)
        exists = labels is not None
        # Thirty-odd independent reviews: in parallel, so a distant API server costs one round trip, not thirty.
        with ThreadPoolExecutor(max_workers=_REVIEW_WORKERS) as pool:
            access = list(pool.map(lambda need: _review(api, need, namespace), needs))
        if not exists:
            allowed, reason = api.can_i("create", "namespaces")
            access.append(AccessFacts(verb="create", resource="namespaces", allowed=allowed, reason=reason))
        secret = profile.kubernetes.hf_token_secret
        classes, default, provisioners = storage_classes(api)
        runtime = profile.kubernetes.runtime_class
        claim = persistent_volume_claim(api, namespace, model_cache_name(profile)) if exists else None
        return ClusterFacts(
            server_version=version,
            resources=api.served_resources(CRD_GROUPS),
            nodes=parse_nodes(nodes(api), others_pods(active_pods(api), profile, namespace)),
            namespace=namespace,
            namespace_exists=exists,
            namespace_labels=labels or {},
            secret_name=secret.name if secret else None,
            secret_keys=secret_keys(api, namespace, secret.name) if secret and exists else None,
            storage_classes=classes,
            default_storage_class=default,
            access=access,
            storage_provisioners=provisioners,
            runtime_class_exists=runtime_class_exists(api, runtime) if runtime is not None else None,
            model_cache_claim=_claim(claim) if claim is not None else None,
            installed_versions=_installed(api),
            kueue=_kueue(api, profile, namespace, exists, objects),
        )
    finally:
        api.close()
