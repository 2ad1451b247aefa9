"""The API resource types the test API server serves: built-in groups plus those registered by CRD objects."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

#: Verbs of an ordinary namespaced or cluster-scoped resource, as discovery lists them.
CRUD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One resource (e.g. apps/v1 deployments): its names, scope, served versions and subresources."""

    group: str
    versions: tuple[str, ...]
    kind: str
    plural: str
    namespaced: bool = True
    subresources: frozenset[str] = frozenset({"status"})
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = CRUD_VERBS
    crd: bool = False
    printer_columns: tuple[dict, ...] = field(default=(), compare=False)
    #: A CRD's openAPIV3Schema per served version (none for built-ins and for open CRDs).
    schemas: dict[str, dict] = field(default_factory=dict, compare=False)

    def schema(self, version: str | None = None) -> dict | None:
        """The structural schema objects of `version` (default: the storage version) are held to, if any."""
        found = self.schemas.get(version or self.versions[0])
        return (
            None
            if found is None or (found.get("x-kubernetes-preserve-unknown-fields") and not found.get("properties"))
            else found
        )

    @property
    def singular(self) -> str:
        """Lower-case kind, as discovery's singularName."""
        return self.kind.lower()

    @property
    def key(self) -> tuple[str, str]:
        """(group, plural): how the store files objects, whatever version they were written in."""
        return (self.group, self.plural)

    @property
    def group_resource(self) -> str:
        """`plural` or `plural.group`, as Kubernetes names a resource in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_version(self, version: str | None = None) -> str:
        """The apiVersion string for `version` (default: the preferred one)."""
        version = version or self.versions[0]
        return f"{self.group}/{version}" if self.group else version

    @property
    def has_status(self) -> bool:
        """Whether writes to the main resource ignore `.status` (a status subresource exists)."""
        return "status" in self.subresources


def _t(
    group: str,
    versions: str,
    kind: str,
    plural: str,
    namespaced: bool = True,
    sub: str = "status",
    short: str = "",
    cats: str = "",
    verbs: tuple[str, ...] = CRUD_VERBS,
) -> ResourceType:
    return ResourceType(
        group,
        tuple(versions.split()),
        kind,
        plural,
        namespaced,
        frozenset(sub.split()),
        tuple(short.split()),
        tuple(cats.split()),
        verbs,
    )


BUILTINS: tuple[ResourceType, ...] = (
    _t("", "v1", "Namespace", "namespaces", False, "status finalize", "ns"),
    _t("", "v1", "Pod", "pods", True, "status log binding eviction", "po", "all"),
    _t("", "v1", "Service", "services", True, "status", "svc", "all"),
    _t("", "v1", "Endpoints", "endpoints", True, "", "ep"),
    _t("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True, ""),
    _t("", "v1", "ConfigMap", "configmaps", True, "", "cm"),
    _t("", "v1", "Secret", "secrets", True, ""),
    _t("", "v1", "ServiceAccount", "serviceaccounts", True, "", "sa"),
    _t("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, "status", "pvc"),
    _t("", "v1", "PersistentVolume", "persistentvolumes", False, "status", "pv"),
    _t("", "v1", "Node", "nodes", False, "status", "no"),
    _t("", "v1", "Event", "events", True, "", "ev"),
    _t("", "v1", "ResourceQuota", "resourcequotas", True, "status", "quota"),
    _t("apps", "v1", "Deployment", "deployments", True, "status scale", "deploy", "all"),
    _t("apps", "v1", "StatefulSet", "statefulsets", True, "status scale", "sts", "all"),
    _t("apps", "v1", "DaemonSet", "daemonsets", True, "status", "ds", "all"),
    _t("apps", "v1", "ReplicaSet", "replicasets", True, "status scale", "rs", "all"),
    _t("apps", "v1", "ControllerRevision", "controllerrevisions", True, ""),
    _t("batch", "v1", "Job", "jobs", True, "status", "", "all"),
    _t("batch", "v1", "CronJob", "cronjobs", True, "status", "cj", "all"),
    _t("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, "status", "pdb"),
    _t("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, "", "netpol"),
    _t("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, "", "sc"),
    _t("storage.k8s.io", "v1", "CSIDriver", "csidrivers", False, ""),
    _t("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False, ""),
    _t("rbac.authorization.k8s.io", "v1", "Role", "roles", True, ""),
    _t("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True, ""),
    _t("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, ""),
    _t("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False, ""),
    _t(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        False,
        "",
        verbs=("create",),
    ),
    _t("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False, "", verbs=("create",)),
    _t("coordination.k8s.io", "v1", "Lease", "leases", True, ""),
    _t(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        "status",
        "crd crds",
    ),
    _t("events.k8s.io", "v1", "Event", "events", True, "", "ev"),
)

#: Dynamic Resource Allocation is served (on by default) from Kubernetes 1.34.
DRA_TYPES: tuple[ResourceType, ...] = (
    _t("resource.k8s.io", "v1 v1beta2 v1beta1", "ResourceClaimTemplate", "resourceclaimtemplates", True, ""),
    _t("resource.k8s.io", "v1 v1beta2 v1beta1", "ResourceClaim", "resourceclaims", True, "status"),
    _t("resource.k8s.io", "v1 v1beta2 v1beta1", "DeviceClass", "deviceclasses", False, ""),
    _t("resource.k8s.io", "v1 v1beta2 v1beta1", "ResourceSlice", "resourceslices", False, ""),
)


def crd_types(crd: dict) -> ResourceType:
    """The resource type a CustomResourceDefinition object declares (served versions, storage version first)."""
    spec = crd["spec"]
    names = spec["names"]
    served = [v for v in spec.get("versions", []) if v.get("served", True)]
    served.sort(key=lambda v: not v.get("storage", False))
    subresources: set[str] = set()
    for v in served:
        subresources.update((v.get("subresources") or {}).keys())
    columns = tuple((served[0].get("additionalPrinterColumns") or []) if served else [])
    return ResourceType(
        group=spec["group"],
        versions=tuple(v["name"] for v in served),
        kind=names["kind"],
        plural=names["plural"],
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        subresources=frozenset(subresources),
        short_names=tuple(names.get("shortNames", [])),
        categories=tuple(names.get("categories", [])),
        crd=True,
        printer_columns=columns,
        schemas={v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") or {} for v in served},
    )


class Registry:
    """The served resource types; changes when CRDs come and go or the server version changes."""

    def __init__(self, minor: int = 34) -> None:
        self._lock = threading.RLock()
        self._types: dict[tuple[str, str], ResourceType] = {}
        self.set_minor(minor)

    def set_minor(self, minor: int) -> None:
        """Serve what a Kubernetes 1.<minor> server serves (resource.k8s.io only from 1.34)."""
        with self._lock:
            crds = {k: t for k, t in self._types.items() if t.crd}
            self._types = {t.key: t for t in BUILTINS}
            if minor >= 34:
                self._types.update({t.key: t for t in DRA_TYPES})
            self._types.update(crds)

    def add(self, rtype: ResourceType) -> None:
        """Serve `rtype` (replacing any type with the same group and plural)."""
        with self._lock:
            self._types[rtype.key] = rtype

    def remove(self, key: tuple[str, str]) -> None:
        """Stop serving the type filed under (group, plural)."""
        with self._lock:
            self._types.pop(key, None)

    def all(self) -> list[ResourceType]:
        """Every served type."""
        with self._lock:
            return list(self._types.values())

    def by_key(self, key: tuple[str, str]) -> ResourceType | None:
        """The type filed under (group, plural), if served."""
        with self._lock:
            return self._types.get(key)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at /apis/<group>/<version>/<plural>, if any."""
        rtype = self.by_key((group, plural))
        return rtype if rtype is not None and version in rtype.versions else None

    def groups(self) -> dict[str, list[str]]:
        """{group: [versions, preferred first]} of every served non-core group, in a stable order."""
        out: dict[str, list[str]] = {}
        for rtype in sorted(self.all(), key=lambda t: (t.crd, t.group)):
            if not rtype.group:
                continue
            versions = out.setdefault(rtype.group, [])
            for version in rtype.versions:
                if version not in versions:
                    versions.append(version)
        return out

    def in_version(self, group: str, version: str) -> list[ResourceType]:
        """Types served in one group/version."""
        return [t for t in self.all() if t.group == group and version in t.versions]

    def resolve(self, ref: str | ResourceType) -> ResourceType:
        """A type from a plural (`pods`), `plural.group`, kind (`LeaderWorkerSet`) or short name; KeyError if none."""
        if isinstance(ref, ResourceType):
            return ref
        types = self.all()
        for rtype in types:
            if ref in (rtype.plural, rtype.group_resource, rtype.kind) or ref in rtype.short_names:
                # The core group wins a name clash (events in "" and events.k8s.io).
                core = [t for t in types if t.group == "" and ref in (t.plural, t.kind)]
                return core[0] if core else rtype
        raise KeyError(f"no served resource type named {ref!r}")
