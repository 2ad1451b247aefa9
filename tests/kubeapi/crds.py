"""The CustomResourceDefinitions k3deploy needs (LeaderWorkerSet, ComputeDomain, ServiceMonitor), with the real
groups, names, scopes and subresources and an open schema.
"""

from __future__ import annotations

_OPEN = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


def crd(group: str, version: str, kind: str, plural: str, *, short: list[str] | None = None,
        status: bool = True, scale: dict | None = None, columns: list[dict] | None = None,
        categories: list[str] | None = None) -> dict:
    """An apiextensions.k8s.io/v1 CustomResourceDefinition for one served, stored version."""
    subresources: dict = {}
    if status:
        subresources["status"] = {}
    if scale:
        subresources["scale"] = scale
    names = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
    if short:
        names["shortNames"] = short
    if categories:
        names["categories"] = categories
    served = {"name": version, "served": True, "storage": True, "schema": _OPEN, "subresources": subresources}
    if columns:
        served["additionalPrinterColumns"] = columns
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "names": names, "scope": "Namespaced", "versions": [served]}}


def leaderworkerset() -> dict:
    """leaderworkersets.leaderworkerset.x-k8s.io (v1), with its printer columns and scale subresource."""
    return crd("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", "leaderworkersets", short=["lws"],
               scale={"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                      "labelSelectorPath": ".status.hpaPodSelector"},
               columns=[{"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
                        {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
                        {"name": "Up-to-date", "type": "integer", "jsonPath": ".status.updatedReplicas"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}])


def compute_domain() -> dict:
    """computedomains.resource.nvidia.com (v1beta1)."""
    return crd("resource.nvidia.com", "v1beta1", "ComputeDomain", "computedomains", short=["cd"])


def service_monitor() -> dict:
    """servicemonitors.monitoring.coreos.com (v1), which has no status subresource."""
    return crd("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors", short=["smon"], status=False,
               categories=["prometheus-operator"])
