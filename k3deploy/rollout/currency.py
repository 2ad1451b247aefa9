"""Whether a LeaderWorkerSet's readiness belongs to its current spec, and what proves it (pure).

A controller that has not acted on the latest spec still shows the previous rollout's status: Available=True,
every group ready and updated. Two proofs tie readiness to the current spec:

- `status.observedGeneration` equal to `metadata.generation` (LWS v0.9.0 and later; kubernetes-sigs/lws
  api/leaderworkerset/v1/leaderworkerset_types.go).
- Without it (LWS v0.5.0 to v0.8.x): the ControllerRevision whose stored template is the live spec's. The controller
  records each template as a ControllerRevision labelled with its key and labels every pod with the key of the
  template it was made from (pkg/utils/revision/revision_utils.go, pkg/controllers/leaderworkerset_controller.go).
  The key is an FNV hash of Go's typed encoding of the template after the webhook's defaults, which k3deploy cannot
  reproduce byte for byte, so it is read from the revision whose data matches rather than computed. Once every pod
  of the set carries that key, the groups the status counts are the current template's.

Unproven is not ready: with neither proof (LWS before v0.5.0 records no ControllerRevisions; a user denied `list` on
them cannot read them) the status may still be the previous template's, so the wait goes on waiting for a proof, and
fails at once when none can come (the revisions cannot be read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from k3deploy.kobject import KubeObject
from k3deploy.lws import GROUP_INDEX_LABEL, NAME_LABEL, TEMPLATE_REVISION_LABEL


@dataclass(frozen=True)
class Proof:
    """Whether the status can be trusted for the current spec (`current`), and how that was decided."""

    current: bool
    how: str
    #: False when no proof can ever come (ControllerRevisions cannot be read and no observedGeneration).
    provable: bool = True


def _normal(value: Any) -> Any:
    """Drop what Go's encoding adds or omits (null, empty maps and lists, zero values, `$patch`) before comparing."""
    if isinstance(value, dict):
        out = {k: _normal(v) for k, v in value.items() if k != "$patch"}
        return {k: v for k, v in out.items() if v not in (None, {}, [], "", False, 0)}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _owned(revision: KubeObject, lws: KubeObject) -> bool:
    meta = revision.get("metadata") or {}
    uid = (lws.get("metadata") or {}).get("uid")
    refs = meta.get("ownerReferences") or []
    return (meta.get("labels") or {}).get(NAME_LABEL) == (lws.get("metadata") or {}).get("name") and (
        not refs or any(ref.get("uid") == uid for ref in refs if ref.get("controller"))
    )


def template_revision(lws: KubeObject, revisions: list[KubeObject]) -> KubeObject | None:
    """The newest ControllerRevision of `lws` whose stored template and network config are the live spec's."""
    spec = lws.get("spec") or {}
    wanted = (
        _normal(spec.get("leaderWorkerTemplate") or {}),
        _normal(spec.get("networkConfig") or {"subdomainPolicy": "Shared"}),
    )
    matches = []
    for revision in revisions:
        stored = ((revision.get("data") or {}).get("spec")) or {}
        if (
            _owned(revision, lws)
            and (
                _normal(stored.get("leaderWorkerTemplate") or {}),
                _normal(stored.get("networkConfig") or {"subdomainPolicy": "Shared"}),
            )
            == wanted
        ):
            matches.append(revision)
    return max(matches, key=lambda r: int(r.get("revision") or 0), default=None)


def prove_current(lws: KubeObject, revisions: list[KubeObject] | None, pods: list[KubeObject]) -> Proof:
    """Whether `lws`'s status describes its current spec; `revisions` None when they could not be read.

    `pods` are the set's live (not terminating) pods.
    """
    meta = lws.get("metadata") or {}
    generation = int(meta.get("generation") or 0)
    observed = (lws.get("status") or {}).get("observedGeneration")
    if observed is not None:
        if int(observed) < generation:
            return Proof(False, f"controller has not seen generation {generation} yet (observedGeneration {observed})")
        return Proof(True, f"status.observedGeneration {observed} = metadata.generation")
    if revisions is None:
        return Proof(
            False,
            "unproven: no status.observedGeneration (LWS before v0.9.0) and ControllerRevisions cannot be read, so "
            f"nothing ties the status to generation {generation}'s template",
            provable=False,
        )
    if not revisions:
        return Proof(
            False,
            "unproven: no status.observedGeneration and no ControllerRevision recorded yet (LWS before v0.5.0 records "
            "none): waiting for a proof",
        )
    revision = template_revision(lws, revisions)
    if revision is None:
        return Proof(
            False,
            f"no ControllerRevision holds generation {generation}'s template yet "
            "(controller without status.observedGeneration has not acted on it)",
        )
    key = ((revision.get("metadata") or {}).get("labels") or {}).get(TEMPLATE_REVISION_LABEL, "")
    spec = lws.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    size = int((spec.get("leaderWorkerTemplate") or {}).get("size", 1))
    members = [
        p for p in pods if int(((p.get("metadata") or {}).get("labels") or {}).get(GROUP_INDEX_LABEL, 0)) < replicas
    ]
    stale = sorted(
        {((p.get("metadata") or {}).get("labels") or {}).get(TEMPLATE_REVISION_LABEL, "?") for p in members} - {key}
    )
    on_key = sum(
        1 for p in members if ((p.get("metadata") or {}).get("labels") or {}).get(TEMPLATE_REVISION_LABEL) == key
    )
    if stale or on_key < replicas * size:
        old = f"; others on {', '.join(stale)}" if stale else ""
        return Proof(False, f"{on_key}/{replicas * size} pods on template-revision-hash {key}{old}")
    return Proof(
        True,
        f"every pod on template-revision-hash {key} (ControllerRevision "
        f"{(revision.get('metadata') or {}).get('name', '')} holds the current template)",
    )
