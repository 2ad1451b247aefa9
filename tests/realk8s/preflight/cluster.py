"""A real plane of its own for the preflight --cluster tests, and what they change on it, put back after each test.

Preflight reads cluster-wide objects (every node and pod, the CRDs in discovery, StorageClasses, RuntimeClasses,
controller workloads), and its faults are cluster-wide changes: a CRD deleted, a node cordoned or relabelled, the
default StorageClass changed. The session plane is shared by the whole tier (and deleting the LWS CRD under its
LWS controller would upset later tests), so these tests get one plane for the package: 8 GB300 trays in 2 cliques
(A: gb300-01..04, B: gb300-05..08), 1 CPU node, someone else's running pod holding all 4 GPUs of gb300-01, and
the NVIDIA DRA driver's controller Deployment and kubelet-plugin DaemonSet as its chart names them (the driver
itself is the plane's stand-in, tests/realk8s/dra.py, which installs no workloads).

`PreflightCluster` is one test's view: its own namespace (created with the `hf-token` Secret unless asked not to),
preflight run in this process or through the CLI, and changes that record their undo.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from k3deploy.kube.client import KubeOptions
from k3deploy.preflight.run import run_preflight
from k3deploy.profile import load_profile
from k3deploy.render.manifests import rendered_objects
from k3deploy.report.model import CheckResult, Status
from k3deploy.rollout.access import command_access
from tests.conftest import run_cli
from tests.preflight.test_checks_pinning import PINNED
from tests.realk8s import objects
from tests.realk8s.binaries import binaries_or_skip
from tests.realk8s.client import ApiError, resource_path, wait_until
from tests.realk8s.fault_rules import Faults
from tests.realk8s.faults import FaultProxy
from tests.realk8s.plane import Plane, PlaneOptions
from tests.realk8s.test_preflight import READ

GB300 = "kimi-k3-gb300-tp16"
CLIQUE_A, CLIQUE_B = objects.clique_ids(2)
CRD = "apiextensions.k8s.io/v1"
RBAC = "rbac.authorization.k8s.io/v1"
DEPLOYER = "realk8s-deployer"
#: Someone else's pods (a training job) live here, outside every test's namespace.
OTHERS = "training"
#: The NVIDIA DRA driver's workloads as NVIDIA/k8s-dra-driver-gpu deployments/helm/nvidia-dra-driver-gpu installs
#: them (chart `nvidia-dra-driver-gpu`, image nvcr.io/nvidia/k8s-dra-driver-gpu), at 0 replicas like the plane's
#: LWS Deployment: what preflight reads the driver's version from.
DRA_NAMESPACE = "nvidia-dra-driver-gpu"
DRA_VERSION = "v25.12.0"
DRA_WORKLOADS = (
    ("nvidia-dra-driver-gpu-controller", "deployments"),
    ("nvidia-dra-driver-gpu-kubelet-plugin", "daemonsets"),
)
RUNTIME_CLASS = resource_path("node.k8s.io/v1", "runtimeclasses", name="nvidia")


def _workload(name: str, plural: str) -> dict[str, Any]:
    labels = {
        "app.kubernetes.io/name": "nvidia-dra-driver-gpu",
        "helm.sh/chart": f"nvidia-dra-driver-gpu-{DRA_VERSION[1:]}",
    }
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "main", "image": f"nvcr.io/nvidia/k8s-dra-driver-gpu:{DRA_VERSION}"}]},
    }
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": name}}, "template": template}
    if plural == "deployments":
        spec["replicas"] = 0
    else:  # on the GPU nodes, whose taint it does not tolerate: the real controller starts none of its pods
        template["spec"]["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
    kind = "Deployment" if plural == "deployments" else "DaemonSet"
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": DRA_NAMESPACE, "labels": labels},
        "spec": spec,
    }


def gpu_pod(
    name: str, node: str, gpus: int, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """A pod bound to `node` that holds `gpus` nvidia.com/gpu (KWOK runs it)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 0,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {
                    "name": "main",
                    "image": "nvcr.io/nvidia/pytorch:25.10-py3",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        },
    }


