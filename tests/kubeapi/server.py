"""The test Kubernetes API server: the HTTP server, its store, faults, access rules, controllers and helpers to
populate a cluster (GB300 nodes, CRDs, storage classes) and to write a kubeconfig for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import yaml

from tests.kubeapi import crds
from tests.kubeapi.access import USER, Access
from tests.kubeapi.controllers import Controllers
from tests.kubeapi.discovery import version_info
from tests.kubeapi.errors import ApiError
from tests.kubeapi.faults import Faults
from tests.kubeapi.http import ApiHTTPServer
from tests.kubeapi.registry import Registry
from tests.kubeapi.store import Store

T = TypeVar("T")


def write_kubeconfig(path: Path, server: str, namespace: str = "default", context: str = "test") -> Path:
    """A kubeconfig whose current context points at `server` (token auth, the given namespace)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "current-context": context,
        "clusters": [{"name": "test-cluster", "cluster": {"server": server}}],
        "users": [{"name": USER, "user": {"token": "test-token"}}],
        "contexts": [{"name": context, "context": {"cluster": "test-cluster", "user": USER, "namespace": namespace}}],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class KubeApiServer:
    """A Kubernetes API on 127.0.0.1 (random port) for the official client and kubectl, with simulated controllers."""

    def __init__(self, git_version: str = "v1.34.1", history_limit: int = 1000) -> None:
        self.git_version = git_version
        self.registry = Registry(int(version_info(git_version)["minor"]))
        self.store = Store(self.registry, history_limit)
        self.faults = Faults()
        self.access = Access()
        self.controllers = Controllers(self.store)
        #: Server-side cap on a watch without timeoutSeconds, and the BOOKMARK period when bookmarks are asked for
        #: (the watch cache's bookmarkFrequency is a minute; tests that need bookmarks sooner set it lower).
        self.default_watch_timeout = 300.0
        self.bookmark_interval = 60.0
        self.watch_events_sent = 0
        self._httpd: ApiHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._node_count = 0
        #: The kubeconfig file the fixture wrote for this server.
        self.kubeconfig: Path | None = None

    # ----- lifecycle ---------------------------------------------------------------------------------------
    def start(self, controllers: bool = True) -> KubeApiServer:
        """Listen, create the standard namespaces and start the controllers."""
        self._httpd = ApiHTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="kubeapi-http", daemon=True
        )
        self._thread.start()
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.store.create("namespaces", {"metadata": {"name": ns}}, manager="kube-apiserver")
        if controllers:
            self.controllers.start()
        return self

    def stop(self) -> None:
        """Stop the controllers, end open watches and close the listening socket."""
        self.controllers.stop()
        self.store.close()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def port(self) -> int:
        """The listening port."""
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def address(self) -> str:
        """host:port."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """http://127.0.0.1:<port>."""
        return f"http://{self.address}"

    def write_kubeconfig(self, path: Path, namespace: str = "default", context: str = "test") -> Path:
        """A kubeconfig whose current context points at this server (token auth, the given namespace)."""
        return write_kubeconfig(path, self.url, namespace, context)

    def wait_for(self, condition: Callable[[], T], timeout: float = 10.0) -> T:
        """Wait (woken by every store change, no sleep-polling) until `condition()` is truthy; return its value.

        Raises TimeoutError with the last value when it does not happen within `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        with self.store.lock:
            while True:
                value = condition()
                if value:
                    return value
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"condition not met within {timeout}s (last value: {value!r})")
                self.store.changed.wait(min(remaining, 0.1))

    def break_watches(self, how: str = "drop") -> None:
        """End every open watch: "drop" cuts the connection, "close" ends the stream cleanly, "expire" compacts
        the history and sends ERROR 410 Expired in the stream (the resume then gets 410 too).
        """
        self.store.break_watches(how)

    def when(
        self, ref: str, name: str, predicate: Callable[[dict], bool], namespace: str | None = None
    ) -> float | None:
        """time.monotonic() of the first change still in history after which the object satisfied `predicate`
        (for benchmarks: e.g. when an LWS turned Available).
        """
        rtype = self.store.rtype(ref)
        with self.store.lock:
            for event in self.store.history:
                meta = event.obj["metadata"]
                if (
                    event.key == rtype.key
                    and meta["name"] == name
                    and (namespace is None or meta.get("namespace") == namespace)
                    and event.type != "DELETED"
                    and predicate(event.obj)
                ):
                    return event.at
        return None

    # ----- cluster population ------------------------------------------------------------------------------
    def set_version(self, git_version: str) -> None:
        """Report this gitVersion and serve what that minor serves (resource.k8s.io only from 1.34)."""
        self.git_version = git_version
        self.registry.set_minor(int(version_info(git_version)["minor"]))

    def add_crds(
        self, lws: bool = True, compute_domain: bool = True, service_monitor: bool = True, inference_pool: bool = False
    ) -> None:
        """Create the CRDs; their groups then appear in discovery and their objects can be used.

        `service_monitor` stands for the Prometheus Operator's CRDs: ServiceMonitor and PrometheusRule.
        """
        for wanted, build in (
            (lws, crds.leaderworkerset),
            (compute_domain, crds.compute_domain),
            (service_monitor, crds.service_monitor),
            (service_monitor, crds.prometheus_rule),
            (inference_pool, crds.inference_pool),
        ):
            if wanted:
                try:
                    self.store.create("customresourcedefinitions", build(), manager="test")
                except ApiError as exc:
                    if exc.reason != "AlreadyExists":
                        raise

    def add_node(
        self,
        name: str,
        labels: dict[str, str],
        allocatable: dict[str, str],
        *,
        arch: str = "arm64",
        taints: list[dict] | None = None,
        ready: bool = True,
    ) -> dict:
        """A Ready node with these labels and allocatable resources (capacity = allocatable)."""
        labels = {"kubernetes.io/arch": arch, "kubernetes.io/os": "linux", "kubernetes.io/hostname": name, **labels}
        self._node_count += 1
        node = {
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints} if taints else {},
            "status": {
                "capacity": dict(allocatable),
                "allocatable": dict(allocatable),
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        "reason": "KubeletReady" if ready else "KubeletNotReady",
                        "message": "kubelet is posting ready status" if ready else "container runtime down",
                        "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ],
                "addresses": [
                    {"type": "InternalIP", "address": f"10.0.{self._node_count // 250}.{self._node_count % 250 + 1}"},
                    {"type": "Hostname", "address": name},
                ],
                "nodeInfo": {
                    "architecture": arch,
                    "kubeletVersion": self.git_version,
                    "operatingSystem": "linux",
                    "osImage": "Ubuntu 24.04.3 LTS",
                    "kernelVersion": "6.8.0-1036-nvidia-64k",
                    "containerRuntimeVersion": "containerd://2.1.4",
                    "kubeProxyVersion": "",
                    "bootID": f"boot-{name}",
                    "machineID": f"machine-{name}",
                    "systemUUID": f"uuid-{name}",
                },
            },
        }
        return self.store.create("nodes", node, manager="kubelet")

    def add_gb300_nodes(
        self,
        clique: str = "5b1c3a9e-2f4d-4e7a-9c1b-0d2e3f4a5b6c.1",
        count: int = 4,
        gpus: int = 4,
        arch: str = "arm64",
        product: str = "NVIDIA-GB300",
        memory: int = 284208,
        driver: str = "580.95.05",
        prefix: str = "gb300",
    ) -> list[dict]:
        """`count` GPU nodes in one NVLink clique, labelled as GPU Feature Discovery labels GB300 trays."""
        major, minor, revision = ([*driver.split("."), "0", "0"])[:3]
        nodes = []
        for _ in range(count):
            name = f"{prefix}-{self._node_count + 1:02d}"
            labels = {
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.count": str(gpus),
                "nvidia.com/gpu.memory": str(memory),
                "nvidia.com/gpu.family": "blackwell",
                "nvidia.com/gpu.compute.major": "10",
                "nvidia.com/gpu.compute.minor": "3",
                "nvidia.com/gpu.clique": clique,
                "nvidia.com/cuda.driver-version.major": major,
                "nvidia.com/cuda.driver-version.minor": minor,
                "nvidia.com/cuda.driver-version.revision": revision,
                "nvidia.com/cuda.driver-version.full": driver,
                "nvidia.com/cuda.runtime-version.major": "13",
                "nvidia.com/cuda.runtime-version.minor": "0",
                "nvidia.com/mig.capable": "false",
                "nvidia.com/gpu.machine": "GB300-NVL72",
            }
            nodes.append(
                self.add_node(
                    name,
                    labels,
                    {
                        "cpu": "144",
                        "memory": "900Gi",
                        "pods": "110",
                        "ephemeral-storage": "3500Gi",
                        "nvidia.com/gpu": str(gpus),
                    },
                    arch=arch,
                )
            )
        return nodes

    def add_runtime_class(self, name: str = "nvidia", handler: str = "nvidia") -> dict:
        """A RuntimeClass (node.k8s.io/v1), as the GPU Operator's container toolkit creates it."""
        return self.store.create("runtimeclasses", {"metadata": {"name": name}, "handler": handler}, manager="test")

    def add_storage_class(
        self, name: str = "shared-rwx", provisioner: str = "nfs.csi.k8s.io", default: bool = False
    ) -> dict:
        """A StorageClass (optionally the cluster default)."""
        annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
        return self.store.create(
            "storageclasses",
            {
                "metadata": {"name": name, "annotations": annotations},
                "provisioner": provisioner,
                "reclaimPolicy": "Delete",
                "volumeBindingMode": "Immediate",
            },
            manager="test",
        )

    def add_controller_workloads(self, lws: str | None = "v0.9.0", dra: str | None = "v25.12.0") -> None:
        """The LWS controller Deployment and the NVIDIA DRA driver's controller Deployment and kubelet-plugin DaemonSet
        as their installs name them (kubernetes-sigs/lws config/default: `lws-controller-manager` in `lws-system`,
        image registry.k8s.io/lws/lws; NVIDIA/k8s-dra-driver-gpu deployments/helm/nvidia-dra-driver-gpu: chart
        `nvidia-dra-driver-gpu`, image nvcr.io/nvidia/k8s-dra-driver-gpu). Status is not simulated."""

        def workload(kind: str, plural: str, name: str, ns: str, image: str, labels: dict[str, str]) -> None:
            if self.store.get("namespaces", ns) is None:
                self.store.create("namespaces", {"metadata": {"name": ns}})
            self.store.create(
                plural,
                {
                    "apiVersion": "apps/v1",
                    "kind": kind,
                    "metadata": {"name": name, "namespace": ns, "labels": labels},
                    "spec": {
                        "selector": {"matchLabels": {"app": name}},
                        "template": {
                            "metadata": {"labels": {"app": name}},
                            "spec": {"containers": [{"name": "main", "image": image}]},
                        },
                    },
                },
                ns,
                manager="helm",
            )

        if lws:
            workload(
                "Deployment",
                "deployments",
                "lws-controller-manager",
                "lws-system",
                f"registry.k8s.io/lws/lws:{lws}",
                {"app.kubernetes.io/name": "lws"},
            )
        if dra:
            chart = {
                "helm.sh/chart": f"nvidia-dra-driver-gpu-{dra.lstrip('v')}",
                "app.kubernetes.io/name": "nvidia-dra-driver-gpu",
            }
            for kind, plural, suffix in (
                ("Deployment", "deployments", "controller"),
                ("DaemonSet", "daemonsets", "kubelet-plugin"),
            ):
                workload(
                    kind,
                    plural,
                    f"nvidia-dra-driver-gpu-{suffix}",
                    "nvidia-dra-driver-gpu",
                    f"nvcr.io/nvidia/k8s-dra-driver-gpu:{dra}",
                    chart,
                )
