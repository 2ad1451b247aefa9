"""The `kubernetes` section of a profile: where and how the set is placed on a cluster (pure).

Kept apart from profile/model.py, which re-exports its names, so that neither module outgrows one screenful of
sections.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

import k3deploy
from k3deploy.kobject import KubeObject
from k3deploy.kueue import DEFAULT_LOCAL_QUEUE
from k3deploy.profile.base import _Strict
from k3deploy.profile.kubernetes_parts import (
    DcgmLabels,
    HostVllm,
    SecretRef,
    Toleration,
    _gpu_toleration,
)
from k3deploy.profile.names import (
    Cidr,
    DNSLabel,
    DNSSubdomain,
    LabelKey,
    LabelValue,
    PinnedImage,
    PositiveQuantity,
    ProfileUrl,
    Quantity,
)
from k3deploy.redact import redact_url

#: Bytes per element of vLLM's --dtype values; "auto" means the checkpoint's dtype, bf16 for the models here.
_MODEL_DTYPE_BYTES = {"auto": 2, "bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}


_REGISTRY_HOST = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$")
_VERSION = re.compile(r"^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.-]+)?$")


#: The first release of the DRA driver under its new name (dra-driver-nvidia-gpu); preflight/versions.py orders it
#: after every calendar release (v25.x) of nvidia-dra-driver-gpu.
RENAMED_DRA_FIRST = (0, 4, 0)
#: The oldest LeaderWorkerSet release k3deploy deploys to: its status.observedGeneration is what proves a ready status
#: is the current spec's (rollout/currency.py), and RecreateGroupAfterStart what keeps slow starters from recreating
#: a group in a loop (render/features.py).
LWS_FIRST = (0, 9, 0)


def release_version(value: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a release version such as 'v0.10.0' or '25.8.1' (pre-release suffix ignored)."""
    core = re.split(r"[-+]", value.lstrip("v"), maxsplit=1)[0].split(".")
    numbers = [int(part) for part in core] + [0, 0]
    return numbers[0], numbers[1], numbers[2]


#: Where the release workflow (.github/workflows/release.yml) publishes the k3deploy image.
IMAGE_REPOSITORY = "ghcr.io/k3deploy/k3deploy"


def default_smoke_image() -> str:
    """The image of the running k3deploy version: the smoke Job then runs the code that rendered it."""
    return f"{IMAGE_REPOSITORY}:{k3deploy.__version__}"


