"""Object lifecycle controllers: the garbage collector, the namespace controller and PVC protection.

- GarbageCollector imitates kubernetes pkg/controller/garbagecollector: dependents whose every owner is gone are
  deleted in the background, a while after the owner (`delay`), so a deleted Job's pods stay visible meanwhile
  (with `store.async_gc`; otherwise the store collects at once).
- NamespaceController imitates pkg/controller/namespace/deletion: a deleted namespace stays `Terminating` (creates in
  it are refused with 403 by the store, as the NamespaceLifecycle admission plugin does) while its content is
  deleted; once nothing is left, its `kubernetes` finalizer is removed and it is gone.
- PvcProtection imitates pkg/controller/volume/pvcprotection: a deleted claim keeps its
  `kubernetes.io/pvc-protection` finalizer until no pod uses it.
"""

from __future__ import annotations

import contextlib
import time

from tests.kubeapi.controllers.base import Controller
from tests.kubeapi.errors import ApiError

PVC_PROTECTION = "kubernetes.io/pvc-protection"


class GarbageCollector(Controller):
    """Deletes orphaned dependents `delay` seconds after they were first seen orphaned."""

    name = "garbage-collector"

    def __init__(self, store, tick: float = 0.05) -> None:  # Store
        super().__init__(store, tick)
        self.delay = 1.0
        self._seen: dict[str, float] = {}

    def reconcile(self) -> None:
        """Collect orphans whose grace is over."""
        clock = time.monotonic()
        current = set()
        for rtype, obj in self.store.orphans():
            uid = obj["metadata"]["uid"]
            current.add(uid)
            first = self._seen.setdefault(uid, clock)
            if clock - first >= self.delay and not obj["metadata"].get("deletionTimestamp"):
                with contextlib.suppress(ApiError):
                    self.store.delete(rtype, obj["metadata"]["name"], obj["metadata"].get("namespace"))
        self._seen = {uid: at for uid, at in self._seen.items() if uid in current}


class NamespaceController(Controller):
    """Empties terminating namespaces, then removes them."""

    name = "namespace-controller"

    def reconcile(self) -> None:
        """One pass over the terminating namespaces."""
        for ns in self.store.list("namespaces"):
            if not ns["metadata"].get("deletionTimestamp"):
                continue
            name = ns["metadata"]["name"]
            left = 0
            for key in list(self.store.objects):
                rtype = self.store.registry.by_key(key)
                if rtype is None or not rtype.namespaced:
                    continue
                for obj in self.store.list(rtype, name):
                    left += 1
                    if not obj["metadata"].get("deletionTimestamp"):
                        with contextlib.suppress(ApiError):
                            self.store.delete(rtype, obj["metadata"]["name"], name)
            if not left:
                self.store.remove_now("namespaces", name)


class PvcProtection(Controller):
    """Removes the protection finalizer of deleted claims no pod uses any more."""

    name = "pvc-protection-controller"

    def reconcile(self) -> None:
        """One pass over the deleted claims."""
        for claim in self.store.list("persistentvolumeclaims"):
            meta = claim["metadata"]
            if not meta.get("deletionTimestamp") or PVC_PROTECTION not in (meta.get("finalizers") or []):
                continue
            used = any(
                meta["name"] == (v.get("persistentVolumeClaim") or {}).get("claimName")
                for pod in self.store.list("pods", meta["namespace"])
                if pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")
                for v in pod["spec"].get("volumes", [])
            )
            if not used:

                def drop(obj: dict) -> None:
                    obj["metadata"]["finalizers"] = [
                        f for f in obj["metadata"].get("finalizers", []) if f != PVC_PROTECTION
                    ]

                self.store.update("persistentvolumeclaims", meta["name"], meta["namespace"], drop, manager=self.name)
