"""A ComputeDomain controller in the manner of NVIDIA's DRA driver (NVIDIA/k8s-dra-driver-gpu
cmd/compute-domain-controller): it creates the channel's ResourceClaimTemplate and reports the domain Ready once pods
claiming that template run on enough nodes. While its IMEX daemons are not ready (`imex_ready` False) the kubelet
plugin cannot prepare a channel claim, so pods claiming the template stay ContainerCreating (`holds`).

One ComputeDomain may span cliques (several LeaderWorkerSet groups claim the same channel template): as in the
driver from 25.8, each clique is its own IMEX domain, so a node's `index` counts only the nodes of its clique
(cmd/compute-domain-daemon/cdstatus.go getNextAvailableIndex), at most MAX_NODES_PER_IMEX_DOMAIN of them (a node
past it gets no index: NotReady, its pods held). A node serves one ComputeDomain at a time: the kubelet plugin
labels it with the domain's uid and refuses a claim of another domain while the label is held
(cmd/compute-domain-kubelet-plugin/computedomain.go AddNodeLabel: "label already exists for a different
ComputeDomain"), so such a pod stays ContainerCreating too.
"""

from __future__ import annotations

import contextlib

from tests.kubeapi.controllers.base import Controller
from tests.kubeapi.errors import ApiError

KEY = ("resource.nvidia.com", "computedomains")
#: cmd/compute-domain-controller/main.go defaultMaxNodesPerIMEXDomain (the GB200/GB300 NVLink domain size).
MAX_NODES_PER_IMEX_DOMAIN = 18


class ComputeDomainController(Controller):
    """Reconciles resource.nvidia.com/v1beta1 ComputeDomains once their CRD exists."""

    name = "compute-domain-controller"

    def __init__(self, store, tick: float = 0.05) -> None:
        super().__init__(store, tick)
        #: False keeps every domain NotReady (an IMEX daemon that never comes up).
        self.imex_ready = True

    def holds(self, pod: dict) -> bool:
        """Whether `pod` claims a ComputeDomain channel whose IMEX daemon on its node is not ready (kubelet waits):
        the daemons are down, the node already serves another domain, or its clique's IMEX domain is full."""
        rtype = self.store.registry.by_key(KEY)
        if rtype is None:
            return False
        domain = self._domain_of(rtype, pod)
        if domain is None:
            return False
        if not self.imex_ready:
            return True
        node = pod["spec"].get("nodeName")
        if node is None:
            return False
        others = {
            self._domain_key(d)
            for d in self.store.list(rtype)
            if self._domain_key(d) != self._domain_key(domain) and node in self._running_nodes(d)
        }
        if others:
            return True
        entries = self._entries(domain)
        entry = next((e for e in entries if e["name"] == node), None)
        if entry is not None:
            return entry["status"] != "Ready"
        clique = ((self.store.get("nodes", node) or {}).get("metadata", {}).get("labels") or {}).get(
            "nvidia.com/gpu.clique", ""
        )
        return sum(e["cliqueID"] == clique for e in entries) >= MAX_NODES_PER_IMEX_DOMAIN

    @staticmethod
    def _template(domain: dict) -> str | None:
        return ((domain.get("spec") or {}).get("channel") or {}).get("resourceClaimTemplate", {}).get("name")

    @staticmethod
    def _domain_key(domain: dict) -> tuple[str, str]:
        return domain["metadata"]["namespace"], domain["metadata"]["name"]

    def _domain_of(self, rtype, pod: dict) -> dict | None:
        claimed = {c.get("resourceClaimTemplateName") for c in pod["spec"].get("resourceClaims") or []}
        return next(
            (d for d in self.store.list(rtype, pod["metadata"].get("namespace")) if self._template(d) in claimed), None
        )

    def _running_nodes(self, domain: dict) -> list[str]:
        """Nodes with a Running pod that claims the domain's channel (where its IMEX daemons run), oldest pod first."""
        template, namespace = self._template(domain), domain["metadata"]["namespace"]
        pods = [
            p
            for p in self.store.list("pods", namespace)
            if p["spec"].get("nodeName")
            and p.get("status", {}).get("phase") == "Running"
            and any(c.get("resourceClaimTemplateName") == template for c in p["spec"].get("resourceClaims", []))
        ]
        pods.sort(key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
        return list(dict.fromkeys(p["spec"]["nodeName"] for p in pods))

    def _entries(self, domain: dict) -> list[dict]:
        """status.nodes: one entry per node, indexed within its clique (one IMEX domain per clique)."""
        nodes = {n["metadata"]["name"]: n for n in self.store.list("nodes")}
        per_clique: dict[str, int] = {}
        entries = []
        for name in self._running_nodes(domain):
            clique = (nodes.get(name, {}).get("metadata", {}).get("labels") or {}).get("nvidia.com/gpu.clique", "")
            index = per_clique.get(clique, 0)
            per_clique[clique] = index + 1
            ready = self.imex_ready and index < MAX_NODES_PER_IMEX_DOMAIN
            entries.append(
                {
                    "name": name,
                    "cliqueID": clique,
                    "ipAddress": "10.0.0.1",
                    "index": index,
                    "status": "Ready" if ready else "NotReady",
                }
            )
        return entries

    def reconcile(self) -> None:
        """Sync every ComputeDomain."""
        rtype = self.store.registry.by_key(KEY)
        if rtype is None:
            return
        for domain in self.store.list(rtype):
            self._sync(rtype, domain)

    def _sync(self, rtype, domain: dict) -> None:
        meta = domain["metadata"]
        template = ((domain.get("spec") or {}).get("channel") or {}).get("resourceClaimTemplate", {}).get("name")
        if (
            template
            and self.store.registry.by_key(("resource.k8s.io", "resourceclaimtemplates")) is not None
            and self.store.get("resourceclaimtemplates", template, meta["namespace"]) is None
        ):
            with contextlib.suppress(ApiError):
                self.store.create(
                    "resourceclaimtemplates",
                    {
                        "metadata": {
                            "name": template,
                            "namespace": meta["namespace"],
                            "ownerReferences": [
                                {
                                    "apiVersion": domain["apiVersion"],
                                    "kind": "ComputeDomain",
                                    "name": meta["name"],
                                    "uid": meta["uid"],
                                    "controller": True,
                                }
                            ],
                        },
                        "spec": {
                            "spec": {
                                "devices": {
                                    "requests": [
                                        {
                                            "name": "channel",
                                            "exactly": {"deviceClassName": "compute-domain-default-channel.nvidia.com"},
                                        }
                                    ]
                                }
                            }
                        },
                    },
                    meta["namespace"],
                    manager=self.name,
                )
        entries = self._entries(domain)
        wanted = (domain.get("spec") or {}).get("numNodes", 0)
        ready = (
            self.imex_ready
            and bool(entries)
            and all(e["status"] == "Ready" for e in entries)
            and len(entries) >= wanted
        )

        def write(obj: dict) -> None:
            obj["status"] = {"status": "Ready" if ready else "NotReady", "nodes": entries}

        self.store.update(rtype, meta["name"], meta["namespace"], write, subresource="status", manager=self.name)
