"""A stand-in for a shared file system's CSI provisioner (RWX): no such driver can run here without a kubelet and
a file server, so this small client of the real API server does what an external provisioner does for a claim of
its class, as kubernetes-sigs/sig-storage-lib-external-provisioner's controller/controller.go (provisionClaimOperation,
deleteVolumeOperation) does: it waits for the real PV controller to mark the claim
`volume.kubernetes.io/storage-provisioner: <driver>`, creates a PersistentVolume pre-bound to it (claimRef,
`pv.kubernetes.io/provisioned-by`), and deletes a Released volume of its own whose reclaim policy is Delete. The
real PV controller does the binding.

Two ways a real driver misbehaves, for the waiter's tests: `delay_s` (a slow back end: a claim gets its volume only
once it is that old, as a multi-TB share takes minutes to make) and `fails` (a back end that refuses: instead of a
volume, the claim gets the Warning event `ProvisioningFailed` with the library's message, `failed to provision
volume with StorageClass "<class>": <error>`, once per claim, as its event recorder aggregates the repeats)."""

from __future__ import annotations

import contextlib
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from tests.realk8s.client import Api, ApiError
from tests.realk8s.poller import Poller

DRIVER = "nfs.csi.k8s.io"
_PROVISIONER_ANNOTATION = "volume.kubernetes.io/storage-provisioner"
_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"


def volume_for(claim: dict[str, Any], driver: str = DRIVER) -> dict[str, Any]:
    """The PersistentVolume an external provisioner creates for `claim`."""
    meta, spec = claim["metadata"], claim["spec"]
    name = f"pvc-{meta['uid']}"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {_PROVISIONED_BY: driver}},
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": spec["accessModes"],
            "volumeMode": spec.get("volumeMode", "Filesystem"),
            "storageClassName": spec["storageClassName"],
            "persistentVolumeReclaimPolicy": "Delete",
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
            },
            "csi": {"driver": driver, "volumeHandle": f"realk8s#{name}"},
        },
    }


class Provisioner(Poller):
    """Provisions and deletes `driver`'s volumes from a thread, polling the API (0.5 s) until `stop()`."""

    def __init__(
        self,
        api: Api,
        driver: str = DRIVER,
        interval_s: float = 0.5,
        *,
        delay_s: float = 0.0,
        fails: str | None = None,
    ) -> None:
        super().__init__(api, interval_s, f"provisioner {driver}")
        self.driver = driver
        self.delay_s, self.fails = delay_s, fails
        #: Claims (by uid) told of their failure, and claims (by name) given a volume.
        self.failed: set[str] = set()
        self.provisioned: set[str] = set()

    def _record(self, claim: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """An event on the claim, as the library's event recorder writes it (core/v1, its own component)."""
        meta = claim["metadata"]
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
                "resourceVersion": meta["resourceVersion"],
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": f"{self.driver}_realk8s"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        self.api.create(f"/api/v1/namespaces/{meta['namespace']}/events", event)

    def _refuse(self, claim: dict[str, Any]) -> None:
        """One attempt that fails: `Provisioning` as it starts, then `ProvisioningFailed` (controller.go
        provisionClaimOperation's events and messages)."""
        meta = claim["metadata"]
        if meta["uid"] in self.failed:
            return
        name = f"{meta['namespace']}/{meta['name']}"
        self._record(claim, "Normal", "Provisioning", f'External provisioner is provisioning volume for claim "{name}"')
        storage_class = claim["spec"]["storageClassName"]
        message = f'failed to provision volume with StorageClass "{storage_class}": {self.fails}'
        self._record(claim, "Warning", "ProvisioningFailed", message)
        self.failed.add(meta["uid"])

    def _due(self, claim: dict[str, Any]) -> bool:
        if not self.delay_s:
            return True
        created = datetime.fromisoformat(claim["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
        return time.time() - created.timestamp() >= self.delay_s

    def sync(self) -> None:
        """One pass: a volume for each claim waiting on this driver, none left Released."""
        for claim in self.api.get("/api/v1/persistentvolumeclaims")["items"]:
            annotations = claim["metadata"].get("annotations") or {}
            if (
                claim.get("status", {}).get("phase") != "Pending"
                or annotations.get(_PROVISIONER_ANNOTATION) != self.driver
            ):
                continue
            if self.fails is not None:
                self._refuse(claim)
                continue
            if not self._due(claim):
                continue
            with contextlib.suppress(ApiError):  # 409: made in an earlier pass, not bound yet
                self.api.create("/api/v1/persistentvolumes", volume_for(claim, self.driver))
            self.provisioned.add(claim["metadata"]["name"])
        for volume in self.api.get("/api/v1/persistentvolumes")["items"]:
            mine = (volume["metadata"].get("annotations") or {}).get(_PROVISIONED_BY) == self.driver
            released = volume.get("status", {}).get("phase") == "Released"
            if mine and released and volume["spec"].get("persistentVolumeReclaimPolicy") == "Delete":
                self.api.delete(f"/api/v1/persistentvolumes/{volume['metadata']['name']}")