def _namespace(plane: Plane, name: str) -> None:
    """The release's namespace made beforehand, labelled (baseline) as the first step of docs/guide/deploy-gb300.md
    labels it."""
    labels = {f"pod-security.kubernetes.io/{mode}": "baseline" for mode in ("enforce", "warn", "audit")}
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    plane.api.create("/api/v1/namespaces", body)
    wait_until(
        f"the default ServiceAccount of {name}",
        lambda: plane.api.find(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
        60,
    )


@contextlib.contextmanager
def preflight_plane_started(directory: Path) -> Iterator[Plane]:
    """The package's plane (see the module docstring), stopped after."""
    binaries = binaries_or_skip()
    plane = Plane(binaries, PlaneOptions(gb300_nodes=8, cliques=2, cpu_nodes=1, workdir=directory))
    with plane:
        plane.admin_kubeconfig = plane.kubeconfig(directory / "admin.kubeconfig")
        _namespace(plane, OTHERS)
        plane.api.create(resource_path("v1", "pods", OTHERS), gpu_pod("training-gb300-01", "gb300-01", 4))
        plane.api.create(
            "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DRA_NAMESPACE}}
        )
        for name, plural in DRA_WORKLOADS:
            plane.api.create(resource_path("apps/v1", plural, DRA_NAMESPACE), _workload(name, plural))
        yield plane


class PreflightCluster:
    """One test's namespace on the package's plane, preflight against it, and changes undone at the end."""

    def __init__(self, plane: Plane, workdir: Path) -> None:
        self.plane = plane
        self.api = plane.api
        self.workdir = workdir
        self.namespace = f"t-{uuid.uuid4().hex[:8]}"
        self._undo: list[Callable[[], None]] = []
        self.deployer_kubeconfig = plane.kubeconfig(workdir / "deployer.kubeconfig", DEPLOYER)

    # -- the namespace -------------------------------------------------------------------------------------
    def create_namespace(self, secret: dict[str, str] | None = None, *, with_secret: bool = True) -> None:
        """The namespace, with Secret `hf-token` holding `secret` (base64 values; default key `token`) unless not
        `with_secret`."""
        _namespace(self.plane, self.namespace)
        if not with_secret:
            return
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "hf-token"},
            "type": "Opaque",
            "data": secret if secret is not None else {"token": "aGZfdGVzdA=="},
        }
        self.api.create(resource_path("v1", "secrets", self.namespace), body)

    def pod(
        self,
        name: str,
        node: str,
        gpus: int,
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
    ) -> None:
        """A pod of this namespace on `node` holding `gpus` GPUs."""
        self.api.create(resource_path("v1", "pods", self.namespace), gpu_pod(name, node, gpus, labels, annotations))

    def create(self, api_version: str, plural: str, obj: dict[str, Any]) -> Any:
        """Create one object in the namespace."""
        return self.api.create(resource_path(api_version, plural, self.namespace), obj)

    # -- preflight ---------------------------------------------------------------------------------------------
    def sets(self, *sets: str) -> list[str]:
        """The pinned profile's --set values in this namespace, then `sets`."""
        return [*PINNED, f"kubernetes.namespace={self.namespace}", *sets]

    def preflight(self, *sets: str, kubeconfig: Path | None = None) -> dict[str, CheckResult]:
        """run_preflight --cluster in this process, by check name."""
        profile = load_profile(GB300, self.sets(*sets))
        config = kubeconfig or self.plane.admin_kubeconfig
        rendered = rendered_objects(profile)
        needs = command_access(rendered)
        results = run_preflight(
            profile, node=False, cluster=True, kube=KubeOptions(kubeconfig=str(config)), objects=rendered, needs=needs
        )
        return {r.name: r for r in results}

    def cli(self, *args: str, kubeconfig: Path | None = None, env: dict[str, str] | None = None) -> Any:
        """`k3deploy preflight -p GB300 --cluster --kubeconfig ADMIN ARGS`."""
        config = kubeconfig or self.plane.admin_kubeconfig
        return run_cli("preflight", "-p", GB300, "--cluster", "--kubeconfig", str(config), *args, env=env)

    # -- cluster-wide changes, undone at the end ---------------------------------------------------------------
    def on_teardown(self, undo: Callable[[], None]) -> None:
        """Run `undo` at the end of the test."""
        self._undo.append(undo)

    def patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch of any object."""
        response = self.api.request(
            "PATCH", path, content=json.dumps(patch), headers={"Content-Type": "application/merge-patch+json"}
        )
        assert response.status_code == 200, response.text
        return dict(response.json())

    def patch_node(self, node: str, patch: dict[str, Any], undo: dict[str, Any]) -> None:
        """Merge-patch a node, merge-patched back with `undo` after the test."""
        path = f"/api/v1/nodes/{node}"
        self.patch(path, patch)
        self.on_teardown(lambda: self.patch(path, undo))

    def add_node(self, node: dict[str, Any]) -> None:
        """A node KWOK manages, Ready before this returns, deleted after the test."""
        self.plane.add_nodes([node])
        self.on_teardown(lambda: self.api.delete(f"/api/v1/nodes/{node['metadata']['name']}"))

    def remove(self, path: str, then: Callable[[], None] | None = None) -> None:
        """Delete a cluster-scoped object, created again as it was after the test (then `then` is run)."""
        saved = self.api.get(path)
        meta = {k: saved["metadata"][k] for k in ("name", "labels", "annotations") if k in saved["metadata"]}
        body = {**{k: v for k, v in saved.items() if k != "status"}, "metadata": meta}
        self.api.delete(path)
        wait_until(f"{path} to be gone", lambda: self.api.find(path) is None, 60)

        def back() -> None:
            self.api.create(path.rsplit("/", 1)[0], body)
            if then is not None:
                then()

        self.on_teardown(back)

    def add_cluster_object(self, collection: str, obj: dict[str, Any]) -> None:
        """Create a cluster-scoped object, deleted after the test."""
        self.api.create(collection, obj)
        self.on_teardown(lambda: self.api.delete(f"{collection}/{obj['metadata']['name']}"))

    def remove_crd(self, name: str) -> None:
        """Delete a CRD and wait until discovery no longer serves it; after the test it is created again and
        waited for until discovery serves it."""
        plural, group = name.split(".", 1)
        path = resource_path(CRD, "customresourcedefinitions", name=name)
        version = next(v["name"] for v in self.api.get(path)["spec"]["versions"] if v.get("served"))

        def established() -> bool:
            crd = self.api.find(path) or {}
            conditions = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
            return conditions.get("Established") == "True" and self._served(group, version, plural)

        self.remove(path, then=lambda: wait_until(f"{name} served again", established, 60))
        wait_until(f"discovery to drop {name}", lambda: not self._served(group, version, plural), 60)

    def _served(self, group: str, version: str, plural: str) -> bool:
        response = self.api.request("GET", f"/apis/{group}/{version}")
        return response.status_code == 200 and plural in {r["name"] for r in response.json().get("resources") or []}

    def proxied(self) -> tuple[Faults, Path]:
        """A fault proxy in front of the plane for this test (stopped after): its rules and an admin kubeconfig
        through it."""
        proxy = FaultProxy(self.plane.url, self.plane.ca_file, self.plane.serving_pair("fault-proxy")).start()
        self.on_teardown(proxy.stop)
        return proxy.faults, self.plane.kubeconfig(self.workdir / "proxied.kubeconfig", server=proxy.url)

    # -- the deployer's real RBAC ------------------------------------------------------------------------------
    def grant(
        self,
        cluster_rules: list[dict[str, Any]],
        namespace_rules: list[dict[str, Any]] | None = None,
        *,
        denied: tuple[str, str],
        allowed: tuple[str, str] = ("GET", "/api/v1/namespaces"),
    ) -> Path:
        """Bind the deployer to a ClusterRole of `cluster_rules` and, in the namespace, a Role of `namespace_rules`;
        wait until the authorizer answers `allowed` (method, path) with 200 and `denied` with 403 (so no binding of
        an earlier test still counts), unbind after the test. Returns the deployer's kubeconfig."""
        name = f"{self.namespace}-deployer"
        subject = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": DEPLOYER}]
        role_ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
        self.add_cluster_object(
            resource_path(RBAC, "clusterroles"),
            {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": name}, "rules": cluster_rules},
        )
        self.add_cluster_object(
            resource_path(RBAC, "clusterrolebindings"),
            {
                "apiVersion": RBAC,
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": role_ref,
                "subjects": subject,
            },
        )
        if namespace_rules is not None:
            meta = {"name": "deployer", "namespace": self.namespace}
            self.create(RBAC, "roles", {"apiVersion": RBAC, "kind": "Role", "metadata": meta, "rules": namespace_rules})
            ref = {**role_ref, "kind": "Role", "name": "deployer"}
            self.create(
                RBAC,
                "rolebindings",
                {"apiVersion": RBAC, "kind": "RoleBinding", "metadata": meta, "roleRef": ref, "subjects": subject},
            )
        as_deployer = self.plane.client(DEPLOYER)
        try:
            wait_until(
                "the deployer's bindings to take effect",
                lambda: (
                    as_deployer.request(*allowed).status_code == 200 and as_deployer.request(*denied).status_code == 403
                ),
                30,
            )
        finally:
            as_deployer.close()
        return self.deployer_kubeconfig

    # -- end ---------------------------------------------------------------------------------------------------
    def teardown(self) -> None:
        """Undo in reverse; delete the namespace and wait until its pods are gone (they hold GPUs)."""
        errors = []
        for undo in reversed(self._undo):
            try:
                undo()
            except (ApiError, TimeoutError, AssertionError) as exc:
                errors.append(exc)
        pods = resource_path("v1", "pods", self.namespace)
        self.api.request("DELETE", pods, params={"gracePeriodSeconds": "0"})
        self.api.delete(f"/api/v1/namespaces/{self.namespace}")
        wait_until(f"the pods of {self.namespace} to be gone", lambda: not self.api.get(pods)["items"], 120, 0.3)
        assert not errors, f"could not put the plane back: {errors}"


def read_rules() -> list[dict[str, Any]]:
    """The cluster-wide reads preflight's node, storage, runtime and controller checks need (tests/realk8s/test_preflight.py)."""
    core, grouped = READ
    rules = [{"apiGroups": [""], "resources": core, "verbs": ["get", "list", "watch"]}]
    return rules + [{"apiGroups": [g], "resources": [r], "verbs": ["get", "list", "watch"]} for g, r in grouped]


def up_rules(namespace: str, without: tuple[str, str, str] | None = None) -> list[dict[str, Any]]:
    """Every verb preflight reviews for `up` in `namespace` (but `without`, (verb, resource, group)), and reading
    the token Secret and the model-cache claim."""
    profile = load_profile(GB300, [*PINNED, f"kubernetes.namespace={namespace}"])
    rules = [{"apiGroups": [""], "resources": ["secrets", "persistentvolumeclaims"], "verbs": ["get", "list"]}]
    for access in command_access(rendered_objects(profile)):
        if access.resource == "namespaces" or (access.verb, access.resource, access.group) == without:
            continue
        resource = f"{access.resource}/{access.subresource}" if access.subresource else access.resource
        rules.append({"apiGroups": [access.group], "resources": [resource], "verbs": [access.verb]})
    return rules


def failing(results: dict[str, CheckResult]) -> set[str]:
    """The names of the checks that failed."""
    return {name for name, r in results.items() if r.status is Status.FAIL}
