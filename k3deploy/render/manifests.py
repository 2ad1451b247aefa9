"""The ordered set of Kubernetes objects for a profile: context from the profile, objects from the templates.

Pure: the profile goes in, plain dicts come out (reading the template files is the only I/O). The order is
the apply order of rollout/order.py (namespace, service account, the profile ConfigMap, node-preflight Job,
weight cache, ComputeDomain, prefetch Job, LeaderWorkerSet, Service, PodDisruptionBudget, ServiceMonitor,
smoke Job) and gives each file its numeric prefix.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from k3deploy.errors import ProfileError
from k3deploy.profile.model import Profile
from k3deploy.render.argv import canonical_json, serve_command, serve_env
from k3deploy.render.features import compute_domain_num_nodes, lws_restart
from k3deploy.render.templating import render_template

#: Value of app.kubernetes.io/managed-by on every object of the set.
MANAGED_BY = "k3deploy"
#: Name of the pod-level claim on the ComputeDomain's IMEX channel.
CHANNEL_CLAIM = "compute-domain-channel"
#: Probe period of the leader's startup probe; the failure threshold spreads the profile's budget over it.
STARTUP_PROBE_PERIOD_S = 10
#: LWS labels its pods with these; the Service and the PDB select on them.
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_GROUP_KEY_LABEL = "leaderworkerset.sigs.k8s.io/group-key"
#: Where the smoke Job mounts the profile ConfigMap, and the one key it holds.
PROFILE_MOUNT_DIR = "/etc/k3deploy"
PROFILE_KEY = "profile.yaml"
#: Pod-template annotation with the profile's digest: a changed profile changes the smoke Job, so it runs again.
PROFILE_DIGEST_ANNOTATION = "k3deploy/profile-sha256"
# The UID/GID k3deploy's own Jobs run as: the k3deploy image's user (Dockerfile); also the prefetch's fsGroup,
# so the weight cache it fills is group-owned by it.
JOB_UID = 10001
# Where the prefetch Job finds the Hub token (a Secret volume), named to huggingface_hub by HF_TOKEN_PATH.
HF_TOKEN_MOUNT_DIR = "/var/run/secrets/k3deploy/hf"
HF_TOKEN_FILE = "token"
#: Component label of the node-preflight Job and its pods (what their anti-affinity selects on).
NODE_PREFLIGHT_COMPONENT = "node-preflight"
#: The node-preflight Job gives up after this (an image pull and a few NVML queries take a minute): a pod
#: that cannot be placed must fail the PreSync hook, not hold the sync forever.
NODE_PREFLIGHT_DEADLINE_S = 900
#: A finished node-preflight Job (and its pods' JSON reports) is kept this long, then removed.
NODE_PREFLIGHT_TTL_S = 86400
#: The Hub client the prefetch Job installs: pinned, so a new release cannot change the download under a pinned set.
PREFETCH_HUB_REQUIREMENT = "huggingface_hub==2.4.0"
#: Argo CD sync options of the weight cache: neither pruned nor deleted with the Application (1.5 TB re-download);
#: gitops-engine pkg/sync/common/types.go SyncOptionDisablePrune / SyncOptionDisableDeletion.
KEEP_SYNC_OPTIONS = "Prune=false,Delete=false"


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
class _Entry:
    order: int
    template: str
    wanted: Callable[[Profile], bool]


_ALWAYS: Callable[[Profile], bool] = lambda _profile: True  # noqa: E731

#: The set, in apply order. Gaps in the numbering leave room for later objects without renaming files.
SET: tuple[_Entry, ...] = (
    _Entry(0, "namespace.yaml.j2", _ALWAYS),
    _Entry(1, "serviceaccount.yaml.j2", _ALWAYS),
    _Entry(2, "profile-configmap.yaml.j2", _ALWAYS),
    _Entry(3, "node-preflight-job.yaml.j2", lambda p: p.kubernetes.node_preflight),
    _Entry(4, "model-cache-pvc.yaml.j2", _ALWAYS),
    _Entry(5, "computedomain.yaml.j2", lambda p: p.kubernetes.compute_domain),
    _Entry(6, "prefetch-job.yaml.j2", _ALWAYS),
    _Entry(10, "leaderworkerset.yaml.j2", _ALWAYS),
    _Entry(11, "service.yaml.j2", _ALWAYS),
    _Entry(12, "poddisruptionbudget.yaml.j2", _ALWAYS),
    _Entry(13, "servicemonitor.yaml.j2", lambda p: p.kubernetes.service_monitor),
    _Entry(20, "smoke-job.yaml.j2", _ALWAYS),
)


def api_service_name(profile: Profile) -> str:
    """Name of the Service in front of the leader's HTTP port.

    Not the LeaderWorkerSet's own name: LWS creates a headless Service of that name for the pods' DNS
    (`LWS_LEADER_ADDRESS`), and would silently skip it if ours took the name.
    """
    return f"{profile.name}-api"


def model_cache_name(profile: Profile) -> str:
    """Name of the weight-cache PersistentVolumeClaim."""
    return f"{profile.name}-model-cache"


def smoke_ready_s(profile: Profile) -> int:
    """How long the in-cluster smoke Job waits for /health: the profile's bound, else the startup probe's budget
    (an Argo CD PostSync hook can start while the model still loads: Argo CD knows no LeaderWorkerSet health)."""
    return math.ceil(profile.smoke.ready_timeout_s or profile.kubernetes.startup_probe_budget_s)


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
        return {**base_labels, "app.kubernetes.io/component": component}

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
    server_env = [{"name": key, "value": value} for key, value in sorted({**hf_env, **serve_env(profile)}.items())]
    hardware = profile.hardware
    node_selector = dict(kube.node_selector)
    if hardware is not None and hardware.gfd_product_label and "nvidia.com/gpu.product" not in node_selector:
        node_selector["nvidia.com/gpu.product"] = hardware.gfd_product_label
    node_selector.setdefault("kubernetes.io/arch", profile.vllm.image_arch)
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
            "prefetch": f"{name}-prefetch",
            "smoke": f"{name}-smoke",
            "node_preflight": f"{name}-node-preflight",
            "profile": f"{name}-profile",
            "service": api_service_name(profile),
        },
        "lws_labels": {"name": LWS_NAME_LABEL, "worker_index": LWS_WORKER_INDEX_LABEL, "group_key": LWS_GROUP_KEY_LABEL},
        "channel_claim": CHANNEL_CLAIM,
        "leader_command": serve_command(profile, role="leader"),
        "worker_command": serve_command(profile, role="worker"),
        "server_env": server_env,
        "prefetch_env": [
            {"name": "HF_HOME", "value": hf_env["HF_HOME"]},
            # The root filesystem is read-only: pip and Python write under HOME and /tmp (emptyDirs).
            {"name": "HOME", "value": "/tmp"},
            {"name": "K3DEPLOY_HUB_REQUIREMENT", "value": PREFETCH_HUB_REQUIREMENT},
            {"name": "K3DEPLOY_PREFETCH", "value": repos_json},
            {"name": "K3DEPLOY_PREFETCH_MARKER", "value": marker},
            *token_env,
        ],
        "marker": marker,
        "hf_token": {"mount_dir": HF_TOKEN_MOUNT_DIR, "file": HF_TOKEN_FILE},
        "job_uid": JOB_UID,
        "node_selector": dict(sorted(node_selector.items())),
        "gpus": str(profile.parallel.gpus_per_node),
        "startup_probe_period_s": STARTUP_PROBE_PERIOD_S,
        "startup_failure_threshold": math.ceil(kube.startup_probe_budget_s / STARTUP_PROBE_PERIOD_S),
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
        "node_preflight_ttl_s": NODE_PREFLIGHT_TTL_S,
        "node_preflight_count": len(kube.node_preflight_hosts) or profile.parallel.nodes,
        "tolerations": [t.manifest() for t in kube.tolerations],
        "lws_restart": lws_restart(profile),
        "compute_domain_num_nodes": compute_domain_num_nodes(profile),
        "keep_sync_options": KEEP_SYNC_OPTIONS,
        "service_monitor_labels": {**labels("metrics"), **kube.service_monitor_labels},
    }


def build(profile: Profile) -> list[Manifest]:
    """Render the profile's objects in apply order."""
    if profile.target != "kubernetes":
        raise ProfileError(
            f"profile {profile.name!r} has target {profile.target!r}: it has no Kubernetes objects",
            hint="use a profile with target: kubernetes",
        )
    ctx = context(profile)
    manifests = []
    for entry in SET:
        if not entry.wanted(profile):
            continue
        obj = yaml.safe_load(render_template(entry.template, ctx))
        if not isinstance(obj, dict) or "kind" not in obj:
            raise ValueError(f"template {entry.template} did not render one object")
        manifests.append(Manifest(entry.order, obj))
    return manifests


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings (scripts) as literal blocks, readable in review."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump(obj: Any) -> str:
    """Canonical YAML of one object: key order as rendered, block style, no line folding."""
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1_000_000)


def profile_yaml(profile: Profile) -> str:
    """The effective profile (after overrides) as YAML that `load_profile` reads back to an equal profile.

    Keys sorted, so equal profiles give the same bytes (and the same digest) whatever order their source had.
    """
    return yaml.dump(
        profile.model_dump(mode="json"), Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True,
        width=1_000_000,
    )
