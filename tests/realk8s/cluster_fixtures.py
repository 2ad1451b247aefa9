"""Per-test deployments of the GB300 profile on the session's real plane (tests/realk8s/fixtures.py registers them).

`deploy`: a namespace of the test's own (`deploy.namespace`, created by k3deploy itself) and `deploy.k3(command,
*args)` to run the real CLI there with the admin kubeconfig; `deploy.get`/`deploy.list` read what the server holds;
`deploy.logs(...)` gives the namespace's containers a log (KWOK ClusterLogs); `deploy.cordon(...)` takes nodes out
of scheduling for the test. At the end the namespace is deleted and its pods waited for, so they free their GPUs for the
next test, and whatever the test changed on shared objects is put back.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane
from tests.realk8s.slices import SliceWatch

PROFILE = "kimi-k3-gb300-tp16"
LWS = "kimi-k3-gb300-tp16"
#: No NVIDIA DRA driver runs on the plane yet: the set is rendered without its ComputeDomain unless a test asks.
NO_DRA = ("--set", "kubernetes.compute_domain=false")
#: A test that wants a truly unschedulable pod to fail soon sets a grace of a few seconds, never 0 (a pod the
#: scheduler holds for a moment while the provisioner binds its weight-cache claim, `pod has unbound immediate
#: PersistentVolumeClaims`, is not counted: rollout/claims.py; but its condition can lag the binding).
UNSCHEDULABLE_GRACE = ("--set", "kubernetes.unschedulable_grace_s=15")
#: What the real tier gives a rollout that should pass (real controllers on a loaded host).
TIMEOUT = ("--timeout", "240s")
#: A short smoke: 2 requests of 64 tokens, answers not judged, a decode target a loaded 2-core CI machine reaches
#: (the scripted server's speed is not what is under test).
SMOKE = (
    "--set",
    "smoke.requests=2",
    "--set",
    "smoke.output_tokens=64",
    "--set",
    "smoke.correctness=false",
    "--set",
    "targets.decode_tok_s=20",
)
#: Public weights (no token Secret) and the short smoke, greedy and to the full length, not the GB300 profile's
#: sampling like the published run (T=1.0): the rehearsal model's random weights accept almost no draft above T=0.
UP = (
    *TIMEOUT,
    "--set",
    "kubernetes.hf_token_secret=null",
    *SMOKE,
    "--set",
    "smoke.temperature=0",
    "--set",
    "smoke.ignore_eos=true",
)
QUICK = ("--skip-preflight", "--skip-smoke", *UP)
#: `up` with its smoke, served by a real vLLM (its speed reaches the decode target above).
GATED = ("--skip-preflight", *UP)
#: `up` with its smoke served by the scripted server (tests/smoke/scripted_server.py): 16 tokens, any speed.
SCRIPTED = (*GATED, "--set", "smoke.output_tokens=16", "--set", "targets.decode_tok_s=1")
#: Two serving groups.
TWO = ("--set", "parallel.replicas=2")
#: The template change the upgrade tests roll out.
NEW_IMAGE = ("--set", "vllm.image=vllm/vllm-openai:kimi-k3-next")
#: The API Service's name.
API_SERVICE = "kimi-k3-gb300-tp16-api"
#: Where the plural of a kind the tests read lives.
API_VERSIONS = {
    "leaderworkersets": "leaderworkerset.x-k8s.io/v1",
    "jobs": "batch/v1",
    "statefulsets": "apps/v1",
    "controllerrevisions": "apps/v1",
    "deployments": "apps/v1",
    "endpointslices": "discovery.k8s.io/v1",
    "resourceclaimtemplates": "resource.k8s.io/v1",
    "resourceclaims": "resource.k8s.io/v1",
    "poddisruptionbudgets": "policy/v1",
    "networkpolicies": "networking.k8s.io/v1",
    "roles": "rbac.authorization.k8s.io/v1",
    "leases": "coordination.k8s.io/v1",
    "rolebindings": "rbac.authorization.k8s.io/v1",
    "computedomains": "resource.nvidia.com/v1beta1",
}
NAMESPACE_GONE_S = 180.0


class Deployment:
    """One test's namespace on the plane and the CLI run against it."""

    def __init__(self, plane: Plane, namespace: str, workdir: Path) -> None:
        self.plane = plane
        self.namespace = namespace
        self.workdir = workdir
        self._undo: list[Callable[[], None]] = []

    @property
    def api(self) -> object:
        """The admin client of the plane (tests/realk8s/client.py Api)."""
        return self.plane.api

    def k3(
        self,
        command: str,
        *args: str,
        dra: bool = False,
        kubeconfig: Path | None = None,
        timeout: float = 300,
        input: str | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """`k3deploy COMMAND -p PROFILE --kubeconfig ADMIN -n NAMESPACE [NO_DRA] ARGS`, in this process."""
        config = kubeconfig or self.plane.admin_kubeconfig
        assert config is not None
        return run_cli(
            command,
            "-p",
            PROFILE,
            "--kubeconfig",
            str(config),
            "-n",
            self.namespace,
            *(() if dra else NO_DRA),
            *args,
            timeout=timeout,
            input=input,
            env=env,
        )

    def path(self, plural: str, name: str | None = None, namespaced: bool = True) -> str:
        """The API path of one of this namespace's objects (or of their collection)."""
        return resource_path(API_VERSIONS.get(plural, "v1"), plural, self.namespace if namespaced else None, name)

    def get(self, plural: str, name: str) -> dict | None:
        """The namespace's object as the server holds it, None if there is none."""
        found = self.plane.api.find(self.path(plural, name))
        return found if found is None else dict(found)

    def list(self, plural: str) -> list[dict]:
        """The namespace's objects of a kind."""
        return list(self.plane.api.get(self.path(plural))["items"])

    def pods(self, prefix: str = "") -> list[dict]:
        """The namespace's pods whose names start with `prefix` and are not being deleted."""
        return [
            p
            for p in self.list("pods")
            if p["metadata"]["name"].startswith(prefix) and not p["metadata"].get("deletionTimestamp")
        ]

    def create_namespace(self) -> None:
        """Create the namespace ahead of k3deploy (for objects a test puts there first)."""
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        self.plane.api.create("/api/v1/namespaces", body)

    def patch(self, path: str, patch: dict, kind: str = "merge") -> dict:
        """A merge (or strategic, json) patch of any object."""
        response = self.plane.api.request(
            "PATCH", path, content=json.dumps(patch), headers={"Content-Type": f"application/{kind}-patch+json"}
        )
        assert response.status_code == 200, response.text
        return dict(response.json())

    def logs(self, containers: list[str], lines: list[str], previous: list[str] | None = None) -> None:
        """Every pod of the namespace logs `lines` from `containers` (KWOK ClusterLogs, through the real
        kube-apiserver's pod log proxy); `previous` is the log of the container's previous run (default the same)."""
        name = f"{self.namespace}-{len(self._undo)}"
        current = self.workdir / f"{name}.log"
        before = self.workdir / f"{name}.previous.log"
        stamp = "2026-12-01T10:00:00.000000000Z stdout F "
        current.write_text("".join(stamp + line + "\n" for line in lines))
        before.write_text("".join(stamp + line + "\n" for line in (lines if previous is None else previous)))
        body = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterLogs",
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchNamespaces": [self.namespace]},
                "logs": [{"containers": containers, "logsFile": str(current), "previousLogsFile": str(before)}],
            },
        }
        collection = resource_path("kwok.x-k8s.io/v1alpha1", "clusterlogs")
        self.plane.api.create(collection, body)
        self._undo.append(lambda: self.plane.api.delete(f"{collection}/{name}"))

    def cordon(self, *nodes: str) -> None:
        """Mark nodes unschedulable for this test (uncordoned at its end)."""
        for node in nodes:
            self.patch(f"/api/v1/nodes/{node}", {"spec": {"unschedulable": True}})
            self._undo.append(lambda n=node: self.patch(f"/api/v1/nodes/{n}", {"spec": {"unschedulable": None}}))

    def on_teardown(self, undo: Callable[[], None]) -> None:
        """Run `undo` at the end of the test (before the namespace is deleted)."""
        self._undo.append(undo)

    def teardown(self) -> None:
        """Undo in reverse, delete the namespace and wait until its pods are gone (they hold GPUs)."""
        for undo in reversed(self._undo):
            undo()
        api = self.plane.api
        api.delete(f"/api/v1/namespaces/{self.namespace}")
        # The next test needs the GPUs, not the namespace: waiting for its pods to go is enough (the namespace
        # controller's sweep of every other kind can finish on its own).
        wait_until(
            f"the pods of namespace {self.namespace} to be deleted",
            lambda: not api.get(resource_path("v1", "pods", self.namespace))["items"],
            NAMESPACE_GONE_S,
            interval_s=0.5,
        )


