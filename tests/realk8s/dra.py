"""A stand-in for the NVIDIA DRA driver for GPUs (NVIDIA/k8s-dra-driver-gpu), as a small client of the real API
server: the driver's kubelet plugins need a GPU, NVML and a kubelet, and its IMEX daemons need NVLink, so none of
it can run here. What it publishes is what the real scheduler and the real resourceclaim controller read, so that
part is reproduced from the upstream sources (commit 22407113, the one the ComputeDomain CRD beside the checkout
comes from):

- the DeviceClasses `gpu.nvidia.com`, `compute-domain-daemon.nvidia.com` and
  `compute-domain-default-channel.nvidia.com` with the chart's CEL selectors
  (deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-*.yaml). `extendedResourceName` of the GPU class is
  left out: it needs the DRAExtendedResource feature gate (alpha, off in 1.34), so the pods' `nvidia.com/gpu`
  requests are served by the nodes' capacity, as the device plugin does;
- per GPU node, the ResourceSlice of driver `gpu.nvidia.com` (pool = node name) with its 4 GPUs `gpu-<minor>` and
  their attributes and `memory` capacity (cmd/gpu-kubelet-plugin/deviceinfo.go GpuInfo.Attributes, GetDevice;
  partitions.go fullGpuCapacity), and the ResourceSlice of driver `compute-domain.nvidia.com` with `channel-0` and
  `daemon-0` (cmd/compute-domain-kubelet-plugin/deviceinfo.go, driver.go: channels other than 0 are not published);
  both owned by their Node, as the kubelet plugin helper makes them;
- for each ComputeDomain, what the compute-domain controller does (cmd/compute-domain-controller/computedomain.go,
  resourceclaimtemplate.go and templates/compute-domain-workload-claim-template.tmpl.yaml): its finalizer, the
  workload ResourceClaimTemplate named by spec.channel.resourceClaimTemplate.name (labels
  resource.nvidia.com/computeDomain=<uid>, computeDomainTarget=Workload, the opaque ComputeDomainChannelConfig with
  domainID and allocationMode), deleted with the ComputeDomain before the finalizer goes;
- its status as the IMEX daemons report it: one entry per node holding an allocated channel of the domain (name,
  ipAddress, cliqueID from the node's nvidia.com/gpu.clique label, the first free index in the clique as
  cdstatus.go getNextAvailableIndex), each Ready, and status.status by calculateGlobalStatus (Ready when at least
  numNodes nodes are listed and none is NotReady);
- the IMEX-ready gate: the compute-domain kubelet plugin fails NodePrepareResources until the pod's node is Ready in
  the domain (cmd/compute-domain-kubelet-plugin/computedomain.go isCurrentNodeReady), so the container does not
  start. KWOK has no NodePrepareResources: its Stage `realk8s-imex-channel-wait` (objects.py) holds a pod that
  has resource claims in ContainerCreating until this stand-in marks it with IMEX_READY_ANNOTATION, which it does
  once every channel claim of the pod is allocated on a node Ready in its domain.

Not reproduced (nothing here reads them): the IMEX daemons' DaemonSet and its daemon claim template, the
ComputeDomainClique objects, the node label resource.nvidia.com/computeDomain.
"""

from __future__ import annotations

import uuid
from typing import Any, Self

from tests.realk8s.client import Api, ApiError, resource_path, wait_until
from tests.realk8s.poller import Poller
from tests.realk8s.realnode import REAL_NODE_KEY
from tests.realk8s.stages import IMEX_READY_ANNOTATION

GPU_DRIVER = "gpu.nvidia.com"
CD_DRIVER = "compute-domain.nvidia.com"
CD_LABEL = "resource.nvidia.com/computeDomain"
CD_TARGET_LABEL = "resource.nvidia.com/computeDomainTarget"
#: The controller's finalizer on ComputeDomains and their claim templates (computeDomainFinalizer).
FINALIZER = CD_LABEL
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
RESOURCE = "resource.k8s.io/v1"
CD_API = "resource.nvidia.com/v1beta1"
CLIQUE_LABEL = "nvidia.com/gpu.clique"
GPU_MEMORY = "284208Mi"


def device_classes() -> list[dict[str, Any]]:
    """The three DeviceClasses the driver's chart installs with GPUs and ComputeDomains enabled."""
    selectors = {
        "gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        "compute-domain-daemon.nvidia.com": "device.driver == 'compute-domain.nvidia.com' && "
        "device.attributes['compute-domain.nvidia.com'].type == 'daemon'",
        CHANNEL_CLASS: "device.driver == 'compute-domain.nvidia.com' && "
        "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
        "device.attributes['compute-domain.nvidia.com'].id == 0",
    }
    return [
        {
            "apiVersion": RESOURCE,
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        }
        for name, expression in selectors.items()
    ]


