"""The ordered set of Kubernetes objects for a profile: context from the profile, objects from the templates.

Pure: the profile goes in, plain dicts come out (reading the template files is the only I/O). SET below is the
apply order of rollout/order.py (namespace, NetworkPolicies, identities, the profile ConfigMap, node-preflight Job,
weight cache, ComputeDomain, prefetch Job, staging DaemonSet, LeaderWorkerSet, Service, PodDisruptionBudget,
monitoring, the endpoint picker and InferencePool, the guard, the canary, smoke Job) and gives each file its numeric
prefix.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from k3deploy.errors import ProfileError
from k3deploy.kobject import KubeObject
from k3deploy.lws import GROUP_KEY_LABEL, NAME_LABEL, WORKER_INDEX_LABEL
from k3deploy.pin.floating import Pinnable, pinnable_fields
from k3deploy.profile.model import Profile
from k3deploy.profile.object_names import api_service_name, compute_domain_name, model_cache_name, smoke_job_name
from k3deploy.profile.startup import STARTUP_PROBE_PERIOD_S
from k3deploy.render import guard
from k3deploy.render.argv import canonical_json, serve_env
from k3deploy.render.canary import canary_context
from k3deploy.render.features import compute_domain_num_nodes
from k3deploy.render.gpu_check import gpu_check_context
from k3deploy.render.monitoring import monitoring_context
from k3deploy.render.network import (
    DNS_PORT,
    NAMESPACE_NAME_LABEL,
    api_namespaces,
    ephemeral_sysctls,
    group_ports,
)
from k3deploy.render.pod_security import pod_security_labels
from k3deploy.render.prefetch import (
    compile_cache_env,
    prefetch_image,
    prefetch_job_name,
    prefetch_node_selector,
    prefetch_tolerations,
    site_env,
)
from k3deploy.render.routing import routing_context
from k3deploy.render.scan_skips import job_skips, serving_skips, staging_skips
from k3deploy.render.serving_pods import NO_TELEMETRY_ENV, compile_cache, gang, host_vllm_context, patch_serving_pods
from k3deploy.render.staging import STAGING_COMPONENT, staging_context, staging_on
from k3deploy.render.templating import render_template
from k3deploy.render.worker_probe import worker_probe
from k3deploy.traffic_gate import gate_selector

#: Value of app.kubernetes.io/managed-by on every object of the set.
MANAGED_BY = "k3deploy"
#: Name of the pod-level claim on the ComputeDomain's IMEX channel.
CHANNEL_CLAIM = "compute-domain-channel"
#: Where the smoke Job mounts the profile ConfigMap, and the one key it holds.
PROFILE_MOUNT_DIR = "/etc/k3deploy"
PROFILE_KEY = "profile.yaml"
#: Pod-template annotation with the profile's digest: a changed profile changes the smoke Job, so it runs again.
PROFILE_DIGEST_ANNOTATION = "k3deploy/profile-sha256"
# The UID/GID k3deploy's own Jobs (smoke, node-preflight) run as: the k3deploy image's user (Dockerfile); the serving
# pods' gpu-check runs its stdlib script as the same non-root UID in the vLLM image. The prefetch writes as
# kubernetes.prefetch_uid/prefetch_gid instead (the cache's owner).
JOB_UID = 10001
#: Annotation on every workload of the set (the objects Argo CD and Flux show) naming the version fields that float
#: until `k3deploy pin`: `field=value, ...`; absent once all are pinned.
FLOATING_ANNOTATION = "k3deploy/floating-versions"
#: Kinds that carry it: what runs an image.
_WORKLOAD_KINDS = {"LeaderWorkerSet", "Job", "Deployment", "CronJob", "DaemonSet"}
# Where the prefetch Job finds the Hub token (a Secret volume), named to huggingface_hub by HF_TOKEN_PATH.
HF_TOKEN_MOUNT_DIR = "/var/run/secrets/k3deploy/hf"
HF_TOKEN_FILE = "token"
#: The label every object of the set carries with its role; it tells the set's Jobs apart.
COMPONENT_LABEL = "app.kubernetes.io/component"
#: Component label of the node-preflight Job and its pods (what their anti-affinity selects on).
NODE_PREFLIGHT_COMPONENT = "node-preflight"
#: Component labels of the prefetch and smoke Jobs.
PREFETCH_COMPONENT = "prefetch"
SMOKE_COMPONENT = "smoke"
#: The node-preflight Job gives up after this (an image pull and a few NVML queries take a minute): a pod
#: that cannot be placed must fail the PreSync hook, not hold the sync forever.
NODE_PREFLIGHT_DEADLINE_S = 900
#: Argo CD sync options of the weight cache: neither pruned nor deleted with the Application (1.5 TB re-download);
#: gitops-engine pkg/sync/common/types.go SyncOptionDisablePrune / SyncOptionDisableDeletion.
KEEP_SYNC_OPTIONS = "Prune=false,Delete=false"


@dataclass(frozen=True)
class Manifest:
    """One rendered object and its place in the set."""

    order: int
    obj: KubeObject

    @property
    def kind(self) -> str:
        """The object's kind."""
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        """The object's metadata.name."""
        return str(self.obj["metadata"]["name"])

    @property
    def filename(self) -> str:
        """File name in a rendered directory, e.g. `10-leaderworkerset-kimi-k3-gb300-tp16.yaml`."""
        return f"{self.order:02d}-{self.kind.lower()}-{self.name}.yaml"


