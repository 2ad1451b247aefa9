"""Observations of the world that preflight checks: GPU, host and cluster facts, and pure parsers for them.

Pure: no I/O. The probes (`node.py` for NVML / nvidia-smi, `cluster.py` for the Kubernetes API) turn what
they read into these types; NVML and `nvidia-smi -q -x` produce identical `GpuNodeFacts` for the same GPUs.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from decimal import ROUND_CEILING
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from k3deploy.kobject import KubeObject
from k3deploy.profile.names import quantity_bytes, quantity_value

MIB = 1024 * 1024
#: The extended resource the NVIDIA device plugin advertises.
GPU_RESOURCE = "nvidia.com/gpu"

#: nvmlGpuFabricState_t values, named as `nvidia-smi -q` prints them.
FABRIC_STATES = {0: "Not Supported", 1: "Not Started", 2: "In Progress", 3: "Completed"}
#: nvmlReturn_t values a fabric probe reports, named as `nvidia-smi -q` prints them.
NVML_RETURNS = {
    0: "Success",
    3: "Not Supported",
    6: "Not Found",
    9: "Driver Not Loaded",
    10: "Timeout",
    999: "Unknown Error",
}
#: nvmlDeviceGpuRecoveryAction_t values, named as `nvidia-smi -q` prints them.
RECOVERY_ACTIONS = {
    0: "None",
    1: "Reset",
    2: "Reboot",
    3: "Drain P2P",
    4: "Drain and Reset",
    5: "Recover IMEX Domain",
    6: "Bus Reset",
    7: "System Reboot",
}
_ARCH_NAMES = {"aarch64": "arm64", "arm64": "arm64", "x86_64": "amd64", "amd64": "amd64"}


class _Facts(BaseModel):
    """Base of every fact type: immutable, no unknown fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class GpuFacts(_Facts):
    """One GPU as NVML or nvidia-smi describes it; None means the device does not report the value."""

    index: int
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_mib: int
    compute_capability: str | None = None
    mig_enabled: bool | None = None
    persistence_mode: bool | None = None
    recovery_action: str | None = None
    retired_pages_pending: bool | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    uncorrectable_ecc_volatile: int | None = None
    fabric_state: str | None = None
    fabric_status: str | None = None
    fabric_cluster_uuid: str | None = None
    fabric_clique_id: int | None = None
    #: What the fabric's health mask (NVML) or nvidia-smi's fabric <health> block reports wrong; empty when healthy.
    fabric_health: list[str] = []

    @property
    def clique(self) -> str | None:
        """`<ClusterUUID>.<CliqueId>`, the NVLink partition as GPU Feature Discovery labels it."""
        if self.fabric_cluster_uuid is None or self.fabric_clique_id is None:
            return None
        return f"{self.fabric_cluster_uuid}.{self.fabric_clique_id}"


class GpuNodeFacts(_Facts):
    """The GPUs of this node and the driver they run under."""

    source: Literal["nvml", "nvidia-smi"]
    driver_version: str
    cuda_driver_version: str
    gpus: list[GpuFacts]


class HostFacts(_Facts):
    """The host (or the pod) preflight runs on."""

    arch: str
    shm_bytes: int | None = None
    cache_path: str
    cache_probe_path: str | None = None
    cache_free_bytes: int | None = None
    imex_service: Literal["active", "inactive", "absent"] | None = None


class NodeFacts(_Facts):
    """One Kubernetes node: its labels and how many `nvidia.com/gpu` it has left."""

    name: str
    labels: dict[str, str]
    allocatable_gpus: int
    requested_gpus: int
    ready: bool = True
    unschedulable: bool = False
    #: Allocatable CPU (millicores) and memory (bytes); None where the node does not report them.
    allocatable_cpu_milli: int | None = None
    requested_cpu_milli: int = 0
    allocatable_memory_bytes: int | None = None
    requested_memory_bytes: int = 0

    @property
    def free_gpus(self) -> int:
        """Allocatable GPUs not requested by running or pending pods."""
        return self.allocatable_gpus - self.requested_gpus

    @property
    def free_cpu_milli(self) -> int | None:
        """Allocatable CPU not requested by running or pending pods, millicores (None: not reported)."""
        return None if self.allocatable_cpu_milli is None else self.allocatable_cpu_milli - self.requested_cpu_milli

    @property
    def free_memory_bytes(self) -> int | None:
        """Allocatable memory not requested by running or pending pods, bytes (None: not reported)."""
        if self.allocatable_memory_bytes is None:
            return None
        return self.allocatable_memory_bytes - self.requested_memory_bytes


