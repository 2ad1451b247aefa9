"""A weight cache whose claim is not Bound yet, on the real plane: the real PV controller hands the claim of a CSI
class to its provisioner (a stand-in per test, tests/realk8s/provisioner.py) and the real scheduler holds the
prefetch Job's pod ("pod has unbound immediate PersistentVolumeClaims"). A slow provisioner is waited for past the
unschedulable grace; one that reports ProvisioningFailed, or a class that does not exist, fails the rollout at once.

"At once" is shown without a clock: those runs give the grace (600 s) more than the whole --timeout (240 s), so a
failure judged by the grace could only have been a timeout (exit 3)."""

from __future__ import annotations

import uuid

import pytest

from tests.realk8s import objects
from tests.realk8s.client import resource_path
from tests.realk8s.cluster_fixtures import LWS, TIMEOUT, Deployment
from tests.realk8s.provisioner import Provisioner
from tests.realk8s.rollout.test_wait import diagnosis

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]
CLAIM = f"{LWS}-model-cache"
#: The grace beyond the deadline: only what is judged at once can fail the run before its --timeout.
NO_GRACE_IN_TIME = ("--set", "kubernetes.unschedulable_grace_s=600")
#: What a refusing CSI back end answers (the external-provisioner passes the driver's gRPC error on).
REFUSAL = "rpc error: code = ResourceExhausted desc = share quota of 1Ti exceeded"


def _class_of_its_own(deploy: Deployment, *, delay_s: float = 0.0, fails: str | None = None) -> tuple[str, Provisioner]:
    """A StorageClass (Immediate binding) of a CSI driver of this test's own, served by its own stand-in; both gone,
    with the volumes it made, at the end of the test."""
    name = f"rwx-{uuid.uuid4().hex[:8]}"
    driver = f"{name}.csi.k3deploy.test"
    api = deploy.plane.api
    classes = resource_path("storage.k8s.io/v1", "storageclasses")
    api.create(classes, objects.storage_class(name, driver))
    provisioner = Provisioner(deploy.plane.client("realk8s-admin"), driver, delay_s=delay_s, fails=fails).start()

    def undo() -> None:
        provisioner.stop()
        provisioner.api.close()
        for volume in api.get("/api/v1/persistentvolumes")["items"]:
            if (volume["metadata"].get("annotations") or {}).get("pv.kubernetes.io/provisioned-by") == driver:
                api.delete(f"/api/v1/persistentvolumes/{volume['metadata']['name']}")
        api.delete(f"{classes}/{name}")

    deploy.on_teardown(undo)
    return name, provisioner


def test_a_provisioner_that_reports_provisioning_failed_fails_the_rollout_at_once_with_its_message(
    deploy: Deployment,
) -> None:
    name, provisioner = _class_of_its_own(deploy, fails=REFUSAL)
    result = deploy.k3("apply", *TIMEOUT, *NO_GRACE_IN_TIME, "--set", f"kubernetes.storage_class={name}")
    assert result.returncode == 1, result.stderr
    message = f'failed to provision volume with StorageClass "{name}": {REFUSAL}'
    assert f"error: PersistentVolumeClaim/{CLAIM}: ProvisioningFailed: {message}\n" in result.stderr
    assert f"kubectl describe pvc {CLAIM}" in result.stderr.partition("\nhint: ")[2]
    block = diagnosis(result.stderr)
    assert block.startswith(f"failed: PersistentVolumeClaim/{CLAIM}\n  reason: ProvisioningFailed\n")
    assert f"Warning ProvisioningFailed PersistentVolumeClaim/{CLAIM}: {message}" in block
    assert provisioner.failed and not provisioner.errors, provisioner.errors
    # It stopped at the weight cache: no serving group was applied.
    assert deploy.get("leaderworkersets", LWS) is None


def test_a_claim_of_a_storage_class_that_does_not_exist_fails_at_once(deploy: Deployment) -> None:
    result = deploy.k3("apply", *TIMEOUT, *NO_GRACE_IN_TIME, "--set", "kubernetes.storage_class=no-such-class")
    assert result.returncode == 1, result.stderr
    assert (
        f'error: PersistentVolumeClaim/{CLAIM}: StorageClassNotFound: storageClassName "no-such-class" names no '
        "StorageClass (classes: " in result.stderr
    )
    assert deploy.get("leaderworkersets", LWS) is None


def test_a_claim_provisioned_after_the_unschedulable_grace_is_waited_for_and_the_rollout_passes(
    deploy: Deployment,
) -> None:
    # The grace (3 s) is far shorter than the provisioner takes (20 s from the claim's creation): a pod held for its
    # claim is not counted unschedulable.
    name, provisioner = _class_of_its_own(deploy, delay_s=20)
    driver = provisioner.driver
    result = deploy.k3(
        "apply", *TIMEOUT, "--set", "kubernetes.unschedulable_grace_s=3", "--set", f"kubernetes.storage_class={name}"
    )
    assert result.returncode == 0, result.stderr
    assert f"PersistentVolumeClaim/{CLAIM}: Pending (waiting for the provisioner {driver})" in result.stderr
    assert f"waiting for PersistentVolumeClaim/{CLAIM}" in result.stderr
    assert CLAIM in provisioner.provisioned and not provisioner.errors, provisioner.errors
    claim = deploy.get("persistentvolumeclaims", CLAIM)
    assert claim is not None and claim["status"]["phase"] == "Bound"
