"""The PersistentVolumeClaims a waited object's pods mount (pure): the waiter reads claims only for such objects
(rollout/claims.py) and the access review asks for what that reading needs (preflight/access.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from k3deploy.kobject import KubeObject


def pod_specs(obj: KubeObject) -> list[KubeObject]:
    """The pod specs of a waited object: a Job's template, a LeaderWorkerSet's leader and worker templates."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Job":
        return [(spec.get("template") or {}).get("spec") or {}]
    if obj.get("kind") == "LeaderWorkerSet":
        templates = spec.get("leaderWorkerTemplate") or {}
        return [(templates.get(t) or {}).get("spec") or {} for t in ("leaderTemplate", "workerTemplate")]
    return []


def claim_names(pod_spec: KubeObject) -> list[str]:
    """The claims a pod spec mounts (spec.volumes[].persistentVolumeClaim.claimName), each once, in order."""
    names = [str((v.get("persistentVolumeClaim") or {}).get("claimName") or "") for v in pod_spec.get("volumes") or []]
    return list(dict.fromkeys(n for n in names if n))


def mounts_claims(objects: Iterable[KubeObject]) -> bool:
    """Whether the pods of any of `objects` mount a PersistentVolumeClaim (so the waiter reads claims)."""
    return any(claim_names(spec) for obj in objects for spec in pod_specs(obj))


def every_pod_spec(obj: Any) -> list[KubeObject]:
    """Every pod spec inside a rendered object, whatever its kind: each map with a `containers` list (a Pod's spec,
    a Job's, Deployment's or LeaderWorkerSet's template spec)."""
    found: list[KubeObject] = []
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list):
            found.append(obj)
        for value in obj.values():
            found += every_pod_spec(value)
    elif isinstance(obj, list):
        for item in obj:
            found += every_pod_spec(item)
    return found


def repeated_claims(pod_spec: KubeObject) -> list[str]:
    """Claims the pod spec names in more than one volume: kubelets before 1.35 never finish mounting such a pod
    (kubernetes/kubernetes#127004, fixed by #122140 in v1.35.0-alpha.1), and one volume's readOnly wins for both."""
    names = [str((v.get("persistentVolumeClaim") or {}).get("claimName") or "") for v in pod_spec.get("volumes") or []]
    return sorted({n for n in names if n and names.count(n) > 1})
