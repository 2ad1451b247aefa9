"""A Pending PersistentVolumeClaim judged (pure): being provisioned, failed for good, or not the claims' to judge; each
rule pinned on both sides, with the objects and events shaped as the real PV controller and provisioners write them."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.rollout.claims import (
    CLASS_NOT_FOUND,
    NO_DEFAULT_CLASS,
    PROVISIONING_FAILED,
    SELECTED_NODE_ANNOTATION,
    UNBOUND_IMMEDIATE,
    ClaimVerdict,
    claim_verdict,
    default_class,
    held_by_claims,
    provisioning_failure,
)

CLAIM = "k3-model-cache"
DRIVER = "nfs.csi.k8s.io"
#: What the real scheduler writes on the pod (the VolumeBinding PreFilter's reason inside the FitError).
HELD = (
    f"0/12 nodes are available: {UNBOUND_IMMEDIATE}. preemption: 0/12 nodes are available: "
    "12 Preemption is not helpful for scheduling."
)


def claim(
    phase: str = "Pending", storage_class: str | None = "shared", annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "2Ti"}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    meta = {"name": CLAIM, "namespace": "ns", "uid": "c-1", "annotations": annotations or {}}
    return {"kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def storage_class(
    name: str, provisioner: str = DRIVER, default: bool = False, created: str = "2026-01-01T00:00:00Z", **extra: Any
) -> dict[str, Any]:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    meta = {"name": name, "annotations": annotations, "creationTimestamp": created}
    return {"kind": "StorageClass", "metadata": meta, "provisioner": provisioner, **extra}


def classes(*items: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["metadata"]["name"]: c for c in items}


def event(
    reason: str, message: str, *, name: str = CLAIM, uid: str | None = "c-1", at: str = "2026-12-01T10:00:00Z"
) -> dict[str, Any]:
    involved = {"kind": "PersistentVolumeClaim", "namespace": "ns", "name": name}
    if uid is not None:
        involved["uid"] = uid
    return {
        "metadata": {"name": f"{name}.{reason}.{at}"},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": "Warning" if reason == PROVISIONING_FAILED else "Normal",
        "lastTimestamp": at,
    }


SHARED = classes(storage_class("shared"))
#: What the PV controller records while it waits for an external provisioner (pv_controller.go): not a failure.
EXTERNAL = event(
    "ExternalProvisioning",
    f"Waiting for a volume to be created either by the external provisioner '{DRIVER}' or manually by the "
    "system administrator. If volume creation is delayed, please verify that the provisioner is running and "
    "correctly registered.",
    at="2026-12-01T10:05:00Z",
)
#: What sig-storage-lib-external-provisioner records when an attempt fails (controller.go provisionClaimOperation).
FAILED = event(
    PROVISIONING_FAILED,
    'failed to provision volume with StorageClass "shared": rpc error: code = ResourceExhausted desc = quota exceeded',
)


@pytest.mark.parametrize("phase", ["Bound", "Lost"])
def test_only_a_pending_claim_is_judged(phase: str) -> None:
    assert claim_verdict(claim(phase), SHARED, [FAILED]) is None
    assert claim_verdict(claim("Pending"), SHARED, []) is not None


def test_a_claim_being_deleted_is_not_judged() -> None:
    going = claim()
    going["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    assert claim_verdict(going, SHARED, []) is None


def test_a_pending_claim_with_no_failure_waits_for_its_classes_provisioner() -> None:
    verdict = claim_verdict(claim(), SHARED, [EXTERNAL])
    assert verdict == ClaimVerdict(CLAIM, f"(waiting for the provisioner {DRIVER})", waiting=True)


def test_the_provisioner_the_pv_controller_handed_the_claim_to_is_named() -> None:
    handed = claim(annotations={"volume.kubernetes.io/storage-provisioner": "efs.csi.aws.com"})
    assert claim_verdict(handed, SHARED, []) == ClaimVerdict(
        CLAIM, "(waiting for the provisioner efs.csi.aws.com)", waiting=True
    )
    # Without the StorageClasses, the claim's own annotation still tells who provisions it.
    assert claim_verdict(handed, None, []) == ClaimVerdict(
        CLAIM, "(waiting for the provisioner efs.csi.aws.com)", waiting=True
    )
    assert claim_verdict(claim(), None, []) == ClaimVerdict(CLAIM, "(waiting to be bound)")


def test_a_provisioning_failed_event_fails_the_claim_with_its_message() -> None:
    verdict = claim_verdict(claim(), SHARED, [EXTERNAL, FAILED])
    assert verdict == ClaimVerdict(CLAIM, FAILED["message"], failure=PROVISIONING_FAILED)


def test_the_pv_controllers_own_provisioning_failure_counts_too() -> None:
    # kubernetes.io/no-provisioner with no matching volume: the PV controller finds no plugin for it.
    local = classes(storage_class("node-local", "kubernetes.io/no-provisioner"))
    failed = event(PROVISIONING_FAILED, "no volume plugin matched name: kubernetes.io/no-provisioner", uid=None)
    verdict = claim_verdict(claim(storage_class="node-local"), local, [failed])
    assert verdict is not None and verdict.failure == PROVISIONING_FAILED
    assert verdict.detail == "no volume plugin matched name: kubernetes.io/no-provisioner"


def test_failures_of_another_claim_or_an_earlier_claim_of_the_same_name_are_not_this_ones() -> None:
    other = event(PROVISIONING_FAILED, "x", name="other-claim")
    earlier = event(PROVISIONING_FAILED, "x", uid="c-0")
    assert provisioning_failure(claim(), [other, earlier]) is None
    assert claim_verdict(claim(), SHARED, [other, earlier, EXTERNAL]) == ClaimVerdict(
        CLAIM, f"(waiting for the provisioner {DRIVER})", waiting=True
    )
    assert provisioning_failure(claim(), [other, earlier, event(PROVISIONING_FAILED, "this one")]) == "this one"


def test_the_latest_provisioning_failure_is_the_one_told() -> None:
    first = event(PROVISIONING_FAILED, "first", at="2026-12-01T10:00:00Z")
    second = event(PROVISIONING_FAILED, "second", at="2026-12-01T10:00:01Z")
    assert provisioning_failure(claim(), [second, first]) == "second"
    assert provisioning_failure(claim(), [first, second]) == "second"
    assert provisioning_failure(claim(), [event(PROVISIONING_FAILED, "  ")]) == PROVISIONING_FAILED


def test_without_events_nothing_proves_provisioning_has_not_failed() -> None:
    verdict = claim_verdict(claim(), SHARED, None)
    assert verdict == ClaimVerdict(CLAIM, f"(waiting for the provisioner {DRIVER})", waiting=False)


def test_a_missing_storage_class_fails_the_claim_naming_the_classes_there() -> None:
    # Before the PV controller's own ProvisioningFailed, which names only the class it did not find.
    not_found = event(PROVISIONING_FAILED, 'storageclass.storage.k8s.io "fast-nfs" not found')
    verdict = claim_verdict(claim(storage_class="fast-nfs"), SHARED, [not_found])
    assert verdict == ClaimVerdict(
        CLAIM, 'storageClassName "fast-nfs" names no StorageClass (classes: shared)', failure=CLASS_NOT_FOUND
    )
    assert claim_verdict(claim(storage_class="fast-nfs"), {}, []) == ClaimVerdict(
        CLAIM, 'storageClassName "fast-nfs" names no StorageClass (classes: none)', failure=CLASS_NOT_FOUND
    )


def test_a_claim_naming_no_class_fails_only_when_there_is_no_default_to_give_it() -> None:
    no_class = claim(storage_class=None)
    verdict = claim_verdict(no_class, SHARED, [])
    assert verdict == ClaimVerdict(
        CLAIM,
        "the claim names no StorageClass and the cluster has no default one (classes: shared)",
        failure=NO_DEFAULT_CLASS,
    )
    # A default class is given to it retroactively by the PV controller: it waits for that class's provisioner.
    with_default = classes(storage_class("shared"), storage_class("rwx", "cephfs.csi.ceph.com", default=True))
    assert claim_verdict(no_class, with_default, []) == ClaimVerdict(
        CLAIM, "(waiting for the provisioner cephfs.csi.ceph.com)", waiting=True
    )


def test_an_empty_class_waits_for_a_made_volume_which_no_provisioner_makes() -> None:
    assert claim_verdict(claim(storage_class=""), SHARED, []) == ClaimVerdict(
        CLAIM, "(waiting for a PersistentVolume without a class: none is provisioned)"
    )


def test_a_wait_for_first_consumer_claim_waits_for_its_pod_until_the_scheduler_picked_a_node() -> None:
    delayed = classes(storage_class("shared", volumeBindingMode="WaitForFirstConsumer"))
    assert claim_verdict(claim(), delayed, []) == ClaimVerdict(
        CLAIM, "(waiting for its first consumer to be scheduled)"
    )
    picked = claim(annotations={SELECTED_NODE_ANNOTATION: "gb300-01"})
    assert claim_verdict(picked, delayed, []) == ClaimVerdict(
        CLAIM, f"(waiting for the provisioner {DRIVER})", waiting=True
    )
    immediate = classes(storage_class("shared", volumeBindingMode="Immediate"))
    assert claim_verdict(claim(), immediate, []) == ClaimVerdict(
        CLAIM, f"(waiting for the provisioner {DRIVER})", waiting=True
    )


def test_the_default_class_is_the_newest_marked_one_and_a_tie_goes_by_name() -> None:
    assert default_class(classes(storage_class("a"), storage_class("b"))) is None
    # Newness before the name: the newer sorts last by name here.
    old = storage_class("a-old", default=True, created="2026-01-01T00:00:00Z")
    new = storage_class("z-new", default=True, created="2026-02-01T00:00:00Z")
    assert default_class(classes(old, new)) == "z-new"
    assert default_class(classes(new, old)) == "z-new"
    tie_b = storage_class("b", default=True)
    tie_a = storage_class("a", default=True)
    assert default_class(classes(tie_b, tie_a)) == "a"
    beta = storage_class("beta")
    beta["metadata"]["annotations"] = {"storageclass.beta.kubernetes.io/is-default-class": "true"}
    assert default_class(classes(beta)) == "beta"
    off = storage_class("off")
    off["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "false"}
    assert default_class(classes(off)) is None


def test_a_pod_is_held_by_its_claims_only_when_the_scheduler_says_so_and_every_claim_is_being_provisioned() -> None:
    waiting = ClaimVerdict(CLAIM, "(waiting for the provisioner x)", waiting=True)
    stuck = ClaimVerdict("other", "(waiting to be bound)")
    assert held_by_claims(HELD, [waiting])
    assert not held_by_claims("0/12 nodes are available: 12 Insufficient nvidia.com/gpu.", [waiting])
    assert not held_by_claims(HELD, [])
    assert not held_by_claims(HELD, [waiting, stuck])


def _attempt(at: str, reason: str = "Provisioning") -> dict[str, Any]:
    """What sig-storage-lib-external-provisioner records as an attempt starts (and once the volume is made)."""
    return event(reason, f'External provisioner is provisioning volume for claim "ns/{CLAIM}"', at=at)


@pytest.mark.parametrize(
    ("attempt_at", "final"),
    [
        ("2026-12-01T10:00:01Z", False),  # a retry under way after the failure: it may mend it
        ("2026-12-01T10:00:00Z", True),  # the same second as the failure: the failure
        ("2026-12-01T09:59:59Z", True),  # the attempt that failed
    ],
)
def test_a_failure_is_final_unless_a_later_attempt_is_under_way(attempt_at: str, final: bool) -> None:
    failed = event(PROVISIONING_FAILED, "quota exceeded", at="2026-12-01T10:00:00Z")
    found = provisioning_failure(claim(), [failed, _attempt(attempt_at)])
    assert found == ("quota exceeded" if final else None)
    verdict = claim_verdict(claim(), SHARED, [failed, _attempt(attempt_at)])
    assert verdict is not None and verdict.waiting is not final and bool(verdict.failure) is final


def test_a_volume_made_after_a_failure_is_no_failure_while_the_claim_waits_to_be_bound() -> None:
    failed = event(PROVISIONING_FAILED, "quota exceeded", at="2026-12-01T10:00:00Z")
    made = _attempt("2026-12-01T10:00:05Z", "ProvisioningSucceeded")
    assert provisioning_failure(claim(), [failed, made]) is None


def test_event_stamps_are_read_as_times_a_series_and_micro_time_included() -> None:
    failed = event(PROVISIONING_FAILED, "quota exceeded", at="2026-12-01T10:00:00Z")
    # An events.k8s.io-style event: microsecond eventTime, no lastTimestamp, later than the failure by 0.5 s.
    micro = _attempt("")
    micro.pop("lastTimestamp")
    micro["eventTime"] = "2026-12-01T10:00:00.500000Z"
    assert provisioning_failure(claim(), [failed, micro]) is None
    # A series' last observation is when it was last seen, whatever its first stamp says.
    series = _attempt("2026-12-01T09:00:00Z")
    series["series"] = {"count": 4, "lastObservedTime": "2026-12-01T10:00:02.000000Z"}
    assert provisioning_failure(claim(), [failed, series]) is None
    # A stamp that does not parse is older than any other.
    broken = _attempt("not a time")
    assert provisioning_failure(claim(), [failed, broken]) == "quota exceeded"


def test_an_event_without_stamps_is_as_old_as_its_object_and_a_stamp_without_a_zone_is_utc() -> None:
    failed = event(PROVISIONING_FAILED, "quota exceeded", at="2026-12-01T10:00:00Z")
    created = _attempt("")
    created.pop("lastTimestamp")
    created["metadata"]["creationTimestamp"] = "2026-12-01T10:00:01Z"
    assert provisioning_failure(claim(), [failed, created]) is None
    created["metadata"]["creationTimestamp"] = "2026-12-01T09:00:00Z"
    assert provisioning_failure(claim(), [failed, created]) == "quota exceeded"
    naive = _attempt("2026-12-01T10:00:01")
    assert provisioning_failure(claim(), [failed, naive]) is None
    assert provisioning_failure(claim(), [failed, _attempt("2026-12-01T09:59:59")]) == "quota exceeded"
