"""A real Kueue on the real control plane: the controller manager built by .ci/build-kueue from sigs.k8s.io/kueue,
run outside the cluster like the LWS controller (webhooks registered by URL with the plane's CA), its CRDs from the
same module, and the objects the Kueue page (docs/guide/kueue.md) tells an operator to create (a Topology on the
NVLink clique label, a ResourceFlavor on it, a ClusterQueue with the plane's GPU quota, a LocalQueue `k3deploy` in
`kimi-k3`).

Kueue counts the groups' GPUs by the extended resource `nvidia.com/gpu`: its DRA support (`deviceClassMappings`,
KEP-2941) is alpha and off by default in v0.17.0 (pkg/features/kube_features.go `DynamicResourceAllocation`), so
the ComputeDomain channel claims are not counted.
"""

from __future__ import annotations

import base64
import copy
import os
import shutil
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import yaml

from tests.realk8s import objects
from tests.realk8s.binaries import REPO_ROOT, BinariesMissing, script_dir
from tests.realk8s.client import Api, resource_path
from tests.realk8s.procs import Process, free_port

if TYPE_CHECKING:
    from tests.realk8s.plane import Plane

BUILD_SCRIPT = REPO_ROOT / ".ci" / "build-kueue"
API = "kueue.x-k8s.io/v1beta2"
#: The webhooks of Kueue's own kinds and of the integrations the plane enables (the LeaderWorkerSet one, and the pod
#: one it enables implicitly: pkg/controller/jobs/leaderworkerset/leaderworkerset_controller.go). The manager serves no
#: path of a disabled integration, so registering one (the Job's, failurePolicy Fail) would refuse every Job.
WEBHOOK_PATHS = ("kueue-x-k8s-io", "leaderworkerset", "--v1-pod")
#: Kueue's default namespaces left alone by its pod webhooks (config/components/webhook/kustomization.yaml).
SYSTEM_NAMESPACES = ["kube-system", "kueue-system"]
#: The objects' names: what docs/guide/kueue.md creates.
TOPOLOGY = "nvl72"
FLAVOR = "gb300"
CLUSTER_QUEUE = "gb300"
LOCAL_QUEUE = "k3deploy"
NAMESPACE = "kimi-k3"
CLIQUE_LABEL = "nvidia.com/gpu.clique"


@dataclass(frozen=True)
class KueueBuild:
    """The build directory: the manager binary, the CRDs, the webhook manifests, the version."""

    directory: Path

    @property
    def manager(self) -> str:
        """The controller manager's path."""
        return str(self.directory / "kueue-manager")

    @property
    def version(self) -> str:
        """KUEUE_VERSION as the build recorded it."""
        lines = (self.directory / "versions").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)["KUEUE_VERSION"]


def find_kueue() -> KueueBuild:
    """The built Kueue (K3DEPLOY_KUEUE_BIN overrides the folder), or BinariesMissing naming the command."""
    build = KueueBuild(script_dir(BUILD_SCRIPT, "K3DEPLOY_KUEUE_BIN"))
    if not (build.directory / ".complete").is_file():
        raise BinariesMissing(f"Kueue is not built in {build.directory}; run: bash .ci/build-kueue")
    return build


def kueue_or_skip() -> KueueBuild:
    """The built Kueue for a fixture: skip without it, fail under CI=true (the tier must run)."""
    try:
        return find_kueue()
    except BinariesMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"realk8s tier under CI=true: {exc}", pytrace=False)
        pytest.skip(str(exc))


def webhooks(manifest: Path, url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """Kueue's webhook configurations (config/components/webhook of the built release, with its kustomization's
    namespace selectors on the pod webhooks), narrowed to WEBHOOK_PATHS and pointing at `url` with the plane's CA."""
    bundle = base64.b64encode(ca_pem).decode()
    out = []
    for doc in yaml.safe_load_all(manifest.read_text()):
        if not doc or "webhooks" not in doc:
            continue
        doc = copy.deepcopy(doc)
        doc["metadata"]["name"] = f"kueue-{doc['metadata']['name']}"
        kept = []
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            if not any(part in path for part in WEBHOOK_PATHS):
                continue
            hook["clientConfig"] = {"url": url.rstrip("/") + path, "caBundle": bundle}
            if hook["name"] in ("mpod.kb.io", "vpod.kb.io"):
                hook["namespaceSelector"] = {
                    "matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": SYSTEM_NAMESPACES}
                    ]
                }
            kept.append(hook)
        doc["webhooks"] = kept
        out.append(doc)
    return out