def _slice(node: dict[str, Any], driver: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    name = node["metadata"]["name"]
    owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"], "controller": True}
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-{driver}", "ownerReferences": [owner]},
        "spec": {
            "driver": driver,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def gpu_slice(node: dict[str, Any]) -> dict[str, Any]:
    """The GPU kubelet plugin's ResourceSlice of a node: one device per GPU of nvidia.com/gpu.count."""
    labels = node["metadata"].get("labels") or {}
    count = int(labels.get("nvidia.com/gpu.count", "4"))
    driver = labels.get("nvidia.com/cuda.driver-version.full", "580.95.05")
    semver = ".".join(str(int(part)) for part in driver.split("."))
    cuda = f"{labels.get('nvidia.com/cuda.runtime-version.major', '13')}.{labels.get('nvidia.com/cuda.runtime-version.minor', '0')}.0"
    compute = f"{labels.get('nvidia.com/gpu.compute.major', '10')}.{labels.get('nvidia.com/gpu.compute.minor', '3')}.0"
    devices = []
    for minor in range(count):
        gpu_uuid = uuid.uuid5(uuid.NAMESPACE_URL, f"{node['metadata']['name']}/gpu-{minor}")
        attributes = {
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{gpu_uuid}"},
            "productName": {"string": "NVIDIA GB300"},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Blackwell"},
            "cudaComputeCapability": {"version": compute},
            "driverVersion": {"version": semver},
            "cudaDriverVersion": {"version": cuda},
            "addressingMode": {"string": "ATS"},
        }
        devices.append(
            {"name": f"gpu-{minor}", "attributes": attributes, "capacity": {"memory": {"value": GPU_MEMORY}}}
        )
    return _slice(node, GPU_DRIVER, devices)


def compute_domain_slice(node: dict[str, Any]) -> dict[str, Any]:
    """The compute-domain kubelet plugin's ResourceSlice of a node: channel-0 and daemon-0."""
    devices = [
        {"name": f"{kind}-0", "attributes": {"type": {"string": kind}, "id": {"int": 0}}}
        for kind in ("channel", "daemon")
    ]
    return _slice(node, CD_DRIVER, devices)


def workload_claim_template(cd: dict[str, Any]) -> dict[str, Any]:
    """The workload ResourceClaimTemplate the controller makes for a ComputeDomain, in its namespace."""
    meta, channel = cd["metadata"], cd["spec"]["channel"]
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "namespace": meta["namespace"],
            "name": channel["resourceClaimTemplate"]["name"],
            "finalizers": [FINALIZER],
            "labels": {CD_LABEL: meta["uid"], CD_TARGET_LABEL: "Workload"},
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "channel", "exactly": {"deviceClassName": CHANNEL_CLASS}}],
                    "config": [
                        {
                            "requests": ["channel"],
                            "opaque": {
                                "driver": CD_DRIVER,
                                "parameters": {
                                    "apiVersion": CD_API,
                                    "kind": "ComputeDomainChannelConfig",
                                    "domainID": meta["uid"],
                                    "allocationMode": channel.get("allocationMode") or "Single",
                                },
                            },
                        }
                    ],
                }
            }
        },
    }


