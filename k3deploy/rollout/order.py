"""The order objects are applied in (and deleted in, reversed), grouped into phases the rollout waits between.

Pure: objects are raw dicts, ranked by their place in the rendered set (render/manifests.py SET). Apply order: namespace, identities, config, the node-preflight Job (waited to
completion: a GPU node that fails its checks stops the rollout before anything heavy starts), storage,
ComputeDomain, the prefetch Job (waited to completion before any serving pod starts), the LeaderWorkerSet and
what fronts it, and the smoke Job last.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from k3deploy.kobject import KubeObject
from k3deploy.render.manifests import (
    COMPONENT_LABEL,
    NODE_PREFLIGHT_COMPONENT,
    PREFETCH_COMPONENT,
    SMOKE_COMPONENT,
    set_position,
)

#: Positions in the set (render/manifests.py SET, the one encoding of the order) the phases split at.
PREFETCH_RANK = set_position("Job", PREFETCH_COMPONENT)
SMOKE_RANK = set_position("Job", SMOKE_COMPONENT)
#: Objects the set does not name go after the serving objects, before the smoke Job.
UNKNOWN_RANK = SMOKE_RANK - 1 if SMOKE_RANK is not None else 0
#: Roles of the set's Jobs: their component label, set explicitly by each Job's template.
JOB_ROLES = (NODE_PREFLIGHT_COMPONENT, PREFETCH_COMPONENT, SMOKE_COMPONENT)
#: Phases whose Jobs are waited to completion before the next phase is applied.
WAITED_PHASES = frozenset({NODE_PREFLIGHT_COMPONENT, PREFETCH_COMPONENT})


def _component(obj: KubeObject) -> str | None:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(COMPONENT_LABEL)


def job_role(obj: KubeObject) -> str | None:
    """'node-preflight', 'prefetch' or 'smoke' for the Jobs of the set (their component label), else None."""
    if obj.get("kind") != "Job":
        return None
    component = _component(obj)
    return component if component in JOB_ROLES else None


def rank(obj: KubeObject) -> int:
    """Position of an object in apply order: its place in the rendered set."""
    position = set_position(str(obj.get("kind", "")), _component(obj))
    return position if position is not None else UNKNOWN_RANK


def _set_rank(obj: KubeObject) -> tuple[int, str]:
    """Rank, then name among objects of one place in the set (the two NetworkPolicies share one component)."""
    position = set_position(str(obj.get("kind", "")), _component(obj))
    return (position, str((obj.get("metadata") or {}).get("name", ""))) if position is not None else (UNKNOWN_RANK, "")


def apply_order(objects: list[KubeObject]) -> list[KubeObject]:
    """The objects in apply order (stable: objects the set does not name keep their order among themselves)."""
    return sorted(objects, key=_set_rank)


def delete_order(objects: list[KubeObject]) -> list[KubeObject]:
    """The objects in delete order: apply order reversed."""
    return list(reversed(apply_order(objects)))


@dataclass
class Phase:
    """Objects applied together, then waited on before the next phase starts."""

    name: str
    objects: list[KubeObject] = field(default_factory=list)


def _phase_name(obj: KubeObject) -> str:
    role = job_role(obj)
    if role in WAITED_PHASES or role == SMOKE_COMPONENT:
        return str(role)
    position = rank(obj)
    if PREFETCH_RANK is not None and position < PREFETCH_RANK:
        return "prerequisites"
    return "serving" if SMOKE_RANK is None or position < SMOKE_RANK else "smoke"


def phases(objects: list[KubeObject]) -> list[Phase]:
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
