"""Checks of a cluster's facts (Kubernetes API) against a profile and its rendered set. Pure: no I/O.

The verbs the access review asks about come from the rendered set (preflight/access.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from k3deploy.kobject import KubeObject
from k3deploy.preflight.checks_kueue import kueue_checks
from k3deploy.preflight.checks_psa import pod_security_check
from k3deploy.preflight.checks_storage import storage_checks
from k3deploy.preflight.facts import ClusterFacts, NodeFacts, version_tuple
from k3deploy.preflight.placement import (
    TRAP_CONSEQUENCE,
    Placement,
    index_ranges,
    pinned_clique,
    place,
    trap_hint,
    traps,
    trays_by_clique,
)
from k3deploy.profile.model import HardwareSpec, Profile
from k3deploy.report.model import CheckResult, Status, judged

LWS_CRD = "leaderworkersets.leaderworkerset.x-k8s.io"
COMPUTE_DOMAIN_CRD = "computedomains.resource.nvidia.com"
SERVICE_MONITOR_CRD = "servicemonitors.monitoring.coreos.com"
PROMETHEUS_RULE_CRD = "prometheusrules.monitoring.coreos.com"
INFERENCE_POOL_CRD = "inferencepools.inference.networking.k8s.io"
#: API groups whose resources preflight looks up in discovery.
CRD_GROUPS = ["leaderworkerset.x-k8s.io", "resource.nvidia.com", "monitoring.coreos.com", "inference.networking.k8s.io"]
#: Kubernetes version from which DRA (ComputeDomain's resource claims) is on by default.
MIN_DRA_VERSION = (1, 34)
#: GPU Feature Discovery labels a GPU node must carry (besides the clique label when NVLink is used).
GFD_LABELS = (
    "nvidia.com/gpu.product",
    "nvidia.com/gpu.memory",
    "nvidia.com/cuda.driver-version.full",
    "kubernetes.io/arch",
)
_NODE_REASONS_SHOWN = 6


def _version(profile: Profile, facts: ClusterFacts) -> CheckResult:
    found = version_tuple(facts.server_version)[:2]
    need = ".".join(map(str, MIN_DRA_VERSION))
    return judged(
        "k8s.version",
        found >= MIN_DRA_VERSION,
        facts.server_version,
        f">= {need}",
        ""
        if found >= MIN_DRA_VERSION
        else f"Kubernetes {'.'.join(map(str, found))} does not enable DRA by default; "
        "ComputeDomain resource claims need it",
        f"upgrade the control plane and kubelets to {need}+ (or set kubernetes.compute_domain=false to use host IMEX)",
        Status.FAIL if profile.kubernetes.compute_domain else Status.WARN,
    )


def _crds(profile: Profile, facts: ClusterFacts) -> list[CheckResult]:
    served = set(facts.resources)
    results = [
        judged(
            "k8s.crd.leaderworkerset",
            LWS_CRD in served,
            "served" if LWS_CRD in served else "missing",
            LWS_CRD,
            "" if LWS_CRD in served else "the TP16 group is a LeaderWorkerSet: leader + 3 workers",
            "install LeaderWorkerSet (kubectl apply --server-side -f <lws release manifests.yaml>)",
        )
    ]
    if profile.kubernetes.compute_domain:
        ok = COMPUTE_DOMAIN_CRD in served
        results.append(
            judged(
                "k8s.crd.computedomain",
                ok,
                "served" if ok else "missing",
                COMPUTE_DOMAIN_CRD,
                "" if ok else "multi-node NVLink needs IMEX channels, which a ComputeDomain provides",
                "install the NVIDIA DRA driver for GPUs with ComputeDomains enabled (helm chart dra-driver-nvidia-gpu, "
                "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu), "
                "or set kubernetes.compute_domain=false to use host IMEX",
            )
        )
    if profile.kubernetes.service_monitor:
        ok = SERVICE_MONITOR_CRD in served
        results.append(
            judged(
                "k8s.crd.servicemonitor",
                ok,
                "served" if ok else "missing",
                SERVICE_MONITOR_CRD,
                "" if ok else "vLLM's /metrics will not be scraped",
                "install the Prometheus Operator CRDs, or set kubernetes.service_monitor=false",
                Status.WARN,
            )
        )
    if profile.kubernetes.monitoring_on:
        ok = PROMETHEUS_RULE_CRD in served
        results.append(
            judged(
                "k8s.crd.prometheusrule",
                ok,
                "served" if ok else "missing",
                PROMETHEUS_RULE_CRD,
                "" if ok else "the alerts of the profile's targets cannot be applied",
                "install the Prometheus Operator CRDs, or set kubernetes.monitoring=false",
                Status.WARN,
            )
        )
    if profile.kubernetes.routing == "inference-pool":
        ok = INFERENCE_POOL_CRD in served
        results.append(
            judged(
                "k8s.crd.inferencepool",
                ok,
                "served" if ok else "missing",
                INFERENCE_POOL_CRD,
                "" if ok else "kubernetes.routing inference-pool renders an InferencePool",
                "install the Gateway API Inference Extension CRDs (kubernetes-sigs/gateway-api-inference-extension "
                "release manifests) and a Gateway that supports them, or set kubernetes.routing=service",
            )
        )
    return results


def _gpu_nodes(facts: ClusterFacts) -> list[NodeFacts]:
    return [n for n in facts.nodes if n.allocatable_gpus > 0]


def _gfd(profile: Profile, facts: ClusterFacts) -> CheckResult:
    gpu_nodes = _gpu_nodes(facts)
    wanted = [
        *GFD_LABELS,
        *([profile.kubernetes.clique_label] if profile.hardware and profile.hardware.nvlink_domain else []),
    ]
    if not gpu_nodes:
        return judged(
            "k8s.gfd_labels",
            False,
            "no node advertises nvidia.com/gpu",
            "GPU nodes with GFD labels",
            f"none of {len(facts.nodes)} node(s) has allocatable nvidia.com/gpu",
            "install the NVIDIA GPU Operator (device plugin + GPU Feature Discovery) on the GPU nodes",
        )
    problems: list[str] = []
    unlabelled = 0
    hw = profile.hardware
    for node in gpu_nodes:
        missing = [label for label in wanted if label not in node.labels]
        if missing:
            unlabelled += 1
            problems.append(f"{node.name} lacks {', '.join(missing)}")
        elif hw is not None:
            problems += _label_values(node, hw)
    measured = f"{len(gpu_nodes) - unlabelled} of {len(gpu_nodes)} GPU node(s) labelled"
    return judged(
        "k8s.gfd_labels",
        not problems,
        measured,
        ", ".join(wanted),
        "; ".join(problems[:_NODE_REASONS_SHOWN]),
        "deploy GPU Feature Discovery (GPU Operator gfd.enabled=true) and check the node's driver; "
        "the clique label needs the NVLink fabric to be Completed on the node",
    )


def _label_values(node: NodeFacts, hw: HardwareSpec) -> list[str]:
    """What a labelled GPU node's GFD values say is below the profile's hardware."""
    problems = []
    memory = node.labels["nvidia.com/gpu.memory"]
    if memory.isdigit() and int(memory) < hw.gpu_memory_mib:
        problems.append(f"{node.name}: gpu.memory {memory} MiB < {hw.gpu_memory_mib}")
    driver = node.labels["nvidia.com/cuda.driver-version.full"]
    if version_tuple(driver) < version_tuple(hw.min_driver_version):
        problems.append(f"{node.name}: driver {driver} < {hw.min_driver_version}")
    return problems


def eligible_hosts(profile: Profile, nodes: list[NodeFacts]) -> list[str]:
    """Every node the scheduler may put a pod of a group on: the free trays of every clique that holds a whole
    group. The node-preflight Job checks exactly these (kubernetes.node_preflight_hosts), so whichever nodes the
    groups land on were checked; trays of a clique too small for a group can never run one and are left out."""
    trays, _, _ = trays_by_clique(profile, nodes, pinned_clique(profile))
    return sorted(name for names in trays.values() if len(names) >= profile.parallel.nodes for name in names)


def _placement(profile: Profile, facts: ClusterFacts, objects: Sequence[KubeObject]) -> CheckResult:
    """Whether parallel.replicas groups of parallel.nodes trays fit, each inside one clique (preflight/placement.py),
    judged on the pods as rendered: a clique their nodeSelector pins them to is the only one they may use."""
    par, label = profile.parallel, profile.kubernetes.clique_label
    result = place(profile, facts.nodes, objects=objects)
    nvlink = result.nvlink
    group = f"{par.nodes} nodes with {par.gpus_per_node} free nvidia.com/gpu" + (f" in one {label}" if nvlink else "")
    target = group if par.replicas == 1 else f"{par.replicas} groups of {group}"
    reasons = [r for c in result.cliques for r in c.excluded] + result.unassigned
    hint = (
        "free GPUs in one clique (other pods hold nvidia.com/gpu: kubectl describe node), uncordon nodes, "
        "or add nodes to a clique; the whole group must share one NVLink partition"
    )
    if par.replicas > 1:
        return _groups_placement(profile, result, target, hint)
    ranked = [c for c in result.cliques if c.trays]
    if result.fits:
        home = next(c for c in ranked if c.groups)
        where = f"clique {home.clique}" if nvlink else "the cluster"
        return _fits(
            profile,
            result,
            f"{where}: {len(home.trays)} eligible node(s)",
            target,
            f"the group fits in {where} on {', '.join(home.trays[: par.nodes])}",
        )
    counts = (
        [f"clique {c.clique} has {len(c.trays)} eligible node(s), needs {par.nodes}" for c in ranked]
        if nvlink
        else [f"{len(ranked[0].trays) if ranked else 0} eligible node(s), needs {par.nodes}"]
    )
    if not counts:
        counts = ["no GPU node is eligible"]
    detail = "; ".join(counts) + _reasons(reasons)
    return CheckResult(
        name="k8s.placement", status=Status.FAIL, measured=counts[0], target=target, detail=detail, hint=hint
    )


def _fits(profile: Profile, result: Placement, measured: str, target: str, detail: str) -> CheckResult:
    """The placement that fits: a PASS, or a WARN naming the cliques where a leader would wait forever for its workers."""
    trapped = traps(profile, result)
    if not trapped:
        return CheckResult(name="k8s.placement", status=Status.PASS, measured=measured, target=target, detail=detail)
    return CheckResult(
        name="k8s.placement",
        status=Status.WARN,
        measured=measured,
        target=target,
        detail=f"{detail}; but {'; '.join(trapped)}: {TRAP_CONSEQUENCE}",
        hint=trap_hint(result),
    )


def _reasons(reasons: list[str]) -> str:
    if not reasons:
        return ""
    more = len(reasons) - _NODE_REASONS_SHOWN
    return " (" + "; ".join(reasons[:_NODE_REASONS_SHOWN]) + (f"; {more} more" if more > 0 else "") + ")"


def _groups_placement(profile: Profile, result: Placement, target: str, hint: str) -> CheckResult:
    """Several groups: where each lands, and, when some do not fit, every clique with what it lacks."""
    where = [
        f"group{'s' if len(c.groups) > 1 else ''} {index_ranges(c.groups)} in clique {c.clique}"
        if result.nvlink
        else f"groups {index_ranges(c.groups)}"
        for c in result.cliques
        if c.groups
    ]
    if result.fits:
        return _fits(
            profile,
            result,
            f"{result.replicas} groups in {sum(bool(c.groups) for c in result.cliques)} clique(s), "
            f"room for {result.more} more",
            target,
            "; ".join(where),
        )
    rows = []
    for c in result.cliques:
        name = f"clique {c.clique}" if result.nvlink else "the cluster"
        taken = f" takes group {index_ranges(c.groups)} and" if c.groups else ""
        rows.append(f"{name}{taken} lacks trays: {result.lacks(c)}")
    if not rows:
        rows = ["no GPU node is eligible"]
    detail = "; ".join(rows) + _reasons([r for c in result.cliques for r in c.excluded] + result.unassigned)
    # Kueue admits the groups that fit and holds the others whole, holding no tray, until a clique has room: a
    # shortage is then a wait, not a failure (as long as one group can start).
    queued = profile.kubernetes.gang_admission == "kueue" and result.placed > 0
    if queued:
        detail = f"Kueue holds {result.replicas - result.placed} group(s) whole until a clique has room; " + detail
    return CheckResult(
        name="k8s.placement",
        status=Status.WARN if queued else Status.FAIL,
        measured=f"{result.placed} of {result.replicas} groups fit",
        target=target,
        detail=detail,
        hint=hint + f"; or lower parallel.replicas to {result.placed}" if result.placed else hint,
    )


def _namespace(profile: Profile, facts: ClusterFacts) -> CheckResult:
    ns = facts.namespace
    if facts.namespace_exists:
        return judged("k8s.namespace", True, f"{ns} exists", "exists or may be created")
    create = next((a for a in facts.access if a.resource == "namespaces" and a.verb == "create"), None)
    if create is not None and create.allowed:
        return judged("k8s.namespace", True, f"{ns} absent", "exists or may be created", "`up` will create it")
    return judged(
        "k8s.namespace",
        False,
        f"{ns} absent",
        "exists or may be created",
        "you may not create namespaces",
        f"ask an admin to create namespace {ns} (kubectl create namespace {ns}), or pass -n with one you may use",
    )


def _secret(profile: Profile, facts: ClusterFacts) -> list[CheckResult]:
    ref = profile.kubernetes.hf_token_secret
    if ref is None:
        return []
    target = f"Secret {ref.name} with key {ref.key} in {facts.namespace}"
    create = (
        f"kubectl create secret generic {ref.name} -n {facts.namespace} --from-literal={ref.key}=<hf token>"
        " (or set kubernetes.hf_token_secret=null for public weights)"
    )
    if facts.secret_keys is None:
        return [
            judged(
                "k8s.secret",
                False,
                "missing",
                target,
                "the weight prefetch reads the Hugging Face token from it",
                create,
            )
        ]
    if ref.key not in facts.secret_keys:
        return [
            judged(
                "k8s.secret",
                False,
                f"keys: {', '.join(facts.secret_keys) or 'none'}",
                target,
                f"Secret {ref.name} has no key {ref.key!r}",
                f"add the key, or set kubernetes.hf_token_secret.key; {create}",
            )
        ]
    return [judged("k8s.secret", True, "present", target)]


def _runtime_class(profile: Profile, facts: ClusterFacts) -> list[CheckResult]:
    name = profile.kubernetes.runtime_class
    if name is None:
        return []
    target = f"RuntimeClass {name}"
    hint = (
        f"install the NVIDIA GPU Operator or container toolkit (it creates RuntimeClass {name}), or set "
        "kubernetes.runtime_class to one of `kubectl get runtimeclass` (null: the nodes' default runtime)"
    )
    if facts.runtime_class_exists is None:
        return [
            judged(
                "k8s.runtime_class",
                False,
                "unknown",
                target,
                "this user may not read RuntimeClasses",
                f"check with: kubectl get runtimeclass {name}",
                Status.WARN,
            )
        ]
    return [
        judged(
            "k8s.runtime_class",
            facts.runtime_class_exists,
            "exists" if facts.runtime_class_exists else "missing",
            target,
            ""
            if facts.runtime_class_exists
            else "the API server refuses pods that name a missing RuntimeClass (serving and node-preflight pods)",
            hint,
        )
    ]


def _rbac(facts: ClusterFacts) -> CheckResult:
    relevant = [a for a in facts.access if a.resource != "namespaces"]
    denied = [a for a in relevant if not a.allowed]
    if not denied:
        return judged("k8s.rbac", True, f"{len(relevant)} verbs allowed", "the verbs `up` uses")
    first = denied[0]
    first_resource = f"{first.resource}.{first.group}" if first.group else first.resource
    listed = ", ".join(a.label for a in denied[:8]) + (f" and {len(denied) - 8} more" if len(denied) > 8 else "")
    return judged(
        "k8s.rbac",
        False,
        f"{len(denied)} of {len(relevant)} denied",
        "the verbs `up` uses",
        f"denied in {facts.namespace}: {listed}",
        f"ask an admin for a Role in {facts.namespace} granting them "
        f"(check with: kubectl auth can-i {first.verb} {first_resource} -n {facts.namespace})",
    )


def _image_arch(profile: Profile, facts: ClusterFacts) -> CheckResult:
    selector = profile.kubernetes.node_selector
    candidates = [n for n in _gpu_nodes(facts) if all(n.labels.get(k) == v for k, v in selector.items())]
    archs = sorted({n.labels.get("kubernetes.io/arch", "unknown") for n in candidates})
    want = profile.vllm.image_arch
    if not candidates:
        return CheckResult(
            name="k8s.image_arch", status=Status.SKIP, target=want, detail="no GPU node matches the node selector"
        )
    ok = want in archs
    return judged(
        "k8s.image_arch",
        ok,
        ", ".join(archs),
        want,
        "" if ok else f"{profile.vllm.image} is built for {want}; the GPU nodes are {', '.join(archs)}",
        f"use an image built for {archs[0]} (vLLM's arm64 tags carry a suffix such as -aarch64-cu130) "
        f"and set vllm.image_arch={archs[0]}",
    )


def cluster_checks(profile: Profile, facts: ClusterFacts, objects: Sequence[KubeObject]) -> list[CheckResult]:
    """Version, CRDs, GFD labels, clique placement, image arch, RuntimeClass, namespace, the Pod Security level of
    the rendered `objects`, Secret, storage, RBAC."""
    return [
        _version(profile, facts),
        *_crds(profile, facts),
        _gfd(profile, facts),
        _placement(profile, facts, objects),
        *kueue_checks(profile, facts),
        _image_arch(profile, facts),
        *_runtime_class(profile, facts),
        _namespace(profile, facts),
        pod_security_check(facts, objects),
        *_secret(profile, facts),
        *storage_checks(profile, facts),
        _rbac(facts),
    ]
