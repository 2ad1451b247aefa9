"""A ComputeDomain controller in the manner of NVIDIA's DRA driver (NVIDIA/k8s-dra-driver-gpu
cmd/compute-domain-controller): it creates the channel's ResourceClaimTemplate and reports the domain Ready once pods
claiming that template run on enough nodes. While its IMEX daemons are not ready (`imex_ready` False) the kubelet
plugin cannot prepare a channel claim, so pods claiming the template stay ContainerCreating (`holds`).
"""

from __future__ import annotations

import contextlib

from tests.kubeapi.controllers.base import Controller
from tests.kubeapi.errors import ApiError

KEY = ("resource.nvidia.com", "computedomains")


class ComputeDomainController(Controller):
    """Reconciles resource.nvidia.com/v1beta1 ComputeDomains once their CRD exists."""

    name = "compute-domain-controller"

    def __init__(self, store, tick: float = 0.05) -> None:  # Store
        super().__init__(store, tick)
        #: False keeps every domain NotReady (an IMEX daemon that never comes up).
        self.imex_ready = True

    def holds(self, pod: dict) -> bool:
        """Whether `pod` claims a ComputeDomain channel whose IMEX daemon is not ready (kubelet waits)."""
        rtype = self.store.registry.by_key(KEY)
        if self.imex_ready or rtype is None:
            return False
        templates = {((d.get("spec") or {}).get("channel") or {}).get("resourceClaimTemplate", {}).get("name")
                     for d in self.store.list(rtype, pod["metadata"].get("namespace"))}
        return any(c.get("resourceClaimTemplateName") in templates for c in pod["spec"].get("resourceClaims") or [])

    def reconcile(self) -> None:
        """Sync every ComputeDomain."""
        rtype = self.store.registry.by_key(KEY)
        if rtype is None:
            return
        for domain in self.store.list(rtype):
            self._sync(rtype, domain)

    def _sync(self, rtype, domain: dict) -> None:  # ResourceType
        meta = domain["metadata"]
        template = ((domain.get("spec") or {}).get("channel") or {}).get("resourceClaimTemplate", {}).get("name")
        if template and self.store.registry.by_key(("resource.k8s.io", "resourceclaimtemplates")) is not None \
                and self.store.get("resourceclaimtemplates", template, meta["namespace"]) is None:
            with contextlib.suppress(ApiError):
                self.store.create("resourceclaimtemplates", {
                    "metadata": {"name": template, "namespace": meta["namespace"], "ownerReferences": [{
                        "apiVersion": domain["apiVersion"], "kind": "ComputeDomain", "name": meta["name"],
                        "uid": meta["uid"], "controller": True}]},
                    "spec": {"spec": {"devices": {"requests": [{"name": "channel", "exactly": {
                        "deviceClassName": "compute-domain-default-channel.nvidia.com"}}]}}},
                }, meta["namespace"], manager=self.name)
        nodes = {n["metadata"]["name"]: n for n in self.store.list("nodes")}
        running = sorted({p["spec"]["nodeName"] for p in self.store.list("pods", meta["namespace"])
                          if p["spec"].get("nodeName") and p.get("status", {}).get("phase") == "Running"
                          and any(c.get("resourceClaimTemplateName") == template
                                  for c in p["spec"].get("resourceClaims", []))})
        entries = [{"name": n, "cliqueID": (nodes.get(n, {}).get("metadata", {}).get("labels") or {}).get(
            "nvidia.com/gpu.clique", ""), "ipAddress": "10.0.0.1", "index": i,
            "status": "Ready" if self.imex_ready else "NotReady"} for i, n in enumerate(running)]
        wanted = (domain.get("spec") or {}).get("numNodes", 0)
        ready = self.imex_ready and bool(entries) and len(entries) >= wanted

        def write(obj: dict) -> None:
            obj["status"] = {"status": "Ready" if ready else "NotReady", "nodes": entries}

        self.store.update(rtype, meta["name"], meta["namespace"], write, subresource="status", manager=self.name)
