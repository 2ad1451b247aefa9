"""Real kubectl against the test API server, to keep its semantics honest."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import venv_tool
from tests.kubeapi import crds
from tests.kubeapi.server import KubeApiServer

pytestmark = pytest.mark.integration

KUBECTL = venv_tool("kubectl")

LWS = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": {"name": "x", "namespace": "default"},
    "spec": {
        "replicas": 1,
        "leaderWorkerTemplate": {
            "size": 4,
            "workerTemplate": {
                "spec": {
                    "containers": [
                        {
                            "name": "vllm",
                            "image": "vllm/vllm-openai:kimi-k3",
                            "resources": {"limits": {"nvidia.com/gpu": "4"}},
                        }
                    ]
                }
            },
        },
    },
}


@pytest.fixture
def kubectl(kube: KubeApiServer):  # returns a runner
    """Run kubectl with the fixture's kubeconfig; returns the completed process."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (the test extra installs it beside the interpreter)")

    def run(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KUBECTL, "--kubeconfig", str(kube.kubeconfig), *args], capture_output=True, text=True, timeout=timeout
        )

    return run


def test_kubectl_server_side_apply_get_and_wait(kube: KubeApiServer, kubectl, tmp_path: Path) -> None:
    kube.add_crds()
    kube.add_gb300_nodes(count=4)
    manifest = tmp_path / "lws.yaml"
    manifest.write_text(yaml.safe_dump(LWS))
    applied = kubectl("apply", "--server-side", "-f", str(manifest))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.strip() == "leaderworkerset.leaderworkerset.x-k8s.io/x serverside-applied"
    waited = kubectl("wait", "--for=condition=Available", "leaderworkerset/x", "--timeout=60s")
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.strip() == "leaderworkerset.leaderworkerset.x-k8s.io/x condition met"
    pods = kubectl("get", "pods", "--no-headers")
    assert pods.returncode == 0, pods.stderr
    rows = [line.split() for line in pods.stdout.splitlines()]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("x-0", "1/1", "Running"),
        ("x-0-1", "1/1", "Running"),
        ("x-0-2", "1/1", "Running"),
        ("x-0-3", "1/1", "Running"),
    ]
    ready = kubectl("get", "lws", "x", "-o", "jsonpath={.status.readyReplicas}")
    assert ready.stdout == "1"
    owners = kube.store.get("leaderworkersets", "x", "default")["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in owners if not e.get("subresource")] == [("kubectl", "Apply")]


def test_kubectl_reports_conflicts_and_forces_them(kube: KubeApiServer, kubectl, tmp_path: Path) -> None:
    kube.controllers.disable()
    kube.add_crds()
    manifest = tmp_path / "lws.yaml"
    manifest.write_text(yaml.safe_dump(LWS))
    assert kubectl("apply", "--server-side", "--field-manager=k3deploy", "-f", str(manifest)).returncode == 0
    scaled = kubectl("patch", "lws", "x", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    assert scaled.returncode == 0, scaled.stderr
    again = kubectl("apply", "--server-side", "--field-manager=k3deploy", "-f", str(manifest))
    assert again.returncode == 1
    assert re.search(
        r'conflict with "kubectl-patch" using leaderworkerset.x-k8s.io/v1 at '
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: .spec.replicas",
        again.stderr,
    )
    forced = kubectl("apply", "--server-side", "--field-manager=k3deploy", "--force-conflicts", "-f", str(manifest))
    assert forced.returncode == 0, forced.stderr
    assert kube.store.get("leaderworkersets", "x", "default")["spec"]["replicas"] == 1


def test_kubectl_logs_and_events(kube: KubeApiServer, kubectl) -> None:
    kube.add_gb300_nodes(count=1)
    kube.controllers.kubelet.fail(
        "CrashLoopBackOff", pod="^crash$", logs=["Traceback (most recent call last):", "RuntimeError: CUDA error"]
    )
    kube.store.create(
        "pods", {"metadata": {"name": "crash"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}, "default"
    )
    kube.wait_for(
        lambda: (
            kube.store.get("pods", "crash", "default")["status"]
            .get("containerStatuses", [{}])[0]
            .get("restartCount", 0)
            >= 1
        )
    )
    logs = kubectl("logs", "crash", "--previous", "--tail=1")
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout == "RuntimeError: CUDA error\n"
    events = kubectl(
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=crash,reason=BackOff",
        "-o",
        "jsonpath={.items[*].type}",
    )
    assert events.returncode == 0 and events.stdout.split() == ["Warning"]


def test_upstream_crds_install_with_kubectl_and_serve_their_kinds(kube: KubeApiServer, kubectl) -> None:
    for path in sorted(crds.require().glob("*.yaml")):
        installed = kubectl("apply", "--server-side", "-f", str(path))
        assert installed.returncode == 0, installed.stderr
    resources = kubectl("api-resources", "--api-group=leaderworkerset.x-k8s.io", "--no-headers")
    assert resources.stdout.split()[:5] == [
        "leaderworkersets",
        "lws",
        "leaderworkerset.x-k8s.io/v1",
        "true",
        "LeaderWorkerSet",
    ]
    kinds = {(t.group, t.kind) for t in kube.registry.all() if t.crd}
    files = [yaml.safe_load(path.read_text()) for path in sorted(crds.require().glob("*.yaml"))]
    assert kinds == {(f["spec"]["group"], f["spec"]["names"]["kind"]) for f in files}
    assert {
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
        ("resource.nvidia.com", "ComputeDomain"),
        ("monitoring.coreos.com", "ServiceMonitor"),
    } <= kinds


def test_kubectl_shows_the_strict_servers_refusals(kube: KubeApiServer, kubectl, tmp_path: Path) -> None:
    """kubectl sends fieldValidation=Strict: an unknown field is a 400 strict decoding error on create (k8s.io/
    apiserver handlers with KEP-2885 field validation), a wrong type a 422 from the CRD schema, and a changed
    ComputeDomain spec is refused by its CEL rule."""
    crds.require()
    kube.controllers.disable()
    kube.add_crds()
    bad = json.loads(json.dumps(LWS))
    bad["spec"]["leaderWorkerTemplate"]["sizes"] = 4
    (tmp_path / "unknown.yaml").write_text(yaml.safe_dump(bad))
    created = kubectl("create", "-f", str(tmp_path / "unknown.yaml"))
    assert created.returncode == 1
    assert 'strict decoding error: unknown field "spec.leaderWorkerTemplate.sizes"' in created.stderr
    bad = json.loads(json.dumps(LWS))
    bad["spec"]["leaderWorkerTemplate"]["size"] = "four"
    (tmp_path / "type.yaml").write_text(yaml.safe_dump(bad))
    created = kubectl("create", "-f", str(tmp_path / "type.yaml"))
    assert created.returncode == 1
    assert (
        'The LeaderWorkerSet "x" is invalid: spec.leaderWorkerTemplate.size: Invalid value: "string": '
        'spec.leaderWorkerTemplate.size in body must be of type integer: "string"'
    ) in created.stderr
    cd = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "cd", "namespace": "default"},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "a"}}},
    }
    (tmp_path / "cd.yaml").write_text(yaml.safe_dump(cd))
    assert kubectl("apply", "--server-side", "-f", str(tmp_path / "cd.yaml")).returncode == 0
    cd["spec"]["numNodes"] = 4
    (tmp_path / "cd.yaml").write_text(yaml.safe_dump(cd))
    changed = kubectl("apply", "--server-side", "-f", str(tmp_path / "cd.yaml"))
    assert changed.returncode == 1 and "A computeDomain.spec is immutable" in changed.stderr


def test_kubectl_auth_can_i_reads_the_deny_list(kube: KubeApiServer, kubectl) -> None:
    kube.add_crds()
    kube.access.deny(verb="create", resource="leaderworkersets", group="leaderworkerset.x-k8s.io")
    denied = kubectl("auth", "can-i", "create", "leaderworkersets.leaderworkerset.x-k8s.io")
    assert (denied.returncode, denied.stdout.strip()) == (1, "no")
    allowed = kubectl("auth", "can-i", "list", "pods")
    assert (allowed.returncode, allowed.stdout.strip()) == (0, "yes")