@dataclass(frozen=True)
class SetEntry:
    """One object of the set: its apply position (also its file number), template, kind and component label."""

    order: int
    template: str
    kind: str
    #: Its `app.kubernetes.io/component` label: what tells the set's Jobs apart (their role).
    component: str
    wanted: Callable[[Profile], bool]


_ALWAYS: Callable[[Profile], bool] = lambda _profile: True  # noqa: E731
_POOL: Callable[[Profile], bool] = lambda p: p.kubernetes.routing == "inference-pool"  # noqa: E731
GUARD = guard.GUARD_COMPONENT
_CANARY: Callable[[Profile], bool] = lambda p: p.observe.canary.enabled  # noqa: E731
_CLAIMED: Callable[[Profile], bool] = lambda p: p.kubernetes.host_vllm is None  # noqa: E731
_GATED: Callable[[Profile], bool] = lambda p: p.smoke.gate_traffic  # noqa: E731

#: The set, in apply order: the one encoding of that order (rollout/order.py ranks live objects by it).
#: Gaps in the numbering leave room for later objects without renaming files.
SET: tuple[SetEntry, ...] = (
    SetEntry(0, "namespace.yaml.j2", "Namespace", "namespace", _ALWAYS),
    SetEntry(
        1, "networkpolicy-default-deny.yaml.j2", "NetworkPolicy", "network", lambda p: p.kubernetes.network_policy
    ),
    SetEntry(1, "networkpolicy-server.yaml.j2", "NetworkPolicy", "network", lambda p: p.kubernetes.network_policy),
    SetEntry(
        1,
        "networkpolicy-epp.yaml.j2",
        "NetworkPolicy",
        "network",
        lambda p: p.kubernetes.network_policy and p.kubernetes.routing == "inference-pool",
    ),
    SetEntry(1, "serviceaccount.yaml.j2", "ServiceAccount", "identity", _ALWAYS),
    SetEntry(1, "smoke-serviceaccount.yaml.j2", "ServiceAccount", "smoke-gate", _GATED),
    SetEntry(1, "smoke-role.yaml.j2", "Role", "smoke-gate", _GATED),
    SetEntry(1, "smoke-rolebinding.yaml.j2", "RoleBinding", "smoke-gate", _GATED),
    SetEntry(2, "profile-configmap.yaml.j2", "ConfigMap", "profile", _ALWAYS),
    SetEntry(
        3, "node-preflight-job.yaml.j2", "Job", NODE_PREFLIGHT_COMPONENT, lambda p: p.kubernetes.node_preflight_job
    ),
    SetEntry(4, "model-cache-pvc.yaml.j2", "PersistentVolumeClaim", "model-cache", _CLAIMED),
    SetEntry(5, "computedomain.yaml.j2", "ComputeDomain", "compute-domain", lambda p: p.kubernetes.compute_domain),
    SetEntry(6, "prefetch-job.yaml.j2", "Job", PREFETCH_COMPONENT, _CLAIMED),
    SetEntry(7, "weight-staging-daemonset.yaml.j2", "DaemonSet", STAGING_COMPONENT, staging_on),
    SetEntry(10, "leaderworkerset.yaml.j2", "LeaderWorkerSet", "server", _ALWAYS),
    SetEntry(11, "service.yaml.j2", "Service", "server", _ALWAYS),
    SetEntry(12, "poddisruptionbudget.yaml.j2", "PodDisruptionBudget", "server", _ALWAYS),
    SetEntry(13, "servicemonitor.yaml.j2", "ServiceMonitor", "metrics", lambda p: p.kubernetes.service_monitor),
    SetEntry(14, "grafana-dashboard-configmap.yaml.j2", "ConfigMap", "dashboard", lambda p: p.kubernetes.monitoring_on),
    SetEntry(15, "prometheusrule.yaml.j2", "PrometheusRule", "alerts", lambda p: p.kubernetes.monitoring_on),
    # kubernetes.routing: inference-pool (templates/inferencepool.yaml.j2): the pool and its endpoint picker, before
    # the smoke Job so a smoke through the Gateway finds them.
    SetEntry(16, "epp-serviceaccount.yaml.j2", "ServiceAccount", "endpoint-picker", _POOL),
    SetEntry(16, "epp-role.yaml.j2", "Role", "endpoint-picker", _POOL),
    SetEntry(16, "epp-rolebinding.yaml.j2", "RoleBinding", "endpoint-picker", _POOL),
    SetEntry(16, "epp-configmap.yaml.j2", "ConfigMap", "endpoint-picker", _POOL),
    SetEntry(17, "epp-deployment.yaml.j2", "Deployment", "endpoint-picker", _POOL),
    SetEntry(17, "epp-service.yaml.j2", "Service", "endpoint-picker", _POOL),
    SetEntry(18, "inferencepool.yaml.j2", "InferencePool", "inference-pool", _POOL),
    # kubernetes.guard (render/guard.py): `k3deploy guard` in the cluster, once the group it watches is there.
    SetEntry(1, "networkpolicy-guard.yaml.j2", "NetworkPolicy", "network", guard.policy_wanted),
    SetEntry(19, "guard-serviceaccount.yaml.j2", "ServiceAccount", GUARD, guard.wanted),
    SetEntry(19, "guard-role.yaml.j2", "Role", GUARD, guard.wanted),
    SetEntry(19, "guard-rolebinding.yaml.j2", "RoleBinding", GUARD, guard.wanted),
    SetEntry(19, "guard-clusterrole.yaml.j2", "ClusterRole", GUARD, guard.wanted),
    SetEntry(19, "guard-clusterrolebinding.yaml.j2", "ClusterRoleBinding", GUARD, guard.wanted),
    SetEntry(19, "guard-deployment.yaml.j2", "Deployment", GUARD, guard.wanted),
    SetEntry(19, "guard-podmonitor.yaml.j2", "PodMonitor", GUARD, guard.monitor_wanted),
    # observe.canary (render/canary.py): applied with the serving objects (the smoke phase is a hook `up --smoke
    # in-cluster` never applies); its first run waits for its schedule, and a run that finds no leader fails.
    SetEntry(19, "canary-serviceaccount.yaml.j2", "ServiceAccount", "canary", _CANARY),
    SetEntry(19, "canary-role.yaml.j2", "Role", "canary", _CANARY),
    SetEntry(19, "canary-rolebinding.yaml.j2", "RoleBinding", "canary", _CANARY),
    SetEntry(19, "canary-dataset-configmap.yaml.j2", "ConfigMap", "canary-dataset", _CANARY),
    SetEntry(19, "canary-report-configmap.yaml.j2", "ConfigMap", "canary-report", _CANARY),
    SetEntry(19, "canary-cronjob.yaml.j2", "CronJob", "canary", _CANARY),
    SetEntry(20, "smoke-job.yaml.j2", "Job", SMOKE_COMPONENT, _ALWAYS),
)


