"""The order objects are applied in (and deleted in, reversed), grouped into phases the rollout waits between.

Pure: objects are raw dicts. Apply order: namespace, identities, config, the node-preflight Job (waited to
completion: a GPU node that fails its checks stops the rollout before anything heavy starts), storage,
ComputeDomain, the prefetch Job (waited to completion before any serving pod starts), the LeaderWorkerSet and
what fronts it, and the smoke Job last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Rank of each kind in apply order; kinds not listed go after the serving objects, before the smoke Job.
KIND_RANK: dict[str, int] = {
    "Namespace": 0,
    "ResourceQuota": 1,
    "LimitRange": 1,
    "NetworkPolicy": 1,
    "ServiceAccount": 2,
    "Secret": 3,
    "ConfigMap": 4,
    "ClusterRole": 6,
    "Role": 6,
    "ClusterRoleBinding": 7,
    "RoleBinding": 7,
    "PersistentVolumeClaim": 8,
    "ResourceClaimTemplate": 9,
    "ComputeDomain": 10,
    "LeaderWorkerSet": 20,
    "Service": 21,
    "PodDisruptionBudget": 22,
    "ServiceMonitor": 23,
    "PrometheusRule": 23,
}
#: The Grafana dashboard is a ConfigMap, but part of the monitoring that follows the serving objects.
DASHBOARD_COMPONENT = "dashboard"
NODE_PREFLIGHT_RANK = 5
PREFETCH_RANK = 11
UNKNOWN_RANK = 24
SMOKE_RANK = 30

#: The label that tells the set's Jobs apart (names are the fallback).
COMPONENT_LABEL = "app.kubernetes.io/component"
#: Job roles, most specific first, and their rank.
JOB_RANKS: dict[str, int] = {"node-preflight": NODE_PREFLIGHT_RANK, "prefetch": PREFETCH_RANK, "smoke": SMOKE_RANK}
#: Phases whose Jobs are waited to completion before the next phase is applied.
WAITED_PHASES = frozenset(JOB_RANKS) - {"smoke"}


def job_role(obj: dict[str, Any]) -> str | None:
    """'node-preflight', 'prefetch' or 'smoke' for the Jobs of the set (by component label, else name), else None."""
    if obj.get("kind") != "Job":
        return None
    meta = obj.get("metadata", {})
    component = (meta.get("labels") or {}).get(COMPONENT_LABEL, "")
    name = meta.get("name", "")
    for role in JOB_RANKS:
        if role in component or role in name:
            return role
    return None


def rank(obj: dict[str, Any]) -> int:
    """Position of an object's kind in apply order."""
    role = job_role(obj)
    if role is not None:
        return JOB_RANKS[role]
    if obj.get("kind") == "ConfigMap" and (obj.get("metadata", {}).get("labels") or {}).get(COMPONENT_LABEL) == DASHBOARD_COMPONENT:
        return KIND_RANK["ServiceMonitor"]
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


def _phase_name(obj: dict[str, Any]) -> str:
    if job_role(obj) == "node-preflight":
        return "node-preflight"
    position = rank(obj)
    if position < PREFETCH_RANK:
        return "prerequisites"
    if position == PREFETCH_RANK:
        return "prefetch"
    return "serving" if position < SMOKE_RANK else "smoke"


def phases(objects: list[dict[str, Any]]) -> list[Phase]:
    """Split the set, in apply order, into runs of prerequisites, node-preflight, prefetch, serving and smoke.

    The node-preflight Job sits inside the prerequisites (right after the profile ConfigMap it reads), so a
    set with it has two prerequisites phases around it; one without it has the four phases it always had.
    """
    split: list[Phase] = []
    for obj in apply_order(objects):
        name = _phase_name(obj)
        if not split or split[-1].name != name:
            split.append(Phase(name))
        split[-1].objects.append(obj)
    return split
