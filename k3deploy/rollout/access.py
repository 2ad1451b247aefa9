"""What a command asks of the API server, derived from its rendered set and the steps its plan may run (pure).

Nothing here is a hand-kept list of kinds: each kind of the set gets the verbs of its apply (get, create, patch) and
of rollback and `down` (delete); each step brings what running it reads and writes (`step_access`, after
targets/kubernetes/runner.py): a wait lists and watches the kinds it waits on, their pods, logs and events, a LeaderWorkerSet's
ControllerRevisions and, for pods that mount a PersistentVolumeClaim, the claims, StorageClasses and claim events
(rollout/claims.py); a group's walk reads its revisions and pods; a passed gate marks its leader pod; a recorded gate or revision writes its ConfigMap; a
Service switch lists EndpointSlices (targets/kubernetes/bluegreen.py). So an object added to the set, or a step added to the
plan, adds its verbs, and preflight cannot pass on a command `up` cannot finish. `step_access` refuses a step type it
does not know, so a new step cannot go unreviewed. Preflight (preflight/cluster.py) asks about each.
"""

from __future__ import annotations

from collections.abc import Sequence

from k3deploy.kobject import KubeObject
from k3deploy.lws import REVISIONS, WAITED_KINDS
from k3deploy.pod_volumes import mounts_claims
from k3deploy.preflight.access import APPLY_VERBS, REVIEWED_APART, WAIT_VERBS, Access, group_of, plural
from k3deploy.rollout import undo
from k3deploy.rollout.colours import lws_of
from k3deploy.rollout.ownership import HELD_KINDS
from k3deploy.rollout.plan import UP_STRATEGY, Strategy, reachable
from k3deploy.rollout.steps import (
    Apply,
    ApplyAll,
    Begin,
    Delete,
    Diff,
    DownAll,
    GateLeaders,
    Guard,
    Note,
    RecordGate,
    RecordRevision,
    Remove,
    RemoveLeftovers,
    Restore,
    RollbackAll,
    SmokeGroup,
    Step,
    Switch,
    Wait,
    WaitAll,
    WaitGone,
    WaitGroup,
)


def _waited(objects: Sequence[KubeObject]) -> list[Access]:
    """A wait (targets/kubernetes/wait.py): list and watch of each waited kind, the ControllerRevisions of a LeaderWorkerSet, the
    claims its pods mount, and the pods, logs and events a diagnosis reads."""
    kinds = {(plural(o["kind"]), group_of(o["apiVersion"])) for o in objects if o["kind"] in WAITED_KINDS}
    out = [Access(verb, resource, group) for (resource, group) in sorted(kinds) for verb in WAIT_VERBS]
    if any(o["kind"] == "LeaderWorkerSet" for o in objects):
        # Its ControllerRevisions tell the pods of an older template apart (rollout/judge.py `current_key`).
        out += _revisions()
    if mounts_claims(o for o in objects if o["kind"] in WAITED_KINDS):
        # A pod held for an unbound claim waits while it is provisioned and fails on a ProvisioningFailed event.
        out += [Access(verb, "persistentvolumeclaims") for verb in WAIT_VERBS]
        out += [Access(verb, "storageclasses", "storage.k8s.io", namespaced=False) for verb in WAIT_VERBS]
        out += [Access("watch", "events")]
    return out + _pods()


def _pods() -> list[Access]:
    return [
        Access("list", "pods"),
        Access("watch", "pods"),
        Access("get", "pods", subresource="log"),
        Access("list", "events"),
    ]


def _revisions() -> list[Access]:
    return [Access(verb, plural(REVISIONS), "apps") for verb in WAIT_VERBS]


#: Kinds of the set that live outside any namespace (the in-cluster guard's RBAC, render/guard.py).
_CLUSTER_SCOPED = frozenset({"ClusterRole", "ClusterRoleBinding"})


def _kind(api_version: str, kind: str, verbs: Sequence[str]) -> list[Access]:
    scoped = kind not in _CLUSTER_SCOPED
    return [Access(verb, plural(kind), group_of(api_version), namespaced=scoped) for verb in verbs]


def _applied(objects: Sequence[KubeObject]) -> list[Access]:
    return [
        a for o in objects if o["kind"] not in REVIEWED_APART for a in _kind(o["apiVersion"], o["kind"], APPLY_VERBS)
    ]


#: A ConfigMap k3deploy records in (a group's gate, targets/kubernetes/gates.py; a revision, targets/kubernetes/history.py): applied.
_RECORD = tuple(_kind("v1", "ConfigMap", ("get", "create", "patch")))


#: A smoke through a port-forward to a leader, found by its Service's selector (targets/kubernetes/forward.py). k3deploy's
#: forward is a WebSocket upgrade (an HTTP GET): authorised as `get`, and from Kubernetes 1.35 also as `create`
#: (AuthorizePodWebsocketUpgradeCreatePermission, KEP-4006), the verb kubectl's SPDY POST needs.
_FORWARD = (
    Access("get", "services"),
    Access("list", "pods"),
    Access("get", "pods", subresource="portforward"),
    Access("create", "pods", subresource="portforward"),
)


