"""`preflight --cluster` reads the target namespace's Pod Security Admission labels from the test API server and
judges the rendered set with k3deploy.render.pod_security: FAIL when enforce would reject a pod, WARN for warn."""

from __future__ import annotations

import json

import pytest

from k3deploy.preflight.checks_psa import namespace_levels
from k3deploy.report.model import Status
from tests.conftest import run_cli
from tests.kubeapi.server import KubeApiServer
from tests.preflight.test_checks_pinning import PINNED
from tests.preflight.test_cluster import GB300, healthy, preflight

ENFORCE, WARN, AUDIT = (f"pod-security.kubernetes.io/{mode}" for mode in ("enforce", "warn", "audit"))


def label_namespace(kube: KubeApiServer, labels: dict[str, str]) -> None:
    def mutate(namespace: dict) -> None:
        namespace["metadata"]["labels"] = {**namespace["metadata"].get("labels", {}), **labels}

    kube.store.update("namespaces", "kimi-k3", None, mutate)


def test_restricted_enforce_rejects_the_root_serving_pods(kube: KubeApiServer) -> None:
    healthy(kube)
    label_namespace(kube, {ENFORCE: "restricted"})
    result = preflight(kube)["k8s.pod_security"]
    assert result.status is Status.FAIL and result.measured == "enforce=restricted"
    assert result.detail.startswith("enforce=restricted rejects 2 pod rule(s): ")
    assert f"LeaderWorkerSet/{GB300}/leaderTemplate: run-as-non-root" in result.detail
    assert f"LeaderWorkerSet/{GB300}/workerTemplate: run-as-non-root" in result.detail
    assert "Job/" not in result.detail  # k3deploy's own Jobs meet restricted
    assert "pod-security.kubernetes.io/enforce=baseline" in result.hint


@pytest.mark.parametrize(
    ("labels", "status", "measured"),
    [
        ({ENFORCE: "baseline"}, Status.PASS, "enforce=baseline"),
        ({ENFORCE: "privileged", AUDIT: "restricted"}, Status.PASS, "enforce=privileged, audit=restricted"),
        ({ENFORCE: "baseline", WARN: "restricted"}, Status.WARN, "enforce=baseline, warn=restricted"),
        ({ENFORCE: "strict"}, Status.FAIL, "enforce=restricted"),  # unparsable: PSA evaluates restricted
        ({}, Status.PASS, "no Pod Security labels"),
    ],
)
def test_the_namespace_level_decides(
    kube: KubeApiServer, labels: dict[str, str], status: Status, measured: str
) -> None:
    healthy(kube)
    label_namespace(kube, labels)
    result = preflight(kube)["k8s.pod_security"]
    assert (result.status, result.measured) == (status, measured)


def test_a_namespace_up_will_create_has_the_clusters_default(kube: KubeApiServer) -> None:
    healthy(kube)
    result = preflight(kube, "kubernetes.namespace=fresh")["k8s.pod_security"]
    assert result.status is Status.PASS and "to be created by `up`" in result.detail


def test_cli_fails_with_exit_1_on_a_restricted_namespace(kube: KubeApiServer) -> None:
    healthy(kube)
    label_namespace(kube, {ENFORCE: "restricted"})
    done = run_cli(
        "preflight",
        "-p",
        GB300,
        "--cluster",
        "--kubeconfig",
        str(kube.kubeconfig),
        "-o",
        "json",
        *[arg for s in PINNED for arg in ("--set", s)],
    )
    assert done.returncode == 1, done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["k8s.pod_security"]["status"] == "fail"


def test_audit_fails_open_and_warn_fails_closed() -> None:
    assert namespace_levels({AUDIT: "bogus", WARN: "bogus"}) == {"warn": "restricted", "audit": "privileged"}
