"""`preflight --cluster` reads the target namespace's Pod Security Admission labels from the real API server and
judges the rendered set with k3deploy.render.pod_security: FAIL when enforce would reject a pod, WARN for warn. The
real PodSecurity admission plugin then judges the same pod templates (server dry-run creates, which it evaluates as
real ones): it rejects exactly the pods preflight said it would, and admits k3deploy's own Jobs."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

import pytest

from k3deploy.kube.client import KubeOptions
from k3deploy.preflight.run import run_preflight
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build, rendered_objects
from k3deploy.report.model import CheckResult, Status
from k3deploy.rollout.access import command_access
from tests.conftest import run_cli, venv_tool
from tests.preflight.test_checks_pinning import PINNED
from tests.realk8s.client import wait_until
from tests.realk8s.cluster_fixtures import LWS, NO_DRA, PROFILE, Deployment

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
ENFORCE, WARN, AUDIT = (f"pod-security.kubernetes.io/{mode}" for mode in ("enforce", "warn", "audit"))


def _preflight(deploy: Deployment, *sets: str) -> dict[str, CheckResult]:
    config = deploy.plane.admin_kubeconfig
    profile = load_profile(PROFILE, [*PINNED, NO_DRA[1], f"kubernetes.namespace={deploy.namespace}", *sets])
    rendered = rendered_objects(profile)
    needs = command_access(rendered)
    results = run_preflight(
        profile, node=False, cluster=True, kube=KubeOptions(kubeconfig=str(config)), objects=rendered, needs=needs
    )
    return {r.name: r for r in results}


def _label(deploy: Deployment, labels: dict[str, str | None]) -> None:
    deploy.patch(f"/api/v1/namespaces/{deploy.namespace}", {"metadata": {"labels": labels}})


def _pod_templates(deploy: Deployment) -> dict[str, dict[str, Any]]:
    """Every pod template of the rendered set, by `Kind/name[/template]` as preflight names them."""
    profile = load_profile(PROFILE, [*PINNED, NO_DRA[1], f"kubernetes.namespace={deploy.namespace}"])
    out = {}
    for obj in (m.obj for m in build(profile)):
        spec = obj.get("spec") or {}
        if obj["kind"] == "LeaderWorkerSet":
            lwt = spec["leaderWorkerTemplate"]
            for key in ("leaderTemplate", "workerTemplate"):
                out[f"LeaderWorkerSet/{obj['metadata']['name']}/{key}"] = lwt[key]["spec"]
        elif obj["kind"] in ("Job", "Deployment"):
            out[f"{obj['kind']}/{obj['metadata']['name']}"] = spec["template"]["spec"]
    return out


def _admitted(deploy: Deployment, name: str, pod_spec: dict[str, Any]) -> tuple[bool, str]:
    """A server dry-run create of a pod of `pod_spec` (under the namespace's default ServiceAccount, which exists,
    so only Pod Security can refuse it)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name.lower().replace("/", "-")[:60].strip("-"), "namespace": deploy.namespace},
        "spec": {**pod_spec, "serviceAccountName": "default"},
    }
    response = deploy.plane.api.request("POST", deploy.path("pods"), params={"dryRun": "All"}, json=pod)
    return response.status_code == 201, response.text