class AccessFacts(_Facts):
    """The answer of one SelfSubjectAccessReview."""

    verb: str
    resource: str
    group: str = ""
    namespace: str | None = None
    allowed: bool
    reason: str = ""

    @property
    def label(self) -> str:
        """`verb resource.group` as kubectl auth can-i spells it."""
        res = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {res}"


class ClaimFacts(_Facts):
    """An existing PersistentVolumeClaim: what it was created with (its access modes cannot change)."""

    name: str
    access_modes: list[str] = []
    storage_class: str | None = None
    capacity: str | None = Field(None, description="status.capacity.storage once bound, else the requested size.")
    phase: str | None = None


class KueueFacts(_Facts):
    """Kueue as the profile's gang admission would use it (preflight/kueue.py reads it; checks_kueue.py judges it)."""

    served: bool = Field(description="Whether the API serves Kueue's Workload kind (kueue.x-k8s.io).")
    local_queue: str | None = Field(None, description="The LocalQueue the groups are queued to.")
    local_queue_found: bool = False
    cluster_queue: str | None = Field(None, description="The ClusterQueue that LocalQueue points at.")
    cluster_queue_found: bool = False
    #: nvidia.com/gpu nominal quota per flavor of the ClusterQueue, and each flavor's Topology's node labels (none:
    #: the flavor has no topologyName, or its Topology is missing).
    gpu_quota: dict[str, int] = Field(default_factory=dict)
    flavor_levels: dict[str, list[str]] = Field(default_factory=dict)
    #: Whether Kueue's LeaderWorkerSet webhook took the set's LeaderWorkerSet (a server-side dry run of it came back
    #: suspended by Kueue); None when it could not be tried (no namespace yet, or the dry run was refused).
    lws_integration: bool | None = None
    lws_integration_detail: str = ""


class ClusterFacts(_Facts):
    """What the Kubernetes API says about the cluster a profile would be deployed to."""

    server_version: str
    resources: list[str]
    nodes: list[NodeFacts]
    namespace: str
    namespace_exists: bool
    namespace_labels: dict[str, str] = Field(
        default_factory=dict, description="Labels of the namespace (Pod Security Admission levels among them)."
    )
    secret_name: str | None = None
    secret_keys: list[str] | None = None
    storage_classes: list[str] = []
    default_storage_class: str | None = None
    access: list[AccessFacts] = []
    storage_provisioners: dict[str, str] = Field(default_factory=dict, description="StorageClass name -> provisioner.")
    runtime_class_exists: bool | None = Field(
        None, description="Whether the profile's RuntimeClass exists; None: not read."
    )
    model_cache_claim: ClaimFacts | None = Field(None, description="The weight-cache PVC when it already exists.")
    #: Installed controller versions by component (preflight/versions.py); None when they could not be read.
    installed_versions: dict[str, str] | None = None
    #: Kueue's setup, read when the profile's gang admission is kueue or auto.
    kueue: KueueFacts | None = None


class Facts(_Facts):
    """Everything one preflight run observed; a part is None when it was not asked for."""

    gpu: GpuNodeFacts | None = None
    #: Why no GPU was seen, when the run took that as a skip (`preflight --node --gpus-optional`), not an error.
    gpu_unseen: str | None = None
    host: HostFacts | None = None
    cluster: ClusterFacts | None = None


def normalize_arch(machine: str) -> str:
    """Kubernetes' name for a CPU architecture (`aarch64` -> `arm64`, `x86_64` -> `amd64`)."""
    return _ARCH_NAMES.get(machine.lower(), machine.lower())


def cuda_version_from_int(value: int) -> str:
    """NVML's CUDA driver version integer (13000) as `major.minor` (13.0)."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def format_fabric_uuid(raw: bytes) -> str | None:
    """The 16-byte fabric ClusterUUID in the 8-4-4-4-12 form nvidia-smi prints; None when all zero (no domain)."""
    if not any(raw):
        return None
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"


#: The two-bit fields of nvmlGpuFabricInfo_v2's healthMask that say "true" (1) when something is wrong, by shift
#: (nvml.h NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_*; value 0 is "not supported", 2 "false"), named as nvidia-smi names them.
_FABRIC_HEALTH_FLAGS = {
    0: "degraded bandwidth",
    2: "route recovery in progress",
    4: "route unhealthy",
    6: "access timeout recovery",
}
#: The four-bit incorrect-configuration field (shift 8): 0 not supported, 1 none, 2.. a named misconfiguration.
_FABRIC_CONFIG_SHIFT = 8
_FABRIC_CONFIG_PROBLEMS = {
    2: "incorrect system GUID",
    3: "incorrect chassis serial number",
    4: "no partition",
    5: "insufficient NVLinks",
    6: "incompatible GPU firmware",
    7: "invalid location",
    8: "invalid GPU state",
}


def fabric_health_problems(mask: int) -> list[str]:
    """What an NVML fabric health mask reports wrong (empty for a healthy fabric or a mask of zeros)."""
    problems = [name for shift, name in _FABRIC_HEALTH_FLAGS.items() if (mask >> shift) & 0x3 == 1]
    config = (mask >> _FABRIC_CONFIG_SHIFT) & 0xF
    if config >= 2:
        problems.append(_FABRIC_CONFIG_PROBLEMS.get(config, f"incorrect configuration {config}"))
    return problems


def _xml_fabric_health(gpu: ET.Element) -> list[str]:
    """nvidia-smi's fabric <health> block: a flag that reads True, or a bandwidth that is not full, is a problem."""
    health = gpu.find("fabric/health")
    if health is None:
        return []
    problems = []
    for child in health:
        value = (child.text or "").strip()
        name = child.tag.replace("_", " ")
        if child.tag == "bandwidth":
            if value not in ("", "Full", "N/A", "Not Supported"):
                problems.append(f"bandwidth {value}")
        elif value == "True":
            problems.append(name)
    return problems


