"""A waited pod's PersistentVolumeClaims, judged (pure): still being provisioned, failed for good, or not in the way.

The real scheduler holds a pod whose claim of an Immediate-binding class is not Bound yet: the VolumeBinding plugin's
PreFilter answers UnschedulableAndUnresolvable with "pod has unbound immediate PersistentVolumeClaims" (kubernetes
pkg/scheduler/framework/plugins/volumebinding/volume_binding.go). No node is missing then: the claim is, and a
provisioner making a multi-TB volume can take longer than the unschedulable grace. So while the claim is Pending and
nothing says its provisioning failed (since the latest attempt began), the wait goes on (bounded by the rollout's deadline), and the claim's row says
which provisioner it waits for. Waiting will not help when the claim's events say `ProvisioningFailed` (recorded on the
claim by the PV controller, pkg/controller/volume/persistentvolume/pv_controller.go provisionClaimOperation, or by an
external provisioner, sig-storage-lib-external-provisioner controller/controller.go), when its StorageClass does not
exist, or when it names none and the cluster has no default class to give it. A Bound claim is not judged here: a
pod still unschedulable for its volume (a node affinity conflict) keeps the grace, as does a claim whose events cannot
be read (no proof that nothing failed).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from k3deploy.kobject import KubeObject

#: The kinds the waiter reads for the claims (all optional: without them pods are judged as before).
CLAIMS = "PersistentVolumeClaim"
CLASSES = "StorageClass"
EVENTS = "Event"
#: The waiter watches the claims' events only, not every event of the namespace.
CLAIM_EVENTS_SELECTOR = f"involvedObject.kind={CLAIMS}"
#: The VolumeBinding PreFilter's reason for a pod whose Immediate claims are not all Bound.
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
#: The event reason both the PV controller and external provisioners record when a provisioning attempt fails.
PROVISIONING_FAILED = "ProvisioningFailed"
#: What an external provisioner records as an attempt starts and once it made the volume (the claim may stay Pending
#: a moment longer, until the PV controller binds it).
PROVISIONING_PROGRESS = frozenset({"Provisioning", "ProvisioningSucceeded"})
#: Failure reasons of a claim whose StorageClass is missing, or which names none while no class is the default.
CLASS_NOT_FOUND = "StorageClassNotFound"
NO_DEFAULT_CLASS = "NoDefaultStorageClass"
#: Every reason a claim fails the rollout with.
CLAIM_FAILURES = frozenset({PROVISIONING_FAILED, CLASS_NOT_FOUND, NO_DEFAULT_CLASS})
#: A class marked default (the DefaultStorageClass admission plugin and the PV controller read both).
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
#: Set on the claim by the PV controller when it hands provisioning to an external provisioner.
PROVISIONER_ANNOTATIONS = (
    "volume.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-provisioner",
)
#: Set by the scheduler on a WaitForFirstConsumer claim once it chose a node: provisioning has begun.
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
_EPOCH = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class ClaimVerdict:
    """Where one Pending claim stands: what it waits for (or why it failed), whether provisioning is under way (so
    the pod it holds is not counted unschedulable), and the failure reason when waiting will not fix it."""

    name: str
    detail: str
    waiting: bool = False
    failure: str = ""


def _meta(obj: KubeObject) -> KubeObject:
    return obj.get("metadata") or {}


def default_class(classes: dict[str, KubeObject]) -> str | None:
    """The default StorageClass's name; of several, the one the DefaultStorageClass admission plugin picks
    (kubernetes pkg/volume/util/storageclass.go GetDefaultClass: the newest, a tie by name)."""
    marked = [
        c
        for c in classes.values()
        if any((_meta(c).get("annotations") or {}).get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)
    ]
    if not marked:
        return None
    by_name = sorted(marked, key=lambda c: str(_meta(c).get("name")))
    newest = max(by_name, key=lambda c: str(_meta(c).get("creationTimestamp") or ""))  # the first of a tie
    return str(_meta(newest).get("name"))


def _event_time(event: KubeObject) -> datetime:
    """When an event was last seen: a series' last observation, else lastTimestamp, eventTime, firstTimestamp."""
    stamp = (
        (event.get("series") or {}).get("lastObservedTime")
        or event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or _meta(event).get("creationTimestamp")
    )
    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        return _EPOCH
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _about(event: KubeObject, claim: KubeObject) -> bool:
    """The event is about this claim: its name, and its uid when the event names one (not an earlier claim's)."""
    involved = event.get("involvedObject") or {}
    meta = _meta(claim)
    uid = meta.get("uid")
    return (
        involved.get("kind") == CLAIMS
        and involved.get("name") == meta.get("name")
        and not (uid and involved.get("uid") not in (None, "", uid))
    )


