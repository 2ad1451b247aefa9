"""The ordered set of Kubernetes objects for a profile: context from the profile, objects from the templates.

Pure: the profile goes in, plain dicts come out (reading the template files is the only I/O). The order is
the apply order of rollout/order.py (namespace, NetworkPolicies, service account, the profile ConfigMap, node-preflight Job,
weight cache, ComputeDomain, prefetch Job, LeaderWorkerSet, Service, PodDisruptionBudget, ServiceMonitor,
Grafana dashboard ConfigMap, PrometheusRule, smoke Job) and gives each file its numeric prefix.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from k3deploy.errors import ProfileError
from k3deploy.lws import GROUP_KEY_LABEL, NAME_LABEL, WORKER_INDEX_LABEL
from k3deploy.observe.alerts import rule_groups
from k3deploy.observe.dashboard import dashboard_json
from k3deploy.pin.floating import Pinnable, pinnable_fields
from k3deploy.profile.model import Profile
from k3deploy.profile.object_names import api_service_name, model_cache_name
from k3deploy.profile.startup import STARTUP_PROBE_PERIOD_S
from k3deploy.render.argv import canonical_json, serve_command, serve_env
from k3deploy.render.features import compute_domain_num_nodes, lws_restart
from k3deploy.render.gpu_check import gpu_check_context
from k3deploy.render.network import (
    DNS_PORT,
    NAMESPACE_NAME_LABEL,
    api_namespaces,
    ephemeral_sysctls,
    group_ports,
)
from k3deploy.render.pod_security import pod_security_labels
from k3deploy.render.routing import routing_context
from k3deploy.render.scan_skips import job_skips, serving_skips
from k3deploy.render.serving_pods import NO_TELEMETRY_ENV, compile_cache, gang, patch_serving_pods
from k3deploy.render.templating import render_template
from k3deploy.traffic_gate import gate_selector

#: Value of app.kubernetes.io/managed-by on every object of the set.
MANAGED_BY = "k3deploy"
#: Name of the pod-level claim on the ComputeDomain's IMEX channel.
CHANNEL_CLAIM = "compute-domain-channel"
#: LWS labels its pods with these; the Service and the PDB select on them.
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
_WORKLOAD_KINDS = {"LeaderWorkerSet", "Job", "Deployment"}
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
#: Longest Job name: the Job controller copies it into the `batch.kubernetes.io/job-name` label of its pods.
PREFETCH_NAME_MAX = 63
#: Argo CD sync options of the weight cache: neither pruned nor deleted with the Application (1.5 TB re-download);
#: gitops-engine pkg/sync/common/types.go SyncOptionDisablePrune / SyncOptionDisableDeletion.
KEEP_SYNC_OPTIONS = "Prune=false,Delete=false"
#: The label Grafana's dashboard sidecar selects ConfigMaps on (grafana/helm-charts charts/grafana values.yaml
#: sidecar.dashboards.label / labelValue defaults).
GRAFANA_DASHBOARD_LABEL = {"grafana_dashboard": "1"}


@dataclass(frozen=True)
class Manifest:
    """One rendered object and its place in the set."""

    order: int
    obj: dict[str, Any]

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
    SetEntry(4, "model-cache-pvc.yaml.j2", "PersistentVolumeClaim", "model-cache", _ALWAYS),
    SetEntry(5, "computedomain.yaml.j2", "ComputeDomain", "compute-domain", lambda p: p.kubernetes.compute_domain),
    SetEntry(6, "prefetch-job.yaml.j2", "Job", PREFETCH_COMPONENT, _ALWAYS),
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
    token_env: list[dict[str, Any]] = []
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
            "compute_domain": f"{name}-compute-domain",
            "channel_template": f"{name}-compute-domain-channel",
            # build() appends the hash of the Job's spec (prefetch_job_name).
            "prefetch": f"{name}-prefetch",
            "smoke": f"{name}-smoke",
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
        "leader_command": serve_command(profile, role="leader"),
        "worker_command": serve_command(profile, role="worker"),
        "server_env": server_env,
        "prefetch_env": [
            {"name": "HF_HOME", "value": hf_env["HF_HOME"]},
            # The Xet client's high-performance mode: the download uses the pod's CPUs and bandwidth.
            {"name": "HF_XET_HIGH_PERFORMANCE", "value": "1"},
            # The root filesystem is read-only: Python writes under HOME and /tmp (emptyDirs).
            {"name": "HOME", "value": "/tmp"},
            {"name": "K3DEPLOY_CACHE_ROOT", "value": kube.model_cache_path},
            {"name": "K3DEPLOY_PREFETCH", "value": repos_json},
            {"name": "K3DEPLOY_PREFETCH_MARKER", "value": marker},
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
            "leader": serving_skips(profile, "leader"),
            "worker": serving_skips(profile, "worker"),
        },
        "node_selector": dict(sorted(node_selector.items())),
        "gpus": str(profile.parallel.gpus_per_node),
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
        "lws_restart": lws_restart(profile),
        "compute_domain_num_nodes": compute_domain_num_nodes(profile),
        "keep_sync_options": KEEP_SYNC_OPTIONS,
        "service_monitor_labels": {**labels("metrics"), **kube.service_monitor_labels},
        **_monitoring(profile, labels),
        **routing_context(profile),
        **gpu_check_context(profile, PROFILE_MOUNT_DIR),
    }


def prefetch_job_name(name: str, spec: dict[str, Any]) -> str:
    """`<name>-prefetch-<hash of the name and the Job's spec>`: a Job's pod template cannot change, so new revisions
    or a new image are a new Job (Argo CD and Flux create it and prune the old, with no immutable-field error) while
    an unchanged one is left as it is, never re-run. At most 63 characters (the Job controller labels its pods with
    the name); a long name is cut before the hash."""
    digest = hashlib.sha256(f"{name}\n{canonical_json(spec)}".encode()).hexdigest()[:8]
    return f"{f'{name}-prefetch'[: PREFETCH_NAME_MAX - len(digest) - 1].rstrip('-')}-{digest}"


def prefetch_image(profile: Profile) -> str:
    """The prefetch Job's image: kubernetes.prefetch_image, else the vLLM image (python3 and huggingface_hub inside)."""
    return profile.kubernetes.prefetch_image or profile.vllm.image