def set_position(kind: str, component: str | None) -> int | None:
    """The place of an object in the set (its index in SET), found by kind and, where several entries share a kind,
    by component; an object of a shared kind whose component names no entry takes the first entry's place (the
    deployment's own ServiceAccount, ConfigMap, Service); a Job's place is its role, so a Job of no role has none.
    None for a kind the set does not render."""
    same_kind = [index for index, entry in enumerate(SET) if entry.kind == kind]
    fallback = same_kind[0] if same_kind and kind != "Job" else None
    return next((index for index in same_kind if SET[index].component == component), fallback)


def smoke_ready_s(profile: Profile) -> int:
    """How long the in-cluster smoke Job waits for /health: the profile's bound, else the startup probe's budget
    (an Argo CD PostSync hook can start while the model still loads: Argo CD knows no LeaderWorkerSet health)."""
    return math.ceil(profile.smoke.ready_timeout_s or profile.startup_budget.total_s)


def service_url(profile: Profile) -> str:
    """In-cluster URL of the OpenAI API (what the smoke Job and in-cluster clients use)."""
    return f"http://{api_service_name(profile)}.{profile.kubernetes.namespace}.svc:{profile.vllm.port}"


def prefetch_repos(profile: Profile) -> list[list[str | None]]:
    """[repo id, revision] of every Hub repo the pods need: the target, then the draft when it has one."""
    repos: list[list[str | None]] = [[profile.model.id, profile.model.revision]]
    spec = profile.speculative
    if spec is not None and spec.model:
        repos.append([spec.model, spec.revision])
    return repos


