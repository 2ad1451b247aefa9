"""`k3deploy apply` on the real plane: order, idempotence, dry run, diff, the in-place question, conflicts with
another field manager, kubectl's conventions, node preflight on every eligible node, a terminating namespace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from k3deploy.kube.api import object_key
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.rollout.order import apply_order
from tests.conftest import run_cli
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import LWS, NO_DRA, PROFILE, TIMEOUT, Deployment
from tests.realk8s.objects import clique_ids, gb300_node
from tests.rollout.test_apply import applied_lines
from tests.support.lws_revision import REVISION_KEY

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]


def _lws_args(deploy: Deployment) -> str:
    live = deploy.get("leaderworkersets", LWS)
    assert live is not None
    return json.dumps(live["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0])


def test_dry_run_then_apply_in_dependency_order_then_reruns_diffs_and_the_in_place_question(
    deploy: Deployment,
) -> None:
    ns = deploy.namespace
    dry = deploy.k3("apply", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"Namespace/{ns} created (server dry run)" in dry.stderr
    assert deploy.plane.api.find(f"/api/v1/namespaces/{ns}") is None

    first = deploy.k3("apply", *TIMEOUT)
    assert first.returncode == 0, first.stderr
    assert "replaces the group in place" not in first.stderr  # created, not replaced
    lines = applied_lines(first.stderr)
    sets = [NO_DRA[1], f"kubernetes.namespace={ns}"]
    rendered = apply_order([m.obj for m in build(load_profile(PROFILE, sets))])
    assert lines == [f"{object_key(obj)} created" for obj in rendered]
    keys = [line.rsplit(" ", 1)[0] for line in lines]
    assert keys[0] == f"Namespace/{ns}" and keys[-1] == f"{ns}/Job/{LWS}-smoke"
    prefetch = next(key for key in keys if key.startswith(f"{ns}/Job/{LWS}-prefetch-"))
    assert (
        keys.index(f"{ns}/PersistentVolumeClaim/{LWS}-model-cache")
        < keys.index(prefetch)
        < keys.index(f"{ns}/LeaderWorkerSet/{LWS}")
    )
    # The prefetch Job finished before the LeaderWorkerSet existed.
    prefetch_done = first.stderr.index(f"{prefetch.split('/', 1)[1]}: Complete")
    assert prefetch_done < first.stderr.index(f"LeaderWorkerSet/{LWS} created")
    lws = deploy.get("leaderworkersets", LWS)
    assert lws is not None
    assert [m["manager"] for m in lws["metadata"]["managedFields"] if m["operation"] == "Apply"] == ["k3deploy"]
    assert lws["status"]["readyReplicas"] == 1

    again = deploy.k3("apply", *TIMEOUT, "-o", "json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["stages"][1]["detail"] == f"no changes: all {len(rendered) - 1} objects unchanged"
    assert {o["action"] for o in report["objects"]} == {"unchanged"}
    after = deploy.get("leaderworkersets", LWS)
    assert after is not None and after["metadata"]["generation"] == lws["metadata"]["generation"]

    # As `kubectl diff`: exit 1 when the live state differs (a pipeline gates on it), 0 when it matches.
    diff = deploy.k3("apply", "--diff", "--set", "vllm.max_model_len=524288")
    assert diff.returncode == 1, diff.stderr
    assert f"--- live/{ns}/LeaderWorkerSet/{LWS}" in diff.stdout
    assert "1048576" in diff.stdout and "+" in diff.stdout and "524288" in diff.stdout
    assert "524288" not in _lws_args(deploy)
    as_json = deploy.k3("apply", "--diff", "--set", "vllm.max_model_len=524288", "-o", "json")
    assert as_json.returncode == 1, as_json.stderr
    changed = {entry["object"]: entry["diff"] for entry in json.loads(as_json.stdout)["diff"]}
    assert "524288" in changed[f"{ns}/LeaderWorkerSet/{LWS}"]
    # -o yaml holds the same document.
    as_yaml = deploy.k3("apply", "--diff", "--set", "vllm.max_model_len=524288", "-o", "yaml")
    assert as_yaml.returncode == 1, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout)["diff"] == json.loads(as_json.stdout)["diff"]
    same = deploy.k3("apply", "--diff")
    assert same.returncode == 0 and same.stdout == ""
    assert "no changes" in same.stderr

    # Without a terminal the outage needs --yes: refused, the live group untouched.
    refused = deploy.k3("apply", *TIMEOUT, "--set", "vllm.max_model_len=524288")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines() == [
        f"error: the change replaces the only group of LeaderWorkerSet {LWS} in place (one replica, maxSurge 0): the "
        "endpoint serves nothing until the new group has loaded the weights (up to the startup budget, 7610s): "
        "refused without --yes (stdin is not a terminal, so nobody can confirm)",
        "hint: re-run with --yes to accept the outage, or `up --strategy blue-green` with a second free clique",
    ]
    assert "524288" not in _lws_args(deploy)
    changed_run = deploy.k3("apply", *TIMEOUT, "--yes", "--set", "vllm.max_model_len=524288")
    assert changed_run.returncode == 0, changed_run.stderr
    out = changed_run.stderr.splitlines()
    at = out.index(f"  {ns}/LeaderWorkerSet/{LWS} configured")
    assert out[at + 1].startswith(
        f"  note: LeaderWorkerSet {LWS} has one replica and maxSurge 0: a changed pod "
        "template replaces the group in place, so the endpoint is down"
    )
    assert "524288" in _lws_args(deploy)
    # When the rollout said ready, every serving pod ran the new template and was ready; the real (v0.9)
    # controller's status.observedGeneration was the proof (LWS v0.8 shapes: tests/rollout/test_judge.py).
    changed = deploy.get("leaderworkersets", LWS)
    assert changed is not None and changed["metadata"]["generation"] == 2
    assert "status.observedGeneration 2 = metadata.generation" in changed_run.stderr
    # The newest ControllerRevision holds the current template (kubernetes-sigs/lws pkg/utils/revision).
    of_lws = [
        r
        for r in deploy.list("controllerrevisions")
        if [o["kind"] for o in r["metadata"].get("ownerReferences", [])] == ["LeaderWorkerSet"]
    ]
    newest = max(of_lws, key=lambda r: int(r["revision"]))
    assert newest["revision"] == 2
    key = newest["metadata"]["labels"][REVISION_KEY]
    pods = [p for p in deploy.pods(LWS) if p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/name") == LWS]
    assert len(pods) == 4 and {p["metadata"]["labels"][REVISION_KEY] for p in pods} == {key}
    assert all(
        any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])) for p in pods
    )
    for pod in pods:
        command = pod["spec"]["containers"][0]["command"]
        assert command[command.index("--max-model-len") + 1] == "524288"


def test_conflict_names_the_owner_then_force_conflicts_takes_the_field(deploy: Deployment) -> None:
    assert deploy.k3("apply", "--no-wait").returncode == 0
    path = resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", deploy.namespace, LWS)
    scale = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": LWS, "namespace": deploy.namespace},
        "spec": {"replicas": 2},
    }
    deploy.plane.api.apply(path, scale, manager="kubectl-scale")
    conflict = deploy.k3("apply", "--no-wait")
    assert conflict.returncode == 1
    assert (
        f"error: apply {deploy.namespace}/LeaderWorkerSet/{LWS}: conflict with another field manager: "
        ".spec.replicas (owned by 'kubectl-scale')"
    ) in conflict.stderr
    assert "hint: re-run with --force-conflicts" in conflict.stderr
    assert deploy.plane.api.get(path)["spec"]["replicas"] == 2

    forced = deploy.k3("apply", "--no-wait", "--force-conflicts")
    assert forced.returncode == 0, forced.stderr
    assert deploy.plane.api.get(path)["spec"]["replicas"] == 1


def test_kubectl_conventions_namespace_flag_and_kubeconfig_env(deploy: Deployment) -> None:
    config = deploy.plane.admin_kubeconfig
    assert config is not None
    result = run_cli(
        "apply", "-p", PROFILE, "-n", deploy.namespace, "--no-wait", *NO_DRA, env={"KUBECONFIG": str(config)}
    )
    assert result.returncode == 0, result.stderr
    assert deploy.get("leaderworkersets", LWS) is not None
    default = resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", "kimi-k3", LWS)
    assert deploy.plane.api.find(default) is None


def test_node_preflight_runs_on_every_eligible_node(deploy: Deployment) -> None:
    plane = deploy.plane
    version = plane.binaries.versions["K8S_VERSION"]
    # A clique of two (too small for a group of four) beside the plane's three cliques of four.
    lonely_clique = clique_ids(9)[-1]
    lonely = [gb300_node(f"lonely-{deploy.namespace}-{i}", lonely_clique, version) for i in range(2)]
    for node in lonely:
        deploy.on_teardown(lambda n=node["metadata"]["name"]: plane.api.delete(f"/api/v1/nodes/{n}"))
    plane.add_nodes(lonely)
    # --no-wait: the group is not this test's subject, and without gang admission (kubernetes.gang_admission none)
    # the scheduler may put its leader on a lonely tray, where the workers can never follow: 2 chances in 14 here,
    # and `wait` then fails as Unschedulable, as it should. The Job's completion is waited for below instead.
    result = deploy.k3("apply", "--no-wait", *TIMEOUT)
    assert result.returncode == 0, result.stderr
    job = deploy.get("jobs", f"{LWS}-node-preflight")
    assert job is not None
    pod = job["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    hosts = term["matchExpressions"][0]["values"]
    gb300 = sorted(
        n["metadata"]["name"]
        for n in plane.api.get("/api/v1/nodes")["items"]
        if n["metadata"]["name"].startswith("gb300-")
    )
    assert sorted(hosts) == gb300 and not [h for h in hosts if h.startswith("lonely")]
    count = len(gb300)
    assert (job["spec"]["completions"], job["spec"]["parallelism"], job["spec"]["completionMode"]) == (
        count,
        count,
        "Indexed",
    )
    assert f"node-preflight checks every eligible node: {', '.join(hosts)}" in result.stderr
    wait_until(  # raises TimeoutError unless all `count` pods succeed
        "the node-preflight Job's pods all succeed",
        lambda: (j := deploy.get("jobs", f"{LWS}-node-preflight")) and j.get("status", {}).get("succeeded") == count,
        60,
    )
    # A re-run against the same nodes renders the same Job.
    again = deploy.k3("apply", "--no-wait", *TIMEOUT)
    assert again.returncode == 0, again.stderr
    assert f"{deploy.namespace}/Job/{LWS}-node-preflight unchanged" in again.stderr


def test_applying_into_a_terminating_namespace_says_so(deploy: Deployment, tmp_path: Path) -> None:
    """The real NamespaceLifecycle admission plugin (kubernetes staging/src/k8s.io/apiserver/pkg/admission/plugin/
    namespace/lifecycle/admission.go) refuses new content in a namespace being deleted: not an RBAC problem. A
    ConfigMap with a finalizer of the test's own keeps the namespace Terminating."""
    ns = deploy.namespace
    api = deploy.plane.api
    deploy.create_namespace()
    held = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "held", "namespace": ns, "finalizers": ["realk8s.k3deploy.test/hold"]},
    }
    api.create(deploy.path("configmaps"), held)
    deploy.on_teardown(lambda: deploy.patch(deploy.path("configmaps", "held"), {"metadata": {"finalizers": None}}))
    api.delete(f"/api/v1/namespaces/{ns}")
    result = deploy.k3("apply", "--timeout", "20s")
    assert result.returncode == 3, result.stderr
    assert f"is forbidden: unable to create new content in namespace {ns} because it is being terminated" in (
        result.stderr
    )
    assert "hint: the namespace is still being deleted (a recent `down --purge`?)" in result.stderr