def prefetch_node_selector(profile: Profile) -> dict[str, str]:
    """kubernetes.job_node_selector, plus the vLLM image's architecture while the prefetch runs that image (an
    arm64-only image must not land on an amd64 CPU node)."""
    kube = profile.kubernetes
    selector = dict(kube.job_node_selector)
    if kube.prefetch_image is None:
        selector.setdefault("kubernetes.io/arch", profile.vllm.image_arch)
    return dict(sorted(selector.items()))


def prefetch_tolerations(profile: Profile) -> list[dict[str, Any]]:
    """kubernetes.job_tolerations, plus the GPU pods' tolerations while the prefetch runs the vLLM image: that image
    is built for the trays' architecture, and a cluster whose CPU nodes are of another one (x86 system nodes beside
    arm64 GB300 trays) can place it only on a tray, where it requests no GPU and runs before the group does."""
    kube = profile.kubernetes
    tolerations = [t.manifest() for t in kube.job_tolerations]
    if kube.prefetch_image is None:
        tolerations += [t for t in (t.manifest() for t in kube.tolerations) if t not in tolerations]
    return tolerations


def compile_cache_env(profile: Profile) -> list[dict[str, str]]:
    """K3DEPLOY_COMPILE_CACHE for the prefetch, which makes the compile cache's folder writable by every UID (the
    serving pods run as root, which an NFS export may squash) before it writes the marker the group waits for."""
    cache = compile_cache(profile)
    return [] if cache is None else [{"name": "K3DEPLOY_COMPILE_CACHE", "value": cache["folder"]}]


def site_env(profile: Profile) -> list[dict[str, str]]:
    """The prefetch's reach into a site's network: a Hub mirror and a proxy (both spellings: the Hub client's HTTP
    stack reads either); none by default."""
    kube = profile.kubernetes
    env: dict[str, str | None] = {"HF_ENDPOINT": kube.hf_endpoint}
    if kube.https_proxy is not None:
        for key in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
            env[key] = kube.https_proxy
        if kube.no_proxy:
            env["NO_PROXY"] = env["no_proxy"] = kube.no_proxy
    return [{"name": key, "value": value} for key, value in sorted(env.items()) if value is not None]


def _monitoring(profile: Profile, labels: Callable[[str], dict[str, str]]) -> dict[str, Any]:
    """Context of the dashboard ConfigMap and the PrometheusRule (built only when they are rendered)."""
    if not profile.kubernetes.monitoring_on:
        return {}
    kube = profile.kubernetes
    return {
        "dashboard_namespace": kube.grafana_dashboard_namespace or kube.namespace,
        "dashboard_labels": {**labels("dashboard"), **GRAFANA_DASHBOARD_LABEL},
        "dashboard_key": f"{profile.name}.json",
        "dashboard_json": json.dumps(dashboard_json(profile), indent=2, sort_keys=True) + "\n",
        "alert_labels": {**labels("alerts"), **kube.service_monitor_labels},
        "alert_groups": rule_groups(profile),
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


def rendered_objects(profile: Profile) -> list[dict[str, Any]]:
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
