"""`required_access(objects)`: every permission `up` needs, derived from the rendered set it will apply. Pure: no I/O.

The cluster probe asks the API server about each with a SelfSubjectAccessReview. Nothing here is a hand-kept list
of kinds: each kind of the set gets the verbs of its apply (get, create, patch) and of rollback and `down` (delete);
the kinds the rollout waits on get list and watch; a LeaderWorkerSet brings the ControllerRevisions that prove its
readiness; waited pods that mount a PersistentVolumeClaim bring the claims, StorageClasses and claim events the
waiter judges them by (rollout/claims.py). So an object added to the set adds its verbs, and preflight cannot pass on a set `up` cannot apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from k3deploy.lws import REVISIONS, WAITED_KINDS
from k3deploy.pod_volumes import mounts_claims

#: Server-side apply reads the live object, then creates or patches it; rollback and `down` delete it.
APPLY_VERBS = ("get", "create", "patch", "delete")
#: The waiter (rollout/streams.py) lists each waited kind, then watches from the list's resourceVersion.
WAIT_VERBS = ("list", "watch")
#: Kinds the set holds that `up` reviews apart: the Namespace is cluster-scoped and its create is asked only when
#: it does not exist yet (preflight/cluster.py); a user's Namespace is left as it is.
_REVIEWED_APART = frozenset({"Namespace"})


@dataclass(frozen=True)
class Access:
    """One permission `up` needs: verb on resource.group (namespaced in the profile's namespace unless cluster-wide)."""

    verb: str
    resource: str
    group: str = ""
    namespaced: bool = True
    subresource: str = ""


def plural(kind: str) -> str:
    """The resource name of a kind, as the API server's RESTMapper guesses it (k8s.io/apimachinery
    pkg/api/meta/restmapper.go UnsafeGuessKindToResource): lower case, `-s` -> `-ses`, `-y` -> `-ies`, else `+s`."""
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


def group_of(api_version: str) -> str:
    """The API group of an apiVersion (`batch/v1` -> batch, `v1` -> the core group "")."""
    return api_version.rpartition("/")[0]


def required_access(objects: Sequence[dict[str, Any]], *, port_forward: bool = False) -> list[Access]:
    """The verbs `up` uses on the rendered `objects`, in a stable order: each kind's apply and delete, list and watch
    of what it waits on, the readiness proof and the release's Lease; with `port_forward` (its smoke reaches the
    leader through the API server) `pods/portforward` too."""
    kinds: dict[tuple[str, str], str] = {}
    for obj in objects:
        if obj["kind"] not in _REVIEWED_APART:
            kinds.setdefault((plural(obj["kind"]), group_of(obj["apiVersion"])), obj["kind"])
    out = [Access(verb, resource, group) for (resource, group) in kinds for verb in APPLY_VERBS]
    out += [
        Access(verb, resource, group)
        for (resource, group), kind in kinds.items()
        if kind in WAITED_KINDS
        for verb in WAIT_VERBS
    ]
    if "LeaderWorkerSet" in kinds.values():
        # The LWS controller writes no observedGeneration before v0.9: its ControllerRevisions prove the template.
        out += [Access(verb, plural(REVISIONS), "apps") for verb in WAIT_VERBS]
    if mounts_claims(o for o in objects if o["kind"] in WAITED_KINDS):
        # A pod held for an unbound claim waits while it is provisioned and fails on a ProvisioningFailed event.
        out += [Access(verb, "persistentvolumeclaims") for verb in WAIT_VERBS]
        out += [Access(verb, "storageclasses", "storage.k8s.io", namespaced=False) for verb in WAIT_VERBS]
        out += [Access("watch", "events")]
    # The release's Lease (rollout/lease.py) for the whole command; the pods and events the waiter reads.
    out += [
        Access("get", "leases", "coordination.k8s.io"),
        Access("create", "leases", "coordination.k8s.io"),
        Access("update", "leases", "coordination.k8s.io"),
        Access("list", "pods"),
        Access("watch", "pods"),
        Access("get", "pods", subresource="log"),
        Access("list", "events"),
    ]
    if port_forward:
        # k3deploy's forward is a WebSocket upgrade (an HTTP GET): authorised as `get`, and from Kubernetes 1.35 also
        # as `create` (AuthorizePodWebsocketUpgradeCreatePermission, KEP-4006), the verb kubectl's SPDY POST needs.
        out += [Access("get", "pods", subresource="portforward"), Access("create", "pods", subresource="portforward")]
    return out
