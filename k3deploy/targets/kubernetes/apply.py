"""Server-side apply of the rendered set (field manager `k3deploy`), server dry run, diffs against live.

An object whose resourceVersion did not move, or moved only by a status write, was unchanged; a Job whose pod template changed (immutable)
or that failed is re-created; a conflict with another field manager names the owner. Any other object whose
change touches an immutable field (a ComputeDomain's spec) is not deleted behind the user's back: the workers
use it while it exists, so the error names the object and field and says to take the deployment down first.
What k3deploy creates carries its ownership mark (rollout/ownership.py); a Namespace someone else created is left
as it is, and a Job someone else created is never deleted to be re-created.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from k3deploy.errors import CheckFailed, KubeError, UsageError
from k3deploy.kobject import KubeObject
from k3deploy.kube.api import object_key
from k3deploy.kube.port import KubePort
from k3deploy.rollout.changes import conflicts, describe_conflicts, immutable_fields, same, unified_diff
from k3deploy.rollout.ownership import for_apply, owned
from k3deploy.rollout.readiness import job_readiness

#: What an apply did to an object someone else created and k3deploy leaves as it is (a user's Namespace).
KEPT = "kept"


@dataclass(frozen=True)
class Applied:
    """What one apply did to one object: created, configured, replaced, unchanged or kept (not k3deploy's)."""

    key: str
    action: str
    obj: KubeObject

    @property
    def changed(self) -> bool:
        """True unless the object was already as desired (or is someone else's and left as it is)."""
        return self.action not in ("unchanged", KEPT)


def _server_apply(api: KubePort, obj: KubeObject, *, force: bool, dry_run: bool) -> KubeObject:
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


def _replaceable(key: str, live: KubeObject, rendered: KubeObject) -> None:
    """A Job is deleted to be created again only when k3deploy created it."""
    if not owned(live, rendered):
        raise UsageError(
            f"apply {key}: a Job of that name exists and k3deploy did not create it (no ownership mark)",
            hint="k3deploy deletes only what it created; delete that Job yourself (`kubectl delete job`) or "
            "deploy under another name",
        )


def apply_object(api: KubePort, rendered: KubeObject, *, force: bool = False, dry_run: bool = False) -> Applied:
    """Apply one object (with the ownership mark when k3deploy creates it) and say what happened to it."""
    key = object_key(rendered)
    meta = rendered["metadata"]
    live = api.get(rendered["apiVersion"], rendered["kind"], meta["name"], meta.get("namespace"))
    obj = for_apply(rendered, live)
    if obj is None:
        return Applied(key, KEPT, live or rendered)
    if live is not None and obj["kind"] == "Job" and job_readiness(live).failed and not dry_run:
        _replaceable(key, live, rendered)
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
        if frozen and live is not None:
            # Only k3deploy's own run-to-completion Jobs get here (preflight, prefetch, smoke), each safe to run
            # again: a changed Job is deleted and created again. Any other 422 is reported, the Job kept.
            _replaceable(key, live, rendered)
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
    # A controller writing the status between the read and the apply moves the resourceVersion too (a Job's
    # controller counting its pod done): only a change of what was applied makes the object configured.
    return Applied(key, "configured" if moved and not same(live, result) else "unchanged", result)


def apply_objects(
    api: KubePort,
    objects: list[KubeObject],
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


def diff_objects(api: KubePort, objects: list[KubeObject], *, force: bool = False) -> list[tuple[str, str]]:
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