def configuration(webhook_port: int, health_port: int, cert_dir: Path) -> dict[str, Any]:
    """The manager's Configuration: no leader election, certificates from the plane's CA, the LeaderWorkerSet
    integration only, jobs without a queue name left alone (Kueue's default)."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": ["leaderworkerset.x-k8s.io/leaderworkerset"]},
    }


def operator_objects(gpus: int, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """What an operator creates once per cluster (docs/guide/kueue.md): a Topology on the clique label
    (hostname below it), a ResourceFlavor of the GB300 trays on that Topology, a ClusterQueue with `gpus` GPUs of
    quota (and the trays' CPU and memory, which the serving pods also request), a LocalQueue in `namespace`."""
    return [
        {
            "apiVersion": API,
            "kind": "Topology",
            "metadata": {"name": TOPOLOGY},
            "spec": {"levels": [{"nodeLabel": CLIQUE_LABEL}, {"nodeLabel": "kubernetes.io/hostname"}]},
        },
        {
            "apiVersion": API,
            "kind": "ResourceFlavor",
            "metadata": {"name": FLAVOR},
            "spec": {"nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-GB300"}, "topologyName": TOPOLOGY},
        },
        {
            "apiVersion": API,
            "kind": "ClusterQueue",
            "metadata": {"name": CLUSTER_QUEUE},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu", "cpu", "memory"],
                        "flavors": [
                            {
                                "name": FLAVOR,
                                "resources": [
                                    {"name": "nvidia.com/gpu", "nominalQuota": gpus},
                                    {"name": "cpu", "nominalQuota": 144 * gpus // 4},
                                    {"name": "memory", "nominalQuota": f"{900 * gpus // 4}Gi"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace},
        },
        {
            "apiVersion": API,
            "kind": "LocalQueue",
            "metadata": {"name": LOCAL_QUEUE, "namespace": namespace},
            "spec": {"clusterQueue": CLUSTER_QUEUE},
        },
    ]


def _path(obj: dict[str, Any]) -> str:
    plural = {"Namespace": "namespaces"}.get(obj["kind"], obj["kind"].lower() + "s")
    if obj["kind"] == "Topology":
        plural = "topologies"
    meta = obj["metadata"]
    return resource_path(obj["apiVersion"], plural, meta.get("namespace"), meta["name"])


def apply_objects(api: Api, objects: list[dict[str, Any]]) -> None:
    """Server-side apply each object (the admin's field manager)."""
    for obj in objects:
        api.apply(_path(obj), obj)


def start(plane: Plane, build: KueueBuild) -> Process:
    """Install Kueue's CRDs, start its manager with the plane's CA, register its webhooks, wait until it is ready."""
    plane.install_crds(sorted((build.directory / "crds").glob("*.yaml")))
    # Upstream's install binds its manager to a broad ClusterRole (config/components/rbac/role.yaml); the plane's
    # components get cluster-admin, as the LWS controller does here.
    binding = objects.cluster_admin_binding("kueue")
    plane.api.apply(
        resource_path("rbac.authorization.k8s.io/v1", "clusterrolebindings", name=binding["metadata"]["name"]), binding
    )
    certs = plane.dir / "pki" / "kueue"
    certs.mkdir()
    pair = plane.serving_pair("kueue-webhook")
    shutil.copy(pair.cert, certs / "tls.crt")
    shutil.copy(pair.key, certs / "tls.key")
    webhook_port, health_port = free_port(), free_port()
    config = plane.dir / "kueue.yaml"
    config.write_text(yaml.safe_dump(configuration(webhook_port, health_port, certs)))
    # Without its internal certificate management the manager reads its metrics certificate from a fixed path
    # (cmd/kueue/main.go: /etc/kueue/metrics/certs, a Secret volume in-cluster). It runs in a mount namespace of its
    # own where a tmpfs over /etc holds just that folder, so nothing is written to this machine's /etc; it needs
    # nothing else there (its kubeconfig carries the plane's CA, its webhook certificates are in certDir).
    script = (
        "set -e; mount -t tmpfs -o size=1m kueue-etc /etc; mkdir -p /etc/kueue/metrics/certs; "
        'cp "$1"/tls.crt "$1"/tls.key /etc/kueue/metrics/certs/; shift; exec "$@"'
    )
    manager = plane.spawn(
        "kueue-manager",
        [
            "setpriv",
            "--pdeathsig=KILL",
            "--",
            "unshare",
            "--mount",
            "--propagation=private",
            "--fork",
            "--kill-child",
            "--",
            "sh",
            "-c",
            script,
            "kueue-manager",
            str(certs),
            build.manager,
            f"--config={config}",
            # The visibility API is an aggregated API server of its own, which this plane does not register.
            "--feature-gates=VisibilityOnDemand=false",
        ],
        env={"KUBECONFIG": str(plane.component_kubeconfig("kueue"))},
    )
    ready = f"http://127.0.0.1:{health_port}/readyz"
    plane.ready_urls["kueue-manager"] = ready
    plane.wait_process(manager, "the Kueue manager /readyz", lambda: httpx.get(ready, timeout=2).status_code == 200)
    hook_url = f"https://127.0.0.1:{webhook_port}"
    with httpx.Client(verify=ssl.create_default_context(cafile=str(plane.ca_file)), timeout=2) as probe:
        plane.wait_process(manager, "the Kueue webhook server", lambda: probe.get(hook_url).status_code > 0)
    for hook in webhooks(build.directory / "webhook" / "manifests.yaml", hook_url, plane.ca_pem):
        plural = hook["kind"].lower() + "s"
        plane.api.apply(resource_path("admissionregistration.k8s.io/v1", plural, name=hook["metadata"]["name"]), hook)
    return manager
