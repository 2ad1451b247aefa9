"""The order objects are applied in (and deleted in, reversed), grouped into phases the rollout waits between.

Pure: objects are raw dicts. Apply order: namespace, identities, config, storage, ComputeDomain, the
prefetch Job (waited to completion before any serving pod starts), the LeaderWorkerSet and what fronts it,
and the smoke Job last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Rank of each kind in apply order; kinds not listed go after the serving objects, before the smoke Job.
KIND_RANK: dict[str, int] = {
    "Namespace": 0,
    "ResourceQuota": 1,
    "LimitRange": 1,
    "ServiceAccount": 2,
    "Secret": 3,
    "ConfigMap": 4,
    "ClusterRole": 5,
    "Role": 5,
    "ClusterRoleBinding": 6,
    "RoleBinding": 6,
    "PersistentVolumeClaim": 7,
    "ResourceClaimTemplate": 8,
    "ComputeDomain": 9,
    "LeaderWorkerSet": 20,
    "Service": 21,
    "PodDisruptionBudget": 22,
    "ServiceMonitor": 23,
}
PREFETCH_RANK = 10
UNKNOWN_RANK = 24
SMOKE_RANK = 30

#: The label that tells a prefetch Job from a smoke Job (names are the fallback).
COMPONENT_LABEL = "app.kubernetes.io/component"


def job_role(obj: dict[str, Any]) -> str | None:
    """'prefetch' or 'smoke' for the two Jobs of the set (by component label, else by name), else None."""
    if obj.get("kind") != "Job":
        return None
    meta = obj.get("metadata", {})
    component = (meta.get("labels") or {}).get(COMPONENT_LABEL, "")
    name = meta.get("name", "")
    for role in ("prefetch", "smoke"):
        if role in component or role in name:
            return role
    return None


def rank(obj: dict[str, Any]) -> int:
    """Position of an object's kind in apply order."""
    role = job_role(obj)
    if role == "prefetch":
        return PREFETCH_RANK
    if role == "smoke":
        return SMOKE_RANK
    return KIND_RANK.get(obj.get("kind", ""), UNKNOWN_RANK)


def apply_order(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects in apply order (stable: equal ranks keep their rendered order)."""
    return sorted(objects, key=rank)


def delete_order(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects in delete order: apply order reversed."""
    return list(reversed(apply_order(objects)))


@dataclass
class Phase:
    """Objects applied together, then waited on before the next phase starts."""

    name: str
    objects: list[dict[str, Any]] = field(default_factory=list)


def phases(objects: list[dict[str, Any]]) -> list[Phase]:
    """Split the set into prerequisites, prefetch, serving and smoke (empty phases dropped)."""
    buckets = {"prerequisites": Phase("prerequisites"), "prefetch": Phase("prefetch"),
               "serving": Phase("serving"), "smoke": Phase("smoke")}
    for obj in apply_order(objects):
        position = rank(obj)
        if position < PREFETCH_RANK:
            buckets["prerequisites"].objects.append(obj)
        elif position == PREFETCH_RANK:
            buckets["prefetch"].objects.append(obj)
        elif position < SMOKE_RANK:
            buckets["serving"].objects.append(obj)
        else:
            buckets["smoke"].objects.append(obj)
    return [phase for phase in buckets.values() if phase.objects]