def provisioning_failure(claim: KubeObject, events: Iterable[KubeObject]) -> str | None:
    """The message of the latest ProvisioningFailed event about this claim, unless a provisioning attempt began (or
    succeeded) after it: an external provisioner retries with backoff and records `Provisioning` as each attempt
    starts, so a failure an attempt under way may mend is not final. A tie goes to the failure (the stamps have
    whole seconds, and an instant refusal shares its attempt's second). None when nothing failed."""
    mine = [e for e in events if _about(e, claim)]
    failed = [e for e in mine if e.get("reason") == PROVISIONING_FAILED]
    if not failed:
        return None
    latest = max(failed, key=_event_time)
    tried = [e for e in mine if e.get("reason") in PROVISIONING_PROGRESS]
    if tried and _event_time(max(tried, key=_event_time)) > _event_time(latest):
        return None
    return str(latest.get("message") or "").strip() or PROVISIONING_FAILED


def _known(classes: dict[str, KubeObject]) -> str:
    return ", ".join(sorted(classes)) or "none"


def claim_verdict(
    claim: KubeObject, classes: dict[str, KubeObject] | None, events: list[KubeObject] | None
) -> ClaimVerdict | None:
    """Judge one claim; None unless it is Pending. `classes` (by name) and `events` (the claims' events) are None
    when they cannot be read: without events nothing proves provisioning has not failed, so the claim is shown but
    does not hold the pod's grace."""
    meta = _meta(claim)
    if (claim.get("status") or {}).get("phase", "Pending") != "Pending" or meta.get("deletionTimestamp"):
        return None
    name = str(meta.get("name", ""))
    wanted = (claim.get("spec") or {}).get("storageClassName")
    # A missing class first: the PV controller's ProvisioningFailed says only "not found"; this names the classes.
    chosen: str | None = None
    if classes is not None and wanted != "":
        chosen = default_class(classes) if wanted is None else str(wanted)
    if classes is not None and wanted != "" and chosen is None:
        return ClaimVerdict(
            name,
            f"the claim names no StorageClass and the cluster has no default one (classes: {_known(classes)})",
            failure=NO_DEFAULT_CLASS,
        )
    if classes is not None and chosen is not None and chosen not in classes:
        return ClaimVerdict(
            name,
            f'storageClassName "{chosen}" names no StorageClass (classes: {_known(classes)})',
            failure=CLASS_NOT_FOUND,
        )
    if events is not None:
        failed = provisioning_failure(claim, events)
        if failed is not None:
            return ClaimVerdict(name, failed, failure=PROVISIONING_FAILED)
    annotations = meta.get("annotations") or {}
    provisioner = next((str(annotations[a]) for a in PROVISIONER_ANNOTATIONS if annotations.get(a)), "")
    if classes is not None:
        if chosen is None:
            return ClaimVerdict(name, "(waiting for a PersistentVolume without a class: none is provisioned)")
        cls = classes[chosen]
        provisioner = provisioner or str(cls.get("provisioner") or "")
        if cls.get("volumeBindingMode") == "WaitForFirstConsumer" and not annotations.get(SELECTED_NODE_ANNOTATION):
            return ClaimVerdict(name, "(waiting for its first consumer to be scheduled)")
    if not provisioner:
        return ClaimVerdict(name, "(waiting to be bound)")
    return ClaimVerdict(name, f"(waiting for the provisioner {provisioner})", waiting=events is not None)


def held_by_claims(unschedulable_message: str, claims: list[ClaimVerdict]) -> bool:
    """Whether an unschedulable pod only waits for its claims: the scheduler says so, and every Pending claim it
    mounts is being provisioned with no failure reported."""
    return UNBOUND_IMMEDIATE in unschedulable_message and bool(claims) and all(c.waiting for c in claims)