def test_restricted_enforce_is_what_preflight_says_and_what_the_real_admission_does(deploy: Deployment) -> None:
    deploy.create_namespace()
    wait_until("the default ServiceAccount", lambda: deploy.get("serviceaccounts", "default"), 60)
    _label(deploy, {ENFORCE: "restricted"})
    result = _preflight(deploy)["k8s.pod_security"]
    assert result.status is Status.FAIL and result.measured == "enforce=restricted"
    assert result.detail.startswith("enforce=restricted rejects 2 pod rule(s): ")
    assert f"LeaderWorkerSet/{LWS}/leaderTemplate: run-as-non-root" in result.detail
    assert f"LeaderWorkerSet/{LWS}/workerTemplate: run-as-non-root" in result.detail
    assert "Job/" not in result.detail  # k3deploy's own Jobs meet restricted
    assert "pod-security.kubernetes.io/enforce=baseline" in result.hint

    verdicts = {name: _admitted(deploy, name, spec) for name, spec in _pod_templates(deploy).items()}
    refused = {name for name, (ok, _) in verdicts.items() if not ok}
    assert refused == {f"LeaderWorkerSet/{LWS}/leaderTemplate", f"LeaderWorkerSet/{LWS}/workerTemplate"}, verdicts
    for name in refused:
        message = json.loads(verdicts[name][1])["message"]
        assert 'violates PodSecurity "restricted:latest": runAsNonRoot != true' in message, message

    # The CLI exits 1 on it.
    done = run_cli(
        "preflight",
        "-p",
        PROFILE,
        "--cluster",
        "--kubeconfig",
        str(deploy.plane.admin_kubeconfig),
        "-n",
        deploy.namespace,
        *NO_DRA,
        "-o",
        "json",
        *[arg for s in PINNED for arg in ("--set", s)],
    )
    assert done.returncode == 1, done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["k8s.pod_security"]["status"] == "fail"

    # Baseline admits every pod of the set, as preflight's PASS says.
    _label(deploy, {ENFORCE: "baseline"})
    assert _preflight(deploy)["k8s.pod_security"].status is Status.PASS
    assert all(_admitted(deploy, name, spec)[0] for name, spec in _pod_templates(deploy).items())


@pytest.mark.parametrize(
    ("labels", "status", "measured"),
    [
        ({ENFORCE: "baseline"}, Status.PASS, "enforce=baseline"),
        ({ENFORCE: "privileged", AUDIT: "restricted"}, Status.PASS, "enforce=privileged, audit=restricted"),
        ({ENFORCE: "baseline", WARN: "restricted"}, Status.WARN, "enforce=baseline, warn=restricted"),
        ({}, Status.WARN, "no Pod Security labels"),  # made beforehand: k3deploy never labels it
    ],
)
def test_the_namespace_level_decides(deploy: Deployment, labels: dict[str, str], status: Status, measured: str) -> None:
    deploy.create_namespace()
    if labels:
        _label(deploy, dict(labels))
    result = _preflight(deploy)["k8s.pod_security"]
    assert (result.status, result.measured) == (status, measured)


def test_a_namespace_up_will_create_has_the_clusters_default(deploy: Deployment) -> None:
    result = _preflight(deploy)["k8s.pod_security"]
    assert result.status is Status.PASS and "to be created by `up`" in result.detail


def test_a_namespace_made_beforehand_warns_and_the_hints_command_labels_it(deploy: Deployment) -> None:
    kubectl = venv_tool("kubectl")
    if not kubectl:
        pytest.skip("kubectl not installed (bash .ci/setup puts one in .venv/bin)")
    deploy.create_namespace()  # as docs/guide/deploy-gb300.md's first step does, before `up`
    result = _preflight(deploy)["k8s.pod_security"]
    assert (
        result.status is Status.WARN and "made beforehand without pod-security.kubernetes.io/enforce" in result.detail
    )
    assert result.hint == (
        f"kubectl label namespace {deploy.namespace} --overwrite pod-security.kubernetes.io/enforce=baseline "
        "pod-security.kubernetes.io/warn=baseline pod-security.kubernetes.io/audit=baseline"
    )
    # The hint is a command that works: run it as given against the real API server.
    argv = [kubectl, "--kubeconfig", str(deploy.plane.admin_kubeconfig), *shlex.split(result.hint)[1:]]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    labels = deploy.plane.api.get(f"/api/v1/namespaces/{deploy.namespace}")["metadata"]["labels"]
    assert {ENFORCE: "baseline", WARN: "baseline", AUDIT: "baseline"}.items() <= labels.items()
    after = _preflight(deploy)["k8s.pod_security"]
    assert after.status is Status.PASS and after.measured == "enforce=baseline, warn=baseline, audit=baseline"
