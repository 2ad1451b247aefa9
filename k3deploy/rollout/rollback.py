"""Revision history of the applied set (a ConfigMap owned by k3deploy, bounded) and restoring from it.

Each successful rollout records the manifests it applied. A failed upgrade re-applies the previous
revision (taking its fields back with force) and deletes what the new one added; a failed first install
deletes what it applied, except the weight cache (PVC) and the namespace that holds it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from k3deploy.kube.api import KubeApi, object_key
from k3deploy.rollout.apply import apply_objects
from k3deploy.rollout.order import apply_order, delete_order

#: Revisions kept in the history ConfigMap (oldest dropped first); a set is ~20 KB, far below 1 MiB.
HISTORY_LIMIT = 5
HISTORY_KEY = "revisions.json"
#: Kinds a rollback or a plain `down` never deletes: the weight cache and the namespace that holds it.
KEPT_KINDS = frozenset({"PersistentVolumeClaim", "Namespace"})


def history_name(deployment: str) -> str:
    """Name of the history ConfigMap of a deployment."""
    return f"{deployment}-k3deploy-revisions"


def read_history(api: KubeApi, namespace: str, deployment: str) -> list[dict[str, Any]]:
    """Recorded revisions, oldest first (empty when there is no history or no namespace yet)."""
    found = api.get("v1", "ConfigMap", history_name(deployment), namespace)
    if found is None:
        return []
    try:
        entries = json.loads((found.get("data") or {}).get(HISTORY_KEY) or "[]")
    except ValueError:
        return []
    return entries if isinstance(entries, list) else []


def _identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj.get("metadata", {})
    return (obj.get("apiVersion", ""), obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", ""))


def bounded(entries: list[dict[str, Any]], objects: list[dict[str, Any]], now: str) -> tuple[list[dict[str, Any]], int]:
    """History with `objects` as the newest revision (unless identical to it), cut to HISTORY_LIMIT; and its number."""
    if entries and entries[-1].get("objects") == objects:
        return entries, int(entries[-1]["revision"])
    number = int(entries[-1]["revision"]) + 1 if entries else 1
    entries = [*entries, {"revision": number, "appliedAt": now, "objects": objects}]
    return entries[-HISTORY_LIMIT:], number


def _write(api: KubeApi, namespace: str, deployment: str, entries: list[dict[str, Any]]) -> None:
    api.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": history_name(deployment),
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "k3deploy", "app.kubernetes.io/instance": deployment},
            },
            "data": {HISTORY_KEY: json.dumps(entries, sort_keys=True)},
        },
        force=True,
    )


def record_revision(api: KubeApi, namespace: str, deployment: str, objects: list[dict[str, Any]]) -> int:
    """Record `objects` as the live revision; returns its number (the same one when nothing changed)."""
    entries = read_history(api, namespace, deployment)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    updated, number = bounded(entries, objects, now)
    if updated is not entries:
        _write(api, namespace, deployment, updated)
    return number


def record_smoke(api: KubeApi, namespace: str, deployment: str, verdict: dict[str, Any]) -> None:
    """Attach a smoke verdict to the newest revision (shown by `status`)."""
    entries = read_history(api, namespace, deployment)
    if entries:
        entries[-1]["smoke"] = verdict
        _write(api, namespace, deployment, entries)


def restore(
    api: KubeApi, previous: list[dict[str, Any]], current: list[dict[str, Any]], note: Callable[[str], None]
) -> list[str]:
    """Re-apply the previous revision and delete what only the current one has (weights kept); what was done."""
    done = []
    for applied in apply_objects(api, apply_order(previous), force=True):
        if applied.changed:
            done.append(f"{applied.action} {applied.key}")
            note(f"  rollback: {applied.action} {applied.key}")
    kept = {_identity(obj) for obj in previous}
    added = [obj for obj in current if _identity(obj) not in kept]
    return done + remove(api, added, note, label="rollback: ")


def remove(
    api: KubeApi,
    objects: list[dict[str, Any]],
    note: Callable[[str], None],
    *,
    keep: frozenset[str] = KEPT_KINDS,
    label: str = "",
) -> list[str]:
    """Delete the objects in reverse apply order, except the kinds in `keep`; what was deleted (noted after `label`)."""
    done = []
    for obj in delete_order(objects):
        if obj.get("kind") in keep:
            continue
        api_version, kind, namespace, name = _identity(obj)
        if api.delete(api_version, kind, name, namespace or None):
            done.append(f"deleted {object_key(obj)}")
            note(f"  {label}deleted {object_key(obj)}")
    return done
