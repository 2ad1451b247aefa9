"""Server-side apply of the rendered set (field manager `k3deploy`), server dry run, diffs against live.

An object whose resourceVersion did not move was unchanged; a Job whose pod template changed (immutable)
or that failed is re-created; a conflict with another field manager names the owner. Any other object whose
change touches an immutable field (a ComputeDomain's spec) is not deleted behind the user's back: the workers
use it while it exists, so the error names the object and field and says to take the deployment down first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from k3deploy.errors import CheckFailed, UsageError
from k3deploy.kube.api import KubeApi, object_key
from k3deploy.kube.errors import KubeError
from k3deploy.rollout.changes import conflicts, describe_conflicts, immutable_fields, same, unified_diff
from k3deploy.rollout.readiness import job_readiness


@dataclass(frozen=True)
class Applied:
    """What one apply did to one object: created, configured, replaced or unchanged."""

    key: str
    action: str
    obj: dict[str, Any]

    @property
    def changed(self) -> bool:
        """True unless the object was already as desired."""
        return self.action != "unchanged"


def _server_apply(api: KubeApi, obj: dict[str, Any], *, force: bool, dry_run: bool) -> dict[str, Any]:
    """One apply call; a 409 becomes a CheckFailed naming the owning manager of each contested field."""
    try:
        return api.apply(obj, force=force, dry_run=dry_run)
    except KubeError as exc:
        if exc.status == 409:
            raise CheckFailed(
                describe_conflicts(object_key(obj), conflicts(exc.body)),
                hint="re-run with --force-conflicts to take these fields over for k3deploy, or undo the other change",
            ) from None
        raise


def apply_object(api: KubeApi, obj: dict[str, Any], *, force: bool = False, dry_run: bool = False) -> Applied:
    """Apply one object and say what happened to it."""
    key = object_key(obj)
    meta = obj["metadata"]
    live = api.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    if live is not None and obj["kind"] == "Job" and job_readiness(live).failed and not dry_run:
        # A failed Job never runs again by itself: a re-run of the rollout gets a fresh one.
        api.delete(obj["apiVersion"], "Job", meta["name"], meta.get("namespace"))
        return Applied(key, "replaced", _server_apply(api, obj, force=force, dry_run=False))
    try:
        result = _server_apply(api, obj, force=force, dry_run=dry_run)
    except KubeError as exc:
        frozen = immutable_fields(exc.body) if exc.status == 422 and live is not None else []
        if frozen and obj["kind"] != "Job":
            raise UsageError(
                f"apply {key}: {', '.join(frozen)} cannot change in place: {exc.body.get('message', '')}",
                hint=f"the live {obj['kind']} was made from other settings; run `k3deploy down` (keeps the model "
                "cache) and then `k3deploy up` to re-create it, or render with the settings it was made from",
            ) from None
        if frozen:
            # Only k3deploy's own run-to-completion Jobs get here (preflight, prefetch, smoke), each safe to run
            # again: a changed Job is deleted and created again. Any other 422 is reported, the Job kept.
            if dry_run:
                return Applied(key, "replaced", obj)
            api.delete(obj["apiVersion"], "Job", meta["name"], meta.get("namespace"))
            return Applied(key, "replaced", _server_apply(api, obj, force=force, dry_run=False))
        if exc.status == 404 and dry_run and live is None:
            # Its namespace is created by this same apply: the server cannot dry-run into it yet.
            return Applied(key, "created", obj)
        raise
    if live is None:
        return Applied(key, "created", result)
    if dry_run:
        return Applied(key, "unchanged" if same(live, result) else "configured", result)
    moved = live.get("metadata", {}).get("resourceVersion") != result.get("metadata", {}).get("resourceVersion")
    return Applied(key, "configured" if moved else "unchanged", result)


def apply_objects(
    api: KubeApi,
    objects: list[dict[str, Any]],
    *,
    force: bool = False,
    dry_run: bool = False,
    on_applied: Callable[[Applied], None] | None = None,
) -> list[Applied]:
    """Apply objects in the order given (the caller orders them); report each as it is done."""
    done = []
    for obj in objects:
        applied = apply_object(api, obj, force=force, dry_run=dry_run)
        done.append(applied)
        if on_applied is not None:
            on_applied(applied)
    return done


def diff_objects(api: KubeApi, objects: list[dict[str, Any]], *, force: bool = False) -> list[tuple[str, str]]:
    """(key, unified diff) for every object a server dry-run apply would change."""
    diffs = []
    for obj in objects:
        meta = obj["metadata"]
        live = api.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        applied = apply_object(api, obj, force=force, dry_run=True)
        text = unified_diff(applied.key, live, applied.obj)
        if text:
            diffs.append((applied.key, text))
    return diffs
