"""Revision history of the applied set (a ConfigMap owned by k3deploy, bounded), and the removal a rollback or
`down` runs.

Each successful rollout records the manifests it applied; a rollback (rollout/undo.py) re-applies the previous one
and removes what the failed one added, or removes what a failed first install applied, except the weight cache (PVC)
and the namespace that holds it. Nothing is deleted that does not carry k3deploy's ownership mark
(rollout/ownership.py): what someone else created is kept and named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

from k3deploy.errors import K3DeployError, UsageError
from k3deploy.kobject import JsonObject, KubeObject
from k3deploy.kube.api import object_key
from k3deploy.kube.port import KubePort
from k3deploy.reporter import Reporter
from k3deploy.rollout.contents import foreign_contents, named
from k3deploy.rollout.order import delete_order
from k3deploy.rollout.ownership import (
    KEPT_KINDS,
    history_name,
    identity,
    mark,
    owned,
    owned_by,
    release_of,
)
from k3deploy.targets.kubernetes.listing import namespace_contents

#: Revisions kept in the history ConfigMap (oldest dropped first); a set is ~20 KB, far below 1 MiB.
HISTORY_LIMIT = 5
HISTORY_KEY = "revisions.json"


def foreign_history(api: KubePort, namespace: str, deployment: str) -> KubeObject | None:
    """The ConfigMap of the history's name when someone else made it (no ownership mark), else None: k3deploy
    neither reads, writes nor deletes it."""
    found = api.get("v1", "ConfigMap", history_name(deployment), namespace)
    return None if found is None or owned_by(found, deployment, namespace) else found


def refuse_foreign_history(api: KubePort, namespace: str, deployment: str) -> None:
    """A UsageError (before anything is applied) when a ConfigMap k3deploy did not create has the history's name."""
    if foreign_history(api, namespace, deployment) is not None:
        raise UsageError(
            f"{namespace}/ConfigMap/{history_name(deployment)} exists and k3deploy did not create it (no ownership "
            "mark): k3deploy records its revisions under that name",
            hint="rename or delete that ConfigMap yourself, or deploy under another profile name",
        )


def read_history(api: KubePort, namespace: str, deployment: str) -> list[JsonObject]:
    """Recorded revisions, oldest first (empty when there is no history, no namespace yet, or the ConfigMap of that
    name is not k3deploy's)."""
    found = api.get("v1", "ConfigMap", history_name(deployment), namespace)
    if found is None or not owned_by(found, deployment, namespace):
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
    # Written over only when k3deploy made it: the mark is never put on a user's ConfigMap of that name.
    refuse_foreign_history(api, namespace, deployment)
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


def _holds_foreign(api: KubePort, namespace_obj: KubeObject, gone: list[KubeObject]) -> list[str]:
    """What the namespace holds that is not the release's (rollout/contents.py), which deleting it would delete too:
    every listable kind in it is listed; a namespace whose contents cannot be listed counts as holding something."""
    release, namespace = release_of(namespace_obj)
    try:
        listed = namespace_contents(api, namespace)
    except K3DeployError as exc:
        return [f"objects that cannot be listed ({exc.message})"]
    return foreign_contents(listed, release, namespace, gone)


def remove(
    api: KubePort,
    objects: list[KubeObject],
    reporter: Reporter,
    *,
    keep: frozenset[str] = KEPT_KINDS,
    label: str = "",
) -> Removal:
    """Delete the objects in reverse apply order, except the kinds in `keep` and what does not carry k3deploy's
    mark (kept and named); a marked Namespace is kept too while it holds something k3deploy did not create."""
    done = Removal()
    gone: list[KubeObject] = []
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
            reporter.note(f"  {label}kept {key}: k3deploy did not create it")
            continue
        others = named(_holds_foreign(api, obj, gone)) if kind == "Namespace" else ""
        if others:
            done.kept.append(f"{key} (it holds {others})")
            reporter.note(f"  {label}kept {key}: it holds {others}, which k3deploy did not create")
            continue
        if api.delete(api_version, kind, name, namespace or None):
            gone.append(live)
            done.deleted.append(f"deleted {key}")
            reporter.note(f"  {label}deleted {key}")
    return done