def version_tuple(version: str) -> tuple[int, ...]:
    """`580.95.05` -> (580, 95, 5); `v1.34.1-gke.2` -> (1, 34, 1); anything after the dotted numbers is dropped."""
    match = re.match(r"[vV]?(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(part) for part in match.group(1).split(".")) if match else ()


def parse_compute_caps(csv_text: str) -> dict[int, str]:
    """`nvidia-smi --query-gpu=index,compute_cap --format=csv,noheader` -> {index: "10.3"}."""
    caps: dict[int, str] = {}
    for line in csv_text.splitlines():
        if not line.strip():
            continue
        index, _, cap = (part.strip() for part in line.partition(","))
        if index.isdigit() and re.fullmatch(r"\d+\.\d+", cap):
            caps[int(index)] = cap
    return caps


def _text(node: ET.Element | None, path: str) -> str | None:
    """Text at `path` under `node`; None when missing, empty or one of nvidia-smi's not-available words."""
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    if (
        not value
        or value in {"N/A", "[N/A]", "Unknown Error", "Not Supported", "[Not Supported]"}
        or "deprecated" in value
    ):
        return None
    return value


def _yes_no(node: ET.Element, path: str, yes: str = "Yes") -> bool | None:
    value = _text(node, path)
    return None if value is None else value == yes


def _int(node: ET.Element, path: str) -> int | None:
    value = _text(node, path)
    if value is None:
        return None
    match = re.match(r"-?\d+", value)
    return int(match.group()) if match else None


def _uncorrectable_ecc(gpu: ET.Element) -> int | None:
    """Sum of the volatile uncorrectable ECC counters (DRAM + SRAM), as NVML's total uncorrected count."""
    volatile = gpu.find("ecc_errors/volatile")
    if volatile is None:
        return None
    values = [_int(volatile, child.tag) for child in volatile if "uncorrectable" in child.tag]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _gpu_from_xml(index: int, gpu: ET.Element, caps: dict[int, str]) -> GpuFacts:
    memory = _text(gpu, "fb_memory_usage/total")
    if memory is None or not memory.endswith("MiB"):
        raise ValueError(f"GPU {index}: no fb_memory_usage/total in MiB")
    mig = _text(gpu, "mig_mode/current_mig")
    persistence = _text(gpu, "persistence_mode")
    recovery = gpu.find("gpu_recovery_action")
    state = _text(gpu, "fabric/state")
    return GpuFacts(
        index=index,
        name=_text(gpu, "product_name") or "unknown",
        uuid=_text(gpu, "uuid"),
        pci_bus_id=_text(gpu, "pci/pci_bus_id") or gpu.get("id"),
        memory_mib=int(memory.split()[0]),
        compute_capability=caps.get(index),
        mig_enabled=None if mig is None else mig == "Enabled",
        persistence_mode=None if persistence is None else persistence == "Enabled",
        recovery_action=recovery.text.strip() if recovery is not None and recovery.text else None,
        retired_pages_pending=_yes_no(gpu, "retired_pages/pending_retirement"),
        remapped_rows_pending=_yes_no(gpu, "remapped_rows/remapped_row_pending"),
        remapped_rows_failure=_yes_no(gpu, "remapped_rows/remapped_row_failure"),
        uncorrectable_ecc_volatile=_uncorrectable_ecc(gpu),
        fabric_state=None if state in (None, "Not Supported") else state,
        fabric_status=_text(gpu, "fabric/status") if state not in (None, "Not Supported") else None,
        fabric_cluster_uuid=_fabric_uuid_text(_text(gpu, "fabric/clusterUuid")),
        fabric_clique_id=_int(gpu, "fabric/cliqueId"),
        fabric_health=_xml_fabric_health(gpu),
    )


def _fabric_uuid_text(value: str | None) -> str | None:
    if value is None or not value.strip("0-"):
        return None
    return value.lower()


def parse_nvidia_smi_xml(xml_text: str, compute_caps: dict[int, str] | None = None) -> GpuNodeFacts:
    """Parse `nvidia-smi -q -x` (schema nvsmi_device_v12) plus the compute capabilities it does not carry."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ValueError(f"nvidia-smi -q -x printed malformed XML: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise ValueError(f"nvidia-smi -q -x printed <{root.tag}>, not <nvidia_smi_log>")
    driver = _text(root, "driver_version")
    cuda = _text(root, "cuda_version")
    if driver is None or cuda is None:
        raise ValueError("nvidia-smi -q -x lacks driver_version or cuda_version")
    gpus = [_gpu_from_xml(i, gpu, compute_caps or {}) for i, gpu in enumerate(root.findall("gpu"))]
    return GpuNodeFacts(source="nvidia-smi", driver_version=driver, cuda_driver_version=cuda, gpus=gpus)


def cpu_milli(text: object) -> int:
    """A CPU quantity (`32`, `0.5`, `100m`) in millicores, rounded up as Quantity.MilliValue() rounds; ValueError
    when malformed or negative (read through the one quantity parser, profile/names.py)."""
    number = quantity_value(str(text).strip())
    if number < 0:
        raise ValueError(f"{text!r} is negative; a CPU quantity must be at least 0")
    return int((number * 1000).to_integral_value(rounding=ROUND_CEILING))


#: How each counted resource's quantities read: CPU in millicores, memory in bytes, GPUs as a count.
_PARSERS: dict[str, Callable[[str], int]] = {"cpu": cpu_milli, "memory": quantity_bytes, GPU_RESOURCE: int}


def _quantity(resources: KubeObject | None, resource: str) -> int:
    value = (resources or {}).get(resource)
    try:
        return _PARSERS[resource](str(value)) if value is not None else 0
    except ValueError:
        return 0


def _gpu_quantity(resources: KubeObject | None) -> int:
    """`nvidia.com/gpu` from a requests or limits map (extended resources are whole numbers)."""
    return _quantity(resources, GPU_RESOURCE)


def pod_request(pod: KubeObject, resource: str) -> int:
    """What a pod holds of `resource` (cpu, memory or nvidia.com/gpu) on its node, as the scheduler counts it: the
    larger of its containers' sum and its largest init container, plus the pod's overhead (k8s.io/component-helpers
    resource/helpers.go PodRequests). For a GPU a limit without a request is also the request."""
    spec = pod.get("spec") or {}

    def request(container: KubeObject) -> int:
        resources = container.get("resources") or {}
        asked = _quantity(resources.get("requests"), resource)
        return asked or (_quantity(resources.get("limits"), resource) if resource == GPU_RESOURCE else 0)

    main = sum(request(c) for c in spec.get("containers") or [])
    init = max((request(c) for c in spec.get("initContainers") or []), default=0)
    return max(main, init) + _quantity(spec.get("overhead"), resource)


def _allocatable(status: KubeObject, resource: str) -> int | None:
    """A node's allocatable `resource`, None when it does not report one."""
    value = (status.get("allocatable") or {}).get(resource)
    return None if value is None else _quantity({resource: value}, resource)


def parse_nodes(nodes: list[KubeObject], pods: list[KubeObject]) -> list[NodeFacts]:
    """Nodes as the API returns them, with the GPUs already requested by pods bound to them and not finished."""
    requested: dict[str, dict[str, int]] = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            held = requested.setdefault(node_name, {})
            for resource in _PARSERS:
                held[resource] = held.get(resource, 0) + pod_request(pod, resource)
    out = []
    for node in nodes:
        meta, status = node.get("metadata") or {}, node.get("status") or {}
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        name = meta.get("name", "")
        out.append(
            NodeFacts(
                name=name,
                labels=dict(meta.get("labels") or {}),
                allocatable_gpus=_gpu_quantity(status.get("allocatable")),
                requested_gpus=requested.get(name, {}).get(GPU_RESOURCE, 0),
                allocatable_cpu_milli=_allocatable(status, "cpu"),
                requested_cpu_milli=requested.get(name, {}).get("cpu", 0),
                allocatable_memory_bytes=_allocatable(status, "memory"),
                requested_memory_bytes=requested.get(name, {}).get("memory", 0),
                ready=conditions.get("Ready") == "True",
                unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
            )
        )
    return sorted(out, key=lambda n: n.name)
