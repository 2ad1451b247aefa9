"""Revision history of the applied set (a ConfigMap owned by k3deploy, bounded), and the removal a rollback or
`down` runs.

Each successful rollout records the manifests it applied; a rollback (rollout/undo.py) re-applies the previous one
and removes what the failed one added, or removes what a failed first install applied, except the weight cache (PVC)
and the namespace that holds it. Nothing is deleted that does not carry k3deploy's ownership mark
(rollout/ownership.py): what someone else created is kept and named.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from k3deploy.errors import K3DeployError
from k3deploy.kobject import JsonObject, KubeObject
from k3deploy.kube.api import object_key
from k3deploy.kube.port import KubePort
from k3deploy.rollout.order import delete_order
from k3deploy.rollout.ownership import (
    HELD_KINDS,
    KEPT_KINDS,
    foreign,
    history_name,
    identity,
    mark,
    owned,
    release_of,
)

#: Revisions kept in the history ConfigMap (oldest dropped first); a set is ~20 KB, far below 1 MiB.
HISTORY_LIMIT = 5
HISTORY_KEY = "revisions.json"


def read_history(api: KubePort, namespace: str, deployment: str) -> list[JsonObject]:
    """Recorded revisions, oldest first (empty when there is no history or no namespace yet)."""
    found = api.get("v1", "ConfigMap", history_name(deployment), namespace)
    if found is None:
        return []
    try:
        entries = json.loads((found.get("data") or {}).get(HISTORY_KEY) or "[]")
    except ValueError:
        return []
    return entries if isinstance(entries, list) else []


def bounded(entries: list[JsonObject], objects: list[KubeObject], now: str) -> tuple[list[JsonObject], int]:
    """History with `objects` as the newest revision (unless identical to it), cut to HISTORY_LIMIT; and its number."""
    if entries and entries[-1].get("objects") == objects:
        return entries, int(entries[-1]["revision"])
    number = int(entries[-1]["revision"]) + 1 if entries else 1
    entries = [*entries, {"revision": number, "appliedAt": now, "objects": objects}]
    return entries[-HISTORY_LIMIT:], number


def _write(api: KubePort, namespace: str, deployment: str, entries: list[JsonObject]) -> None:
    # Only k3deploy writes this ConfigMap (its name is k3deploy's), so it always carries the mark.
    labels, annotations = mark(deployment, namespace)
    api.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": history_name(deployment),
                "namespace": namespace,
                "labels": {
                    "app.kubernetes.io/managed-by": "k3deploy",
                    "app.kubernetes.io/instance": deployment,
                    **labels,
                },
                "annotations": annotations,
            },
            "data": {HISTORY_KEY: json.dumps(entries, sort_keys=True)},
        },
        force=True,
    )


def record_revision(api: KubePort, namespace: str, deployment: str, objects: list[KubeObject]) -> int:
    """Record `objects` as the live revision; returns its number (the same one when nothing changed)."""
    entries = read_history(api, namespace, deployment)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    updated, number = bounded(entries, objects, now)
    if updated is not entries:
        _write(api, namespace, deployment, updated)
    return number


def record_smoke(api: KubePort, namespace: str, deployment: str, verdict: JsonObject) -> None:
    """Attach a smoke verdict to the newest revision (shown by `status`)."""
    entries = read_history(api, namespace, deployment)
    if entries:
        entries[-1]["smoke"] = verdict
        _write(api, namespace, deployment, entries)


@dataclass
class Removal:
    """What a removal deleted, and what it kept because k3deploy did not create it (each with the reason)."""

    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def _holds_foreign(api: KubePort, namespace_obj: KubeObject) -> list[str]:
    """What the namespace holds that k3deploy did not create (Secrets, ConfigMaps, PVCs), which deleting it would
    delete too; a namespace whose contents cannot be listed counts as holding something."""
    release, namespace = release_of(namespace_obj)
    found: list[str] = []
    for kind in HELD_KINDS:
        try:
            items, _ = api.list("v1", kind, namespace)
        except K3DeployError as exc:
            return [f"{kind}s that cannot be listed ({exc.message})"]
        found += foreign(kind, items, release, namespace)
    return found


def remove(
    api: KubePort,
    objects: list[KubeObject],
    note: Callable[[str], None],
    *,
    keep: frozenset[str] = KEPT_KINDS,
    label: str = "",
) -> Removal:
    """Delete the objects in reverse apply order, except the kinds in `keep` and what does not carry k3deploy's
    mark (kept and named); a marked Namespace is kept too while it holds something k3deploy did not create."""
    done = Removal()
    for obj in delete_order(objects):
        if obj.get("kind") in keep:
            continue
        api_version, kind, namespace, name = identity(obj)
        key = object_key(obj)
        live = api.get(api_version, kind, name, namespace or None)
        if live is None:
            continue
        if not owned(live, obj):
            done.kept.append(f"{key} (k3deploy did not create it)")
            note(f"  {label}kept {key}: k3deploy did not create it")
            continue
        others = _holds_foreign(api, obj) if kind == "Namespace" else []
        if others:
            done.kept.append(f"{key} (it holds {', '.join(others)})")
            note(f"  {label}kept {key}: it holds {', '.join(others)}, which k3deploy did not create")
            continue
        if api.delete(api_version, kind, name, namespace or None):
            done.deleted.append(f"deleted {key}")
            note(f"  {label}deleted {key}")
    return done