class KubernetesSpec(_Strict):
    """Where and how the set is placed on a cluster."""

    namespace: DNSLabel = "kimi-k3"
    service_account: DNSSubdomain = "k3deploy"
    hf_token_secret: SecretRef | None = Field(
        None,
        description="Secret holding a Hub token for the prefetch (mounted optional: Kimi K3 is public, and a missing "
        "Secret does not hold the download).",
    )
    hf_endpoint: ProfileUrl | None = Field(
        None,
        description="HF_ENDPOINT of the prefetch: a Hub mirror for sites that cannot reach the Hub (null: the Hub).",
    )
    https_proxy: ProfileUrl | None = Field(
        None,
        description="Proxy the prefetch downloads through (HTTPS_PROXY and HTTP_PROXY).",
    )
    no_proxy: str | None = Field(None, description="NO_PROXY of the prefetch, with https_proxy.")
    storage_class: DNSSubdomain | None = None
    model_cache_size: PositiveQuantity = "2Ti"
    model_cache_path: str = "/models"
    shm_size: Quantity = "64Gi"
    node_selector: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    clique_label: LabelKey = "nvidia.com/gpu.clique"
    compute_domain: bool = True
    startup_probe_budget_s: int | None = Field(
        None,
        gt=0,
        description="Seconds the serving pods get to load and compile (startup probe, VLLM_ENGINE_READY_TIMEOUT_S); "
        "null: derived from storage.read_mb_s, the checkpoint's size and storage.compile_allowance_s (`k3deploy plan`).",
    )
    rollout_timeout_s: int = Field(10800, gt=0)
    unschedulable_grace_s: int = Field(
        120, ge=0, description="How long a serving pod may stay unschedulable before the rollout fails."
    )
    endpoint_override: ProfileUrl | None = Field(
        None, description="Base URL smoke uses instead of the Service's cluster DNS name (e.g. a port-forward)."
    )
    service_monitor: bool = True
    monitoring: bool | None = Field(
        None,
        description='Render the Grafana dashboard ConfigMap (label grafana_dashboard: "1") and the PrometheusRule of '
        "the profile's targets; null: whenever service_monitor is on.",
    )
    dcgm_labels: DcgmLabels = Field(
        default_factory=DcgmLabels,
        description="Label names of the DCGM exporter's series (pod namespace, pod, host, GPU index) in Prometheus.",
    )
    dcgm_violation_unit: Literal["ns", "us"] = Field(
        "ns",
        description="Unit of DCGM's throttling counters (DCGM_FI_DEV_THERMAL_VIOLATION), which the thermal alert divides "
        "by: ns per DCGM's dcgm_fields.h and dcgm-exporter's etc/default-counters.csv since dcgm-exporter#589; "
        "older CSVs called it us.",
    )
    gpu_thermal_throttle_max: float = Field(
        0.1,
        gt=0,
        le=1,
        description="Fraction of 10 minutes a GPU of the group may run thermally throttled before "
        "K3DeployGpuThermalThrottling fires.",
    )
    grafana_dashboard_namespace: DNSLabel | None = Field(
        None, description="Namespace of the dashboard ConfigMap (the one Grafana's sidecar watches); null: namespace."
    )
    network_policy: bool = Field(
        True,
        description="Render NetworkPolicies: ingress to the set's pods denied except the API port (from the set's namespace, "
        "api_namespaces and monitoring_namespace) and the group's internal ports (between its serving pods); "
        "serving-pod egress limited to DNS and the group.",
    )
    api_namespaces: list[DNSLabel] = Field(
        default_factory=list,
        description="Namespaces (besides the set's own) whose pods may reach the OpenAI API port, e.g. a gateway's.",
    )
    monitoring_namespace: DNSLabel | None = Field(
        "monitoring", description="Namespace of the Prometheus that scrapes /metrics on the API port (null: none)."
    )
    gateway_namespace: DNSLabel | None = Field(
        None,
        description="Namespace the Gateway's proxies run in (routing: inference-pool), which the NetworkPolicies admit "
        "to the endpoint picker's ext-proc port and the API port. Not always the Gateway's own: Envoy Gateway runs "
        "them in envoy-gateway-system by default. With routing inference-pool and NetworkPolicies on, render refuses "
        "a profile that names neither it nor api_cidrs (the Gateway could reach nothing).",
    )
    api_cidrs: list[Cidr] = Field(
        default_factory=list,
        description="IP networks (ipBlock CIDRs) the NetworkPolicies admit to the API port and the endpoint picker's "
        "ext-proc port: for clients and gateways whose data plane is not pods (a cloud load balancer, a node-level "
        "proxy), which no namespaceSelector matches.",
    )
    serving_egress_cidrs: list[str] = Field(
        default_factory=list,
        description="CIDRs the serving pods may reach besides DNS and their group (any port): an internal mirror the "
        "image needs at run time. Empty: none, the pods run offline.",
    )
    gpu_check: bool = Field(
        True,
        description="Give each serving pod a first init container, `gpu-check`, that checks the GPUs and IMEX channel "
        "the pod was given (NVML, in the vLLM image; the script ships in the profile ConfigMap) before the weights load.",
    )
    node_preflight_job: bool = Field(
        True,
        description="Render the node-preflight Job: `k3deploy preflight --node` on every GPU node of the group (an Argo "
        "CD PreSync hook; `up` waits for it). A pod that sees no GPU (a hardened runtime) reports SKIP and succeeds.",
    )
    worker_liveness: bool = Field(
        True,
        description="Give the headless worker pods a livenessProbe (k3deploy/pod_scripts/worker_alive.py): after the "
        "start-up budget, a rank whose vLLM worker processes are not all alive, or one stuck in uninterruptible "
        "sleep over four probes, is restarted and LeaderWorkerSet recreates the group.",
    )
    guard: bool = Field(
        False,
        description="Render `k3deploy guard` as an in-cluster Deployment (one replica, leader election on a Lease, its "
        "own least-privilege ServiceAccount, Role and ClusterRole, kubernetes.smoke_image): it keeps a fault's evidence "
        "in a ConfigMap, cordons the sick tray and recreates the group on healthy ones (the profile's guard section).",
    )
    smoke_image: PinnedImage = Field(
        default_factory=default_smoke_image,
        description="The k3deploy image the smoke and node-preflight Jobs and the guard run; default: the image of this k3deploy "
        "version (what the release workflow publishes).",
    )
    prefetch_image: PinnedImage | None = Field(
        None,
        description="Image of the weight-prefetch Job; null: the vLLM image (vllm.image), which the nodes pull anyway "
        "and which carries python3 and huggingface_hub, so nothing is installed at run time. Another image must carry "
        "both.",
    )
    priority_class: DNSSubdomain | None = Field(
        None,
        description="priorityClassName of the serving pods (a group that waits an hour to load should not be the "
        "first evicted); null: the cluster's default.",
    )
    image_pull_secrets: list[DNSSubdomain] = Field(
        default_factory=list, description="Secrets every pod of the set pulls its images with (a private mirror)."
    )
    serving_pod_patch: KubeObject = Field(
        default_factory=dict,
        description="A JSON merge patch (RFC 7386: maps merge, lists and values replace, null removes) applied to the "
        "pod spec of the leader and worker templates, on every path (`render`, `apply`, `up`): what the set does not "
        "model, e.g. {hostIPC: true}.",
    )
    serving_container_patch: KubeObject = Field(
        default_factory=dict,
        description="A JSON merge patch applied to the vllm container of the leader and worker templates, e.g. "
        "{securityContext: {capabilities: {add: [IPC_LOCK, SYS_RESOURCE]}}} as some vLLM recipes add.",
    )
    pod_security_level: Literal["baseline", "privileged"] = Field(
        "baseline",
        description="Pod Security Admission level the rendered Namespace enforces (and warns and audits at). A patch "
        "that takes the serving pods past baseline (an added capability, hostIPC) needs privileged; render refuses "
        "it otherwise, as the API server would refuse the pods.",
    )
    compile_cache: bool = Field(
        True,
        description="Keep vLLM's compile and JIT caches (torch.compile, Inductor, Triton, FlashInfer) on the weight "
        "PVC, in a folder per image (its digest once pinned) and node rank, so a recreated group does not recompile.",
    )
    gang_admission: Literal["auto", "none", "kueue", "volcano"] = Field(
        "auto",
        description="Admit each group whole or not at all, where the cluster has it: kueue (the LeaderWorkerSet "
        "is queued to kueue_queue, each group a Kueue workload placed by topology-aware scheduling inside one "
        "clique_label domain), volcano (the serving pods use the Volcano scheduler; the LWS controller, configured "
        "with gangSchedulingManagement schedulerProvider volcano, makes a PodGroup per group). none: pods are "
        "scheduled one at a time and a partial group can hold trays. auto: `up` and `apply` pick kueue when "
        "preflight finds a usable Kueue setup (its checks, k8s.kueue.*), else none with preflight's placement "
        "WARN; a release already running keeps the mode recorded on its LeaderWorkerSet "
        "(k3deploy/gang-admission); `render` without a cluster renders auto as none.",
    )
    kueue_queue: DNSLabel = Field(
        DEFAULT_LOCAL_QUEUE,
        description="The Kueue LocalQueue in the release's namespace the groups are queued to (gang_admission kueue "
        "or auto).",
    )
    gang_scheduler_name: DNSSubdomain = Field(
        "volcano", description="schedulerName of the serving pods with gang_admission: volcano."
    )
    prefetch_uid: int = Field(
        65534,
        ge=0,
        description="UID the prefetch Job writes the weight cache as. Default nobody (65534): what NFS root-squash maps "
        "root to, so an export prepared for squashed writers (owned by nobody:nogroup) takes it; most ReadWriteMany "
        "drivers apply no fsGroup. Set the volume owner's UID otherwise; 0 for a root-owned export without root "
        "squash (the Job then meets Pod Security baseline, which the set's Namespace enforces, not restricted).",
    )
    prefetch_gid: int = Field(65534, ge=0, description="GID (and fsGroup) the prefetch Job writes the weight cache as.")
    job_tolerations: list[Toleration] = Field(
        default_factory=list,
        description="Tolerations of the set's pods that need no GPU: the prefetch and smoke Jobs and the endpoint "
        "picker (e.g. a tainted CPU or system pool).",
    )
    job_node_selector: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        description="nodeSelector of the prefetch and smoke Jobs and the endpoint picker. The prefetch also selects "
        "kubernetes.io/arch = vllm.image_arch while it runs the vLLM image.",
    )
    host_vllm: HostVllm | None = Field(
        None,
        description="Serve with vLLM from a Python environment on the nodes (hostPath mounts) instead of the image's; "
        "null: the image's vLLM on the weight claim the prefetch Job fills.",
    )
    cpu_request: Quantity = "32"
    memory_request: Quantity = "512Gi"
    # Placement and the cluster's installed controllers (what the set is rendered for).
    tolerations: list[Toleration] = Field(
        default_factory=_gpu_toleration,
        description="Tolerations of every GPU pod (serving and node-preflight); the default tolerates the nvidia.com/gpu "
        "taint, so no pod depends on the opt-in ExtendedResourceToleration admission plugin.",
    )
    runtime_class: DNSSubdomain | None = Field(
        "nvidia",
        description="RuntimeClass of the serving pods and the node-preflight pods (null: the cluster's default runtime). "
        "The node-preflight pods see every GPU through it (NVIDIA_VISIBLE_DEVICES=all) without requesting one.",
    )
    lws_version: str = Field(
        "0.10.0",
        description="LeaderWorkerSet release installed in the cluster (0.9 or later: restartPolicy "
        "RecreateGroupAfterStart, status.observedGeneration, rollingUpdateConfiguration.partition); preflight compares "
        "it with what the cluster runs.",
    )
    dra_driver_version: str = Field(
        "0.4.0",
        description="NVIDIA DRA driver release installed: the renamed dra-driver-nvidia-gpu (registry.k8s.io/"
        "dra-driver-nvidia), versioned from v0.4.0, or one of NVIDIA's calendar releases before it (nvidia-dra-driver-gpu "
        "25.3, 25.8, 25.12). From 25.8 (and every v0.4.0+) ComputeDomain numNodes is 0 (IMEX daemons with DNS names); "
        "25.3 needs numNodes = parallel.nodes. 0.1 to 0.3 name no release and are refused.",
    )
    pdb_max_unavailable: int = Field(
        1,
        ge=0,
        description="maxUnavailable of the serving pods' PodDisruptionBudget: 1 lets `kubectl drain` evict one pod at a "
        "time (the group is recreated); 0 refuses every voluntary eviction.",
    )
    service_monitor_labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        description="Extra labels of the ServiceMonitor, e.g. {release: kube-prometheus-stack}, "
        "for a Prometheus whose serviceMonitorSelector selects on them.",
    )
    prefetch_timeout_s: int = Field(
        21600, gt=0, description="activeDeadlineSeconds of the weight-prefetch Job (1.56 TB at ~100 MB/s is ~4.5 h)."
    )
    weight_staging: Literal["none", "node-local"] = Field(
        "none",
        description="node-local: a DaemonSet on the trays a group may use copies each pinned snapshot from the weight "
        "volume onto the tray's disk (`k3deploy stage`, verified) and pre-pulls the vLLM image; a serving pod loads "
        "the tray's copy when its marker names the pinned commit, else the weight volume. It mounts staging_path "
        "from the host (hostPath), which Pod Security baseline forbids: it needs pod_security_level privileged.",
    )
    staging_path: str = Field(
        "/var/lib/k3deploy/weights",
        pattern=r"^/[A-Za-z0-9._/-]*$",
        description="The folder on each tray's local disk (NVMe) that holds the staged snapshots (weight_staging).",
    )
    staging_max_mb_s: float | None = Field(
        None, gt=0, description="Each tray's staging cap in MB/s (`stage --max-mb-s`): spare the shared volume."
    )
    routing: Literal["service", "inference-pool"] = Field(
        "service",
        description="How requests reach the groups' leaders: service (the API Service spreads connections over them) or "
        "inference-pool (also render a Gateway API Inference Extension InferencePool selecting the leaders and "
        "its endpoint picker, for a Gateway that routes by prefix-cache affinity, KV-cache use and queue depth).",
    )
    epp_image: PinnedImage = Field(
        "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0",
        description="Image of the endpoint picker (routing: inference-pool); llm-d/llm-d-router, where the Gateway API "
        "Inference Extension's EPP is maintained.",
    )
    registry_mirrors: dict[str, ProfileUrl] = Field(
        default_factory=dict,
        description="Registry (docker.io, ghcr.io, host:port) -> the mirror that serves its images here, "
        "https://host[:port][/prefix] (the repository under prefix/): where `pin` and preflight read the images, as the "
        "nodes' container runtime pulls them. K3DEPLOY_REGISTRY_URL overrides it.",
    )
    clique: LabelValue | None = Field(
        None,
        description="The NVLink clique (clique_label value, <ClusterUUID>.<CliqueId>) the group must use: the serving "
        "pods and the node-preflight Job are pinned to it, so under GitOps the Job checks the trays the group gets. "
        "null: any clique.",
    )
    node_preflight_hosts: list[DNSSubdomain] = Field(
        default_factory=list,
        description="Nodes the node-preflight Job checks, one pod each (an Indexed Job pinned to them); empty: any "
        "parallel.nodes GPU nodes. `k3deploy up` fills it with every eligible node of the cluster preflight.",
    )

    @model_validator(mode="after")
    def _staging_needs(self) -> KubernetesSpec:
        if self.weight_staging == "node-local" and self.pod_security_level != "privileged":
            raise ValueError(
                "weight_staging node-local mounts staging_path from the host (a hostPath volume), which Pod Security "
                "baseline forbids: set pod_security_level privileged (the Namespace then enforces it) or weight_staging none"
            )
        if ".." in self.staging_path.split("/") or self.staging_path.rstrip("/") in ("", "/var", "/var/lib"):
            raise ValueError(f"staging_path {self.staging_path!r} is not a folder of its own on the tray")
        return self

    @property
    def monitoring_on(self) -> bool:
        """Whether the dashboard and the alerts are rendered: `monitoring`, by default `service_monitor`."""
        return self.service_monitor if self.monitoring is None else self.monitoring

    @model_validator(mode="before")
    @classmethod
    def _migrate_gpu_runtime_class(cls, data: Any) -> Any:
        # gpu_runtime_class (node-preflight only) became runtime_class (every GPU pod): old profiles keep loading.
        if isinstance(data, dict) and "gpu_runtime_class" in data:
            data = dict(data)
            old = data.pop("gpu_runtime_class")
            if "runtime_class" in data and data["runtime_class"] != old:
                raise ValueError("gpu_runtime_class is the old name of runtime_class: set only runtime_class")
            data["runtime_class"] = old
        return data

    @field_validator("serving_egress_cidrs")
    @classmethod
    def _are_cidrs(cls, value: list[str]) -> list[str]:
        for cidr in value:
            try:
                ipaddress.ip_network(cidr, strict=True)
            except ValueError as exc:
                raise ValueError(f"{cidr!r} is not a CIDR such as 10.20.0.0/16 ({exc})") from None
        return value

    @model_validator(mode="before")
    @classmethod
    def _migrate_node_preflight(cls, data: Any) -> Any:
        # node_preflight (both checks) became node_preflight_job and gpu_check: old profiles keep loading.
        if isinstance(data, dict) and "node_preflight" in data:
            data = dict(data)
            old = data.pop("node_preflight")
            for new in ("node_preflight_job", "gpu_check"):
                if new in data and data[new] != old:
                    raise ValueError(
                        f"node_preflight is the old name of node_preflight_job and gpu_check: set only {new}"
                    )
                data[new] = old
        return data

    @field_validator("registry_mirrors")
    @classmethod
    def _mirrors_are_registry_hosts(cls, value: dict[str, str]) -> dict[str, str]:
        for registry, url in value.items():
            if not _REGISTRY_HOST.match(registry):
                raise ValueError(f"{registry!r} is not a registry host such as docker.io, ghcr.io or host:5000")
            if "?" in url or "#" in url:
                raise ValueError(
                    f"mirror {redact_url(url)!r} of {registry}: a query or fragment has no place in a registry URL"
                )
        return value

    @field_validator("lws_version", "dra_driver_version")
    @classmethod
    def _is_release_version(cls, value: str) -> str:
        if not _VERSION.match(value):
            raise ValueError(f"{value!r} is not a release version such as 0.10.0")
        return value

    @field_validator("lws_version")
    @classmethod
    def _is_a_supported_lws(cls, value: str) -> str:
        if _VERSION.match(value) and release_version(value) < LWS_FIRST:
            raise ValueError(
                f"LeaderWorkerSet {value} is older than {'.'.join(map(str, LWS_FIRST))}, the oldest release k3deploy "
                "deploys to (it writes status.observedGeneration and has restartPolicy RecreateGroupAfterStart)"
            )
        return value

    @field_validator("dra_driver_version")
    @classmethod
    def _is_a_dra_release(cls, value: str) -> str:
        # k3deploy.preflight.versions: the renamed driver starts at v0.4.0; 0.1-0.3 are only the SemVer names
        # featuregates.go gives the calendar releases 25.3, 25.8 and 25.12.
        if release_version(value) < RENAMED_DRA_FIRST:
            raise ValueError(
                f"{value!r} is no DRA driver release: the renamed dra-driver-nvidia-gpu starts at v0.4.0, "
                "and the calendar releases before it are 25.3, 25.8 and 25.12"
            )
        return value