def context(profile: Profile) -> dict[str, Any]:
    """Every value the templates use, derived from the profile only."""
    kube, name = profile.kubernetes, profile.name
    base_labels = {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/part-of": name,
        "app.kubernetes.io/managed-by": MANAGED_BY,
    }

    def labels(component: str) -> dict[str, str]:
        return {**base_labels, COMPONENT_LABEL: component}

    repos = prefetch_repos(profile)
    repos_json = canonical_json(repos)
    # The marker names what was fetched, so a new revision makes the pods wait for the new download.
    marker = f"{kube.model_cache_path}/.k3deploy/prefetch-{hashlib.sha256(repos_json.encode()).hexdigest()[:16]}.done"
    prefetch_vars = {"K3DEPLOY_PREFETCH": repos_json, "K3DEPLOY_PREFETCH_MARKER": marker}
    hf_env = {
        "HF_HOME": f"{kube.model_cache_path}/hf",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        # The cache is mounted read-only; remote code is copied into a writable place.
        "HF_MODULES_CACHE": "/tmp/hf-modules",
    }
    # Only the prefetch downloads: the serving pods run offline (HF_HUB_OFFLINE=1) and never need the token.
    # It reaches the prefetch as a file from a Secret volume, never as an environment variable (which shows in
    # `kubectl describe`, crash dumps and child processes); huggingface_hub reads the file named by
    # HF_TOKEN_PATH (huggingface/huggingface_hub src/huggingface_hub/constants.py).
    token_env: list[KubeObject] = []
    if kube.hf_token_secret is not None:
        token_env = [{"name": "HF_TOKEN_PATH", "value": f"{HF_TOKEN_MOUNT_DIR}/{HF_TOKEN_FILE}"}]
    served = {**hf_env, **NO_TELEMETRY_ENV, **serve_env(profile)}
    server_env = [{"name": key, "value": value} for key, value in sorted(served.items())]
    hardware = profile.hardware
    node_selector = dict(kube.node_selector)
    if hardware is not None and hardware.gfd_product_label and "nvidia.com/gpu.product" not in node_selector:
        node_selector["nvidia.com/gpu.product"] = hardware.gfd_product_label
    node_selector.setdefault("kubernetes.io/arch", profile.vllm.image_arch)
    if kube.clique is not None:
        node_selector[kube.clique_label] = kube.clique
    dumped = profile_yaml(profile)
    return {
        "profile": profile,
        "name": name,
        "namespace": kube.namespace,
        "kube": kube,
        "labels": labels,
        "names": {
            "model_cache": model_cache_name(profile),
            "compute_domain": compute_domain_name(profile),
            "channel_template": f"{name}-compute-domain-channel",
            # build() appends the hash of the Job's spec (prefetch_job_name).
            "prefetch": f"{name}-prefetch",
            "smoke": smoke_job_name(profile),
            "smoke_gate": f"{name}-smoke-gate",
            "node_preflight": f"{name}-node-preflight",
            "profile": f"{name}-profile",
            "service": api_service_name(profile),
            "dashboard": f"{name}-grafana-dashboard",
            "alerts": f"{name}-alerts",
            "default_deny": f"{name}-default-deny",
            "server_policy": f"{name}-server",
            "epp_policy": f"{name}-epp",
        },
        "pod_security_labels": pod_security_labels(profile),
        "compile_cache": compile_cache(profile),
        "gang": gang(profile),
        "network": {
            "api_namespaces": api_namespaces(profile),
            "gateway_namespace": kube.gateway_namespace,
            "api_cidrs": list(kube.api_cidrs),
            "monitoring_namespace": kube.monitoring_namespace,
            "group_selector": {"app.kubernetes.io/instance": name, COMPONENT_LABEL: "server"},
            "namespace_label": NAMESPACE_NAME_LABEL,
            "group_ports": group_ports(profile),
            "dns_port": DNS_PORT,
            "sysctls": ephemeral_sysctls(profile),
        },
        "lws_labels": {"name": NAME_LABEL, "worker_index": WORKER_INDEX_LABEL, "group_key": GROUP_KEY_LABEL},
        "gate_selector": gate_selector(profile.smoke.gate_traffic),
        "channel_claim": CHANNEL_CLAIM,
        "server_env": server_env,
        "prefetch_env": [
            {"name": "HF_HOME", "value": hf_env["HF_HOME"]},
            # The Xet client's high-performance mode: the download uses the pod's CPUs and bandwidth.
            {"name": "HF_XET_HIGH_PERFORMANCE", "value": "1"},
            # The root filesystem is read-only: Python writes under HOME and /tmp (emptyDirs).
            {"name": "HOME", "value": "/tmp"},
            {"name": "K3DEPLOY_CACHE_ROOT", "value": kube.model_cache_path},
            *({"name": key, "value": value} for key, value in prefetch_vars.items()),
            *compile_cache_env(profile),
            *token_env,
            *site_env(profile),
        ],
        "marker": marker,
        "hf_token": {"mount_dir": HF_TOKEN_MOUNT_DIR, "file": HF_TOKEN_FILE},
        "job_uid": JOB_UID,
        "prefetch_uid": kube.prefetch_uid,
        "prefetch_image": prefetch_image(profile),
        "prefetch_node_selector": prefetch_node_selector(profile),
        "job_node_selector": dict(sorted(kube.job_node_selector.items())),
        "job_tolerations": [t.manifest() for t in kube.job_tolerations],
        "prefetch_tolerations": prefetch_tolerations(profile),
        "prefetch_gid": kube.prefetch_gid,
        "scan_skips": {
            "prefetch": job_skips(prefetch_image(profile)),
            "smoke": job_skips(kube.smoke_image, token=profile.smoke.gate_traffic),
            "staging": staging_skips(kube.smoke_image),
            "leader": serving_skips(profile, "leader"),
            "worker": serving_skips(profile, "worker"),
        },
        "node_selector": dict(sorted(node_selector.items())),
        "gpus": str(profile.parallel.gpus_per_node) if hardware is not None else None,  # None: a CPU rehearsal
        "host_vllm": host_vllm_context(profile),
        "startup_probe_period_s": STARTUP_PROBE_PERIOD_S,
        "startup_failure_threshold": profile.startup_budget.probe_failures,
        "endpoint": service_url(profile),
        "profile_yaml": dumped,
        "profile_key": PROFILE_KEY,
        "profile_mount_dir": PROFILE_MOUNT_DIR,
        "profile_path": f"{PROFILE_MOUNT_DIR}/{PROFILE_KEY}",
        "profile_digest": {PROFILE_DIGEST_ANNOTATION: hashlib.sha256(dumped.encode()).hexdigest()},
        "smoke_ready_s": smoke_ready_s(profile),
        "smoke_deadline_s": math.ceil(profile.smoke.overall_timeout_s) + smoke_ready_s(profile) + 600,
        "node_preflight_component": NODE_PREFLIGHT_COMPONENT,
        "node_preflight_selector": {
            "app.kubernetes.io/instance": name,
            "app.kubernetes.io/component": NODE_PREFLIGHT_COMPONENT,
        },
        "node_preflight_deadline_s": NODE_PREFLIGHT_DEADLINE_S,
        "node_preflight_count": len(kube.node_preflight_hosts) or profile.parallel.nodes,
        "tolerations": [t.manifest() for t in kube.tolerations],
        "pull_secrets": [{"name": secret} for secret in kube.image_pull_secrets],
        "compute_domain_num_nodes": compute_domain_num_nodes(profile),
        "keep_sync_options": KEEP_SYNC_OPTIONS,
        "service_monitor_labels": {**labels("metrics"), **kube.service_monitor_labels},
        **monitoring_context(profile, labels),
        **routing_context(profile),
        **guard.guard_context(profile, f"{PROFILE_MOUNT_DIR}/{PROFILE_KEY}", labels),
        "worker_probe": worker_probe(profile),
        **canary_context(profile, f"{PROFILE_MOUNT_DIR}/{PROFILE_KEY}"),
        **gpu_check_context(profile, PROFILE_MOUNT_DIR),
        **staging_context(profile, PROFILE_MOUNT_DIR, {"HF_HOME": hf_env["HF_HOME"], **prefetch_vars}),
    }