#: Marking a gated leader for traffic (targets/kubernetes/marks.py): the pod read (its uid and revision) and patched
#: (a server-side apply of its label); the LeaderWorkerSet's gated revision is read and written by the apply's verbs.
_MARK = (Access("get", "pods"), Access("patch", "pods"))


def _smoked(port_forward: bool) -> list[Access]:
    """A group's smoke: through a port-forward to its leader, or an in-cluster Job."""
    return list(_FORWARD) if port_forward else _kind("batch/v1", "Job", ("get", "create", "delete")) + _pods()


def step_access(step: Step, *, port_forward: bool = False) -> list[Access]:
    """What running `step` asks of the API server (targets/kubernetes/runner.py; a group's smoke is the pipeline's: through a
    port-forward to its leader with `port_forward`, else an in-cluster Job). TypeError for a step it does not know."""
    if isinstance(step, Begin | Note | ApplyAll | WaitAll | RollbackAll | DownAll):
        return []
    if isinstance(step, Apply):
        return _applied(step.objects) + (_waited(step.objects) if step.waited else [])
    if isinstance(step, Diff):
        return _applied(step.objects)
    if isinstance(step, Wait):
        return _waited(step.objects)
    if isinstance(step, WaitGroup):
        lws = step.lws
        return _kind(lws["apiVersion"], lws["kind"], ("get",)) + _revisions() + _pods()
    if isinstance(step, SmokeGroup):
        return _smoked(port_forward) + (list(_MARK) if step.mark else [])
    if isinstance(step, GateLeaders):
        return [Access("list", "pods"), *_MARK, *(_smoked(port_forward) if step.smoke else [])]
    if isinstance(step, RecordGate | RecordRevision):
        return list(_RECORD)
    if isinstance(step, Switch):
        switched = _applied([step.service]) if step.service is not None else []
        # The switch is done when the Service's EndpointSlices list the new leader as ready (targets/kubernetes/bluegreen.py).
        return [*switched, Access("list", "endpointslices", "discovery.k8s.io")]
    if isinstance(step, Delete):
        guard = [Access("get", "services")] if step.unless_selected_by is not None else []
        return _kind(step.api_version, step.kind, ("get", "delete")) + guard
    if isinstance(step, WaitGone):
        return _pods()
    if isinstance(step, RemoveLeftovers):
        return [a for o in step.objects for a in _kind(o["apiVersion"], o["kind"], ("get", "delete"))] + _pods()
    if isinstance(step, Restore):
        return _applied(step.objects)
    if isinstance(step, Remove):
        removed = [o for o in step.objects if o["kind"] not in step.keep]
        out = [a for o in removed for a in _kind(o["apiVersion"], o["kind"], ("get", "delete"))]
        if any(o["kind"] == "Job" for o in removed):
            # `down` finds the release's prefetch Jobs by label (rollout/prefetch_jobs.py): their names hash their spec.
            out += _kind("batch/v1", "Job", ("list",))
        if any(o["kind"] == "Namespace" for o in removed):
            # A Namespace is deleted only when it holds nothing k3deploy did not create (targets/kubernetes/history.py).
            out += [Access("list", plural(kind)) for kind in HELD_KINDS]
        return out
    if isinstance(step, Guard):
        # The live template against server dry runs of this run's and the previous revision's (targets/kubernetes/guard.py).
        return [a for o in step.applied if o["kind"] == "LeaderWorkerSet" for a in _applied([o])]
    raise TypeError(f"no access is known for a {type(step).__name__} step")


def required_access(
    objects: Sequence[KubeObject], steps: Sequence[Step] = (), *, port_forward: bool = False
) -> list[Access]:
    """The verbs a command uses, each once, in a stable order: each kind of the rendered `objects`' apply and delete,
    what each of the plan's `steps` runs, and the release's Lease; with `port_forward` (the final smoke reaches the
    leader through the API server) `pods/portforward` too."""
    out = _applied(objects)
    for step in steps:
        out += step_access(step, port_forward=port_forward)
    # The release's Lease (targets/kubernetes/lease.py) for the whole command.
    out += _kind("coordination.k8s.io/v1", "Lease", ("get", "create", "update"))
    if port_forward:
        out += _FORWARD
    return list(dict.fromkeys(out))


def command_access(
    objects: Sequence[KubeObject], strategy: Strategy = UP_STRATEGY, *, port_forward: bool = False
) -> list[Access]:
    """`required_access` of a command that runs `strategy` on the rendered `objects`: the set's verbs and those of
    every step its plan and its rollback may run (rollout/plan.py and rollout/undo.py `reachable`; the release is the
    rendered LeaderWorkerSet's name)."""
    lws = lws_of(list(objects))
    release = lws["metadata"]["name"] if lws is not None else ""
    steps = reachable(list(objects), strategy, release) + undo.reachable(list(objects), strategy, release)
    return required_access(objects, steps, port_forward=port_forward)
