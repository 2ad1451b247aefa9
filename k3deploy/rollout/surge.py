"""What a LeaderWorkerSet rollout costs in serving capacity. Pure: objects are raw dicts."""

from __future__ import annotations

from k3deploy.kobject import KubeObject


def in_place_note(obj: KubeObject, action: str) -> str | None:
    """A warning when applying `obj` replaces its only group in place: a LeaderWorkerSet that was just configured
    (not created) with one replica and maxSurge 0 takes its group down before the new one starts, so the endpoint
    serves nothing until the new group has loaded the weights. None for anything else."""
    if obj.get("kind") != "LeaderWorkerSet" or action != "configured":
        return None
    spec = obj.get("spec") or {}
    rolling = (spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {}
    replicas, surge = spec.get("replicas", 1), rolling.get("maxSurge", 0)
    if replicas != 1 or surge not in (0, "0", "0%"):
        return None
    name = (obj.get("metadata") or {}).get("name", "")
    return (
        f"note: LeaderWorkerSet {name} has one replica and maxSurge 0: a changed pod template replaces the group in "
        "place, so the endpoint is down until the new group has loaded the weights (an hour or more); a second "
        "free clique would let a surge group load first"
    )
