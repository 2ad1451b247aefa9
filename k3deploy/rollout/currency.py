"""Whether a LeaderWorkerSet's readiness belongs to its current spec, and which template its pods are on (pure).

A controller that has not acted on the latest spec still shows the previous rollout's status: Available=True,
every group ready and updated. `status.observedGeneration` equal to `metadata.generation` ties the status to the
current spec (LWS v0.9.0 and later, the oldest k3deploy deploys to; kubernetes-sigs/lws
api/leaderworkerset/v1/leaderworkerset_types.go). Unproven is not ready.

Which pods are of the current template (a walk's outgoing pods are not the rollout's failures) is read from the
ControllerRevisions: the controller records each template as one, labelled with its key, and labels every pod with
the key of the template it was made from (pkg/utils/revision/revision_utils.go,
pkg/controllers/leaderworkerset_controller.go). The key is an FNV hash of Go's typed encoding of the template after
the webhook's defaults, which k3deploy cannot reproduce byte for byte, so it is read from the revision whose data
matches rather than computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from k3deploy.kobject import KubeObject
from k3deploy.lws import NAME_LABEL


@dataclass(frozen=True)
class Proof:
    """Whether the status can be trusted for the current spec (`current`), and how that was decided."""

    current: bool
    how: str
    #: False when no proof can ever come (no status.observedGeneration: a controller before v0.9.0).
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


def prove_current(lws: KubeObject) -> Proof:
    """Whether `lws`'s status describes its current spec: the controller's `status.observedGeneration` has reached
    `metadata.generation`. Without one (a controller before v0.9.0, which k3deploy does not support: the profile
    refuses kubernetes.lws_version below it and preflight the installed release) no proof can ever come."""
    generation = int((lws.get("metadata") or {}).get("generation") or 0)
    observed = (lws.get("status") or {}).get("observedGeneration")
    if observed is None:
        return Proof(
            False,
            "unproven: no status.observedGeneration (a LeaderWorkerSet controller before v0.9.0, which k3deploy does "
            f"not support), so nothing ties the status to generation {generation}'s template",
            provable=False,
        )
    if int(observed) < generation:
        return Proof(False, f"controller has not seen generation {generation} yet (observedGeneration {observed})")
    return Proof(True, f"status.observedGeneration {observed} = metadata.generation")