def channel_nodes(claims: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Domain uid -> nodes holding an allocated channel of it, from ResourceClaims (their config names the domain)."""
    out: dict[str, list[str]] = {}
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        devices = allocation.get("devices") or {}
        for config in devices.get("config") or []:
            opaque = config.get("opaque") or {}
            if opaque.get("driver") != CD_DRIVER:
                continue
            domain = (opaque.get("parameters") or {}).get("domainID")
            for result in devices.get("results") or []:
                if result.get("driver") == CD_DRIVER and domain and result["pool"] not in out.get(domain, []):
                    out.setdefault(domain, []).append(result["pool"])
    return out


def domain_status(cd: dict[str, Any], nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """status.nodes and status.status of a domain whose channels are allocated on `nodes` (all Ready)."""
    before = {n["name"]: n for n in (cd.get("status") or {}).get("nodes") or []}
    entries: list[dict[str, Any]] = []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        clique = (node["metadata"].get("labels") or {}).get(CLIQUE_LABEL, "")
        address = next(
            (a["address"] for a in (node.get("status") or {}).get("addresses") or [] if a["type"] == "InternalIP"), ""
        )
        entries.append({"name": name, "ipAddress": address, "cliqueID": clique, "status": "Ready", "index": -1})
    for entry in entries:
        old = before.get(entry["name"])
        if old is not None and old.get("cliqueID") == entry["cliqueID"]:
            entry["index"] = old["index"]
    for entry in entries:
        if entry["index"] < 0:
            used = {e["index"] for e in entries if e["cliqueID"] == entry["cliqueID"]}
            entry["index"] = next(i for i in range(len(entries) + 1) if i not in used)
    num_nodes = int(cd["spec"].get("numNodes") or 0)
    ready = len(entries) >= num_nodes and all(e["status"] == "Ready" for e in entries)
    return {"status": "Ready" if ready else "NotReady", "nodes": entries}


class DraDriver(Poller):
    """Publishes the slices and classes, and runs the ComputeDomain controller's part, from a thread polling the API
    (0.3 s) until `stop()`."""

    def __init__(self, api: Api, interval_s: float = 0.3) -> None:
        super().__init__(api, interval_s, "dra-driver")
        self._published: set[str] = set()

    def start(self) -> Self:
        """Install the DeviceClasses, publish the slices of the nodes there are (a first pass, retried while the
        server still answers 429 for a CRD just established) and start the thread."""
        for device_class in device_classes():
            self.api.apply(
                resource_path(RESOURCE, "deviceclasses", name=device_class["metadata"]["name"]), device_class
            )

        def first_pass() -> bool:
            self.sync()
            return True

        wait_until("the DRA driver's first pass", first_pass, 60)
        return super().start()

    def sync(self) -> None:
        """One pass: slices for new GPU nodes, templates and status for ComputeDomains, the gate for pods."""
        nodes = {n["metadata"]["name"]: n for n in self.api.get("/api/v1/nodes")["items"]}
        self._publish(nodes)
        claims = self.api.get(resource_path(RESOURCE, "resourceclaims"))["items"]
        holders = channel_nodes(claims)
        ready: dict[str, set[str]] = {}
        for cd in self.api.get(resource_path(CD_API, "computedomains"))["items"]:
            uid = cd["metadata"]["uid"]
            if self._reconcile(cd, [nodes[n] for n in holders.get(uid, []) if n in nodes]):
                ready[uid] = set(holders.get(uid, []))
        self._open_gates(claims, ready)

    def _publish(self, nodes: dict[str, dict[str, Any]]) -> None:
        for node in nodes.values():
            labels = node["metadata"].get("labels") or {}
            gpu_node = labels.get("nvidia.com/gpu.present") == "true" or labels.get(REAL_NODE_KEY) == "true"
            if not gpu_node or node["metadata"]["uid"] in self._published:
                continue
            for obj in (gpu_slice(node), compute_domain_slice(node)):
                self.api.apply(resource_path(RESOURCE, "resourceslices", name=obj["metadata"]["name"]), obj)
            self._published.add(node["metadata"]["uid"])

    def _reconcile(self, cd: dict[str, Any], nodes: list[dict[str, Any]]) -> bool:
        """Template, finalizer and status of one domain; True when it is Ready."""
        meta = cd["metadata"]
        path = resource_path(CD_API, "computedomains", meta["namespace"], meta["name"])
        template_name = cd["spec"]["channel"]["resourceClaimTemplate"]["name"]
        template_path = resource_path(RESOURCE, "resourceclaimtemplates", meta["namespace"], template_name)
        finalizers = list(meta.get("finalizers") or [])
        if meta.get("deletionTimestamp"):
            template = self.api.find(template_path)
            if template is not None and (template["metadata"].get("labels") or {}).get(CD_LABEL) == meta["uid"]:
                if not template["metadata"].get("deletionTimestamp"):
                    self.api.delete(template_path)
                left = [f for f in template["metadata"].get("finalizers") or [] if f != FINALIZER]
                self._merge(template_path, {"metadata": {"finalizers": left or None}})
                return False
            if FINALIZER in finalizers:
                left = [f for f in finalizers if f != FINALIZER]
                self._merge(
                    path, {"metadata": {"finalizers": left or None, "resourceVersion": meta["resourceVersion"]}}
                )
            return False
        if FINALIZER not in finalizers:
            self._merge(path, {"metadata": {"finalizers": [*finalizers, FINALIZER]}})
        if self.api.find(template_path) is None:
            self.api.create(
                resource_path(RESOURCE, "resourceclaimtemplates", meta["namespace"]), workload_claim_template(cd)
            )
        status = domain_status(cd, nodes)
        if (cd.get("status") or {}) != status:
            self._merge(path + "/status", {"status": status})
        return status["status"] == "Ready"

    def _open_gates(self, claims: list[dict[str, Any]], ready: dict[str, set[str]]) -> None:
        by_name = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims}
        for pod in self.api.get("/api/v1/pods")["items"]:
            meta = pod["metadata"]
            statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
            if (
                not statuses
                or IMEX_READY_ANNOTATION in (meta.get("annotations") or {})
                or meta.get("deletionTimestamp")
            ):
                continue
            if len(statuses) < len(pod["spec"].get("resourceClaims") or []):
                continue
            gated = False
            for status in statuses:
                claim = by_name.get((meta["namespace"], status.get("resourceClaimName") or ""))
                if claim is None:
                    gated = True
                    break
                for domain in channel_nodes([claim]):
                    if pod["spec"].get("nodeName") not in ready.get(domain, set()):
                        gated = True
                if not (claim.get("status") or {}).get("allocation"):
                    gated = True
            if not gated:
                path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
                self._merge(path, {"metadata": {"annotations": {IMEX_READY_ANNOTATION: "true"}}})

    def _merge(self, path: str, patch: dict[str, Any]) -> None:
        response = self.api.request("PATCH", path, json=patch, headers={"Content-Type": "application/merge-patch+json"})
        if response.status_code >= 300 and response.status_code not in (404, 409):
            raise ApiError(response.status_code, response.text)
