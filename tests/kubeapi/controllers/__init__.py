"""The simulated controllers that run beside the test API server, switched on and off by tests."""

from __future__ import annotations

import re

from tests.kubeapi.controllers.base import Controller
from tests.kubeapi.controllers.computedomain import ComputeDomainController
from tests.kubeapi.controllers.endpointslices import EndpointSliceController
from tests.kubeapi.controllers.job import JobController
from tests.kubeapi.controllers.kubelet import Kubelet
from tests.kubeapi.controllers.lifecycle import GarbageCollector, NamespaceController, PvcProtection
from tests.kubeapi.controllers.lws import LeaderWorkerSetController
from tests.kubeapi.controllers.resourceclaims import ResourceClaimController
from tests.kubeapi.controllers.scheduler import Scheduler
from tests.kubeapi.controllers.storage import VolumeBinder
from tests.kubeapi.store import Store


class Controllers:
    """`kube.controllers`: .lws, .scheduler, .kubelet, .jobs, .volumes, .compute_domains, .claims (ResourceClaims from templates), .endpoint_slices (EndpointSlices of Services), .gc (garbage collection,
    asynchronous: `.gc.delay`), .namespaces (Terminating namespaces) and .pvc_protection; each has `enabled` and its
    own settings.
    """

    def __init__(self, store: Store) -> None:
        self.lws = LeaderWorkerSetController(store)
        self.scheduler = Scheduler(store)
        self.kubelet = Kubelet(store)
        self.jobs = JobController(store)
        self.volumes = VolumeBinder(store)
        self.compute_domains = ComputeDomainController(store)
        self.claims = ResourceClaimController(store)
        self.endpoint_slices = EndpointSliceController(store)
        self.gc = GarbageCollector(store)
        self.namespaces = NamespaceController(store)
        self.pvc_protection = PvcProtection(store)
        self.store = store
        self.kubelet.holds.append(self.compute_domains.holds)

    def all(self) -> list[Controller]:
        """Every controller."""
        return [
            self.lws,
            self.scheduler,
            self.kubelet,
            self.jobs,
            self.volumes,
            self.compute_domains,
            self.claims,
            self.endpoint_slices,
            self.gc,
            self.namespaces,
            self.pvc_protection,
        ]

    def start(self) -> None:
        """Start every controller's thread (garbage collection is then the collector's, asynchronous)."""
        self.store.async_gc = True
        for controller in self.all():
            controller.start()

    def stop(self) -> None:
        """Stop every controller's thread."""
        for controller in self.all():
            controller.stop()

    def errors(self) -> list[str]:
        """Unexpected exceptions any controller raised."""
        return [e for c in self.all() for e in c.errors]

    def fail_job(self, name: str, logs: list[str] | None = None, times: int | None = None) -> None:
        """Make the pods of Job `name` exit 1 with these log lines (`times` pods; None: all, so the Job fails)."""
        self.kubelet.fail("Error", pod=rf"^{re.escape(name)}-[a-z0-9]{{5}}$", logs=logs, times=times)

    def disable(self) -> None:
        """Switch every controller off (the store is then only what the test writes; it collects at once)."""
        self.store.async_gc = False
        for controller in self.all():
            controller.enabled = False