@pytest.fixture
def deploy(realk8s: Plane, tmp_path: Path) -> Iterator[Deployment]:
    """A namespace of this test's own on the session's plane and the CLI against it (see `Deployment`)."""
    deployment = Deployment(realk8s, f"k3-{uuid.uuid4().hex[:8]}", tmp_path)
    try:
        yield deployment
    finally:
        deployment.teardown()


class SliceRecorder:
    """Every state of a Service's ready endpoints while it runs: a real watch of its EndpointSlices
    (tests/realk8s/slices.py), the union of their ready endpoints after each event."""

    def __init__(self, plane: Plane, namespace: str, service: str) -> None:
        self.states: list[list[str]] = []
        self._watch = SliceWatch(plane, namespace, service, self._changed)

    def _changed(self, slices: dict[str, dict]) -> None:
        self.states.append(sorted({e for s in slices.values() for e in ready_endpoints(s)}))

    def stop(self) -> list[list[str]]:
        """Stop watching; the states seen (give the watch a moment to deliver the last writes first)."""
        time.sleep(1.0)
        self._watch.stop()
        return self.states


def ready_endpoints(endpoint_slice: dict) -> list[str]:
    """The pods an EndpointSlice lists as ready."""
    return sorted(
        e["targetRef"]["name"]
        for e in endpoint_slice.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready") and e.get("targetRef")
    )