def build(profile: Profile) -> list[Manifest]:
    """Render the profile's objects in apply order."""
    if not profile.on_kubernetes:
        raise ProfileError(
            f"profile {profile.name!r} has target {profile.target!r}: it has no Kubernetes objects",
            hint="use a profile with target: kubernetes",
        )
    ctx = context(profile)
    floating = floating_note(profile)
    manifests = []
    for entry in SET:
        if not entry.wanted(profile):
            continue
        obj = yaml.load(render_template(entry.template, ctx), Loader=_SAFE_LOADER)
        if not isinstance(obj, dict) or "kind" not in obj:
            raise ValueError(f"template {entry.template} did not render one object")
        if (obj["kind"], ((obj.get("metadata") or {}).get("labels") or {}).get(COMPONENT_LABEL)) != (
            entry.kind,
            entry.component,
        ):
            raise ValueError(f"template {entry.template} did not render the {entry.kind} ({entry.component}) SET names")
        if obj["kind"] == "LeaderWorkerSet":
            patch_serving_pods(obj, profile)
        if entry.component == PREFETCH_COMPONENT:
            obj["metadata"]["name"] = prefetch_job_name(profile.name, obj["spec"])
        if obj["kind"] in _WORKLOAD_KINDS and floating:
            obj["metadata"].setdefault("annotations", {})[FLOATING_ANNOTATION] = floating
        manifests.append(Manifest(entry.order, obj))
    return manifests


