"""A volume binder: PersistentVolumeClaims of an existing StorageClass (or the default one) become Bound, at once
for Immediate classes or once a pod using them is scheduled for WaitForFirstConsumer ones.
"""

from __future__ import annotations

from tests.kubeapi.controllers.base import Controller
from tests.kubeapi.controllers.events import record


class VolumeBinder(Controller):
    """Binds pending claims to made-up volumes."""

    name = "persistentvolume-controller"

    def reconcile(self) -> None:
        """Bind every claim that can be bound."""
        classes = {c["metadata"]["name"]: c for c in self.store.list("storageclasses")}
        default = next(
            (
                n
                for n, c in classes.items()
                if (c["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true"
            ),
            None,
        )
        for claim in self.store.list("persistentvolumeclaims"):
            if claim.get("status", {}).get("phase") == "Bound":
                continue
            wanted = claim["spec"].get("storageClassName", default)
            sc = classes.get(wanted or "")
            if sc is None:
                self._pending(
                    claim,
                    "ProvisioningFailed",
                    f'storageclass.storage.k8s.io "{wanted}" not found'
                    if wanted
                    else "no persistent volumes available for this claim and no storage class is set",
                )
                continue
            if sc.get("volumeBindingMode") == "WaitForFirstConsumer" and not self._consumer_scheduled(claim):
                self._pending(claim, "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
                continue
            self._bind(claim, wanted)

    def _consumer_scheduled(self, claim: dict) -> bool:
        meta = claim["metadata"]
        for pod in self.store.list("pods", meta["namespace"]):
            claims = [(v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod["spec"].get("volumes", [])]
            if meta["name"] in claims and pod["spec"].get("nodeName"):
                return True
        return False

    def _pending(self, claim: dict, reason: str, message: str) -> None:
        meta = claim["metadata"]
        seen = self.store.list("events", meta["namespace"], field=f"involvedObject.uid={meta['uid']},reason={reason}")
        if not seen:
            record(
                self.store,
                claim,
                "Normal" if reason == "WaitForFirstConsumer" else "Warning",
                reason,
                message,
                self.name,
            )

    def _bind(self, claim: dict, storage_class: str) -> None:
        meta = claim["metadata"]
        volume = f"pvc-{meta['uid']}"

        def spec(obj: dict) -> None:
            obj["spec"]["volumeName"] = volume
            obj["spec"]["storageClassName"] = storage_class

        def status(obj: dict) -> None:
            obj["status"] = {
                "phase": "Bound",
                "accessModes": obj["spec"].get("accessModes", []),
                "capacity": {"storage": obj["spec"].get("resources", {}).get("requests", {}).get("storage", "0")},
            }

        self.store.update("persistentvolumeclaims", meta["name"], meta["namespace"], spec, manager=self.name)
        self.store.update(
            "persistentvolumeclaims", meta["name"], meta["namespace"], status, subresource="status", manager=self.name
        )