def rendered_objects(profile: Profile) -> list[KubeObject]:
    """The set's objects as plain dicts, in apply order: what a command renders once and passes along."""
    return [manifest.obj for manifest in build(profile)]


def floating_fields(profile: Profile) -> list[Pinnable]:
    """The version fields of the profile that float until pinned (what `render` warns about, once each)."""
    return [field for field in pinnable_fields(profile) if not field.pinned]


def floating_note(profile: Profile) -> str:
    """The FLOATING_ANNOTATION value: `field=value, ...` of every floating field ('' when all are pinned)."""
    return ", ".join(f"{field.field}={field.value}" for field in floating_fields(profile))


#: libyaml's parser and emitter (PyYAML's C bindings, the same safe subset): ten times PyYAML's pure-Python ones,
#: which were most of `render`'s time. The pure-Python classes where PyYAML was built without libyaml.
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SAFE_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_SAFE_DUMPER):
    """SafeDumper that writes multi-line strings (scripts) as literal blocks, readable in review."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump(obj: Any) -> str:
    """Canonical YAML of one object: key order as rendered, block style, no line folding."""
    return yaml.dump(
        obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1_000_000
    )


def profile_yaml(profile: Profile) -> str:
    """The effective profile (after overrides) as YAML that `load_profile` reads back to an equal profile.

    Keys sorted, so equal profiles give the same bytes (and the same digest) whatever order their source had.
    """
    return yaml.dump(
        profile.model_dump(mode="json"),
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )
