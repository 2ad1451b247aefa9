"""`k3deploy apply` against the test API server: order, idempotence, dry run, diff, conflicts, retries."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from k3deploy.kube.api import object_key
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.rollout.order import apply_order
from tests.conftest import run_cli
from tests.integration.vllm_server import free_port
from tests.kubeapi.server import write_kubeconfig
from tests.rollout.conftest import FAST, K3, NAMESPACE, PROFILE, live

pytestmark = pytest.mark.timeout(180)
LWS = "kimi-k3-gb300-tp16"


def applied_lines(stderr: str) -> list[str]:
    """The per-object lines of an apply: `<key> <action>`."""
    return [
        line.strip()
        for line in stderr.splitlines()
        if re.fullmatch(r"  \S+/\S+ (created|configured|unchanged|replaced)( \(server dry run\))?", line)
    ]


def test_apply_waits_in_dependency_order_then_a_rerun_changes_nothing(k3: K3, cluster: Any) -> None:
    first = k3("apply", "--timeout", "60s")
    assert first.returncode == 0, first.stderr
    lines = applied_lines(first.stderr)
    rendered = apply_order([m.obj for m in build(load_profile(PROFILE, []))])
    assert lines == [f"{object_key(obj)} created" for obj in rendered]
    keys = [line.rsplit(" ", 1)[0] for line in lines]
    assert keys[0] == "Namespace/kimi-k3" and keys[-1] == "kimi-k3/Job/kimi-k3-gb300-tp16-smoke"
    assert (
        keys.index("kimi-k3/PersistentVolumeClaim/kimi-k3-gb300-tp16-model-cache")
        < keys.index("kimi-k3/Job/kimi-k3-gb300-tp16-prefetch")
        < keys.index("kimi-k3/LeaderWorkerSet/kimi-k3-gb300-tp16")
    )
    # The prefetch Job finished before the LeaderWorkerSet existed.
    prefetch_done = first.stderr.index("Job/kimi-k3-gb300-tp16-prefetch: Complete")
    assert prefetch_done < first.stderr.index("LeaderWorkerSet/kimi-k3-gb300-tp16 created")
    lws = live(cluster, "leaderworkersets", LWS)
    assert [m["manager"] for m in lws["metadata"]["managedFields"] if m["operation"] == "Apply"] == ["k3deploy"]
    assert lws["status"]["readyReplicas"] == 1

    again = k3("apply", "--timeout", "60s", "-o", "json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["stages"][1]["detail"] == f"no changes: all {len(rendered) - 1} objects unchanged"
    assert {o["action"] for o in report["objects"]} == {"unchanged"}
    assert live(cluster, "leaderworkersets", LWS)["metadata"]["resourceVersion"] == lws["metadata"]["resourceVersion"]


def test_dry_run_and_diff_change_nothing(k3: K3, cluster: Any) -> None:
    dry = k3("apply", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "Namespace/kimi-k3 created (server dry run)" in dry.stderr
    assert cluster.store.get("namespaces", NAMESPACE) is None

    assert k3("apply", "--timeout", "60s").returncode == 0
    # As `kubectl diff`: exit 1 when the live state differs (a pipeline gates on it), 0 when it matches.
    diff = k3("apply", "--diff", "--set", "vllm.max_model_len=524288")
    assert diff.returncode == 1, diff.stderr
    assert "--- live/kimi-k3/LeaderWorkerSet/kimi-k3-gb300-tp16" in diff.stdout
    assert "-        - '1048576'" in diff.stdout or "1048576" in diff.stdout
    assert "+" in diff.stdout and "524288" in diff.stdout
    args = live(cluster, "leaderworkersets", LWS)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"][
        "containers"
    ][0]
    assert "524288" not in json.dumps(args)
    as_json = k3("apply", "--diff", "--set", "vllm.max_model_len=524288", "-o", "json")
    assert as_json.returncode == 1, as_json.stderr
    changed = {entry["object"]: entry["diff"] for entry in json.loads(as_json.stdout)["diff"]}
    assert "524288" in changed["kimi-k3/LeaderWorkerSet/kimi-k3-gb300-tp16"]
    # -o yaml holds the same document.
    as_yaml = k3("apply", "--diff", "--set", "vllm.max_model_len=524288", "-o", "yaml")
    assert as_yaml.returncode == 1, as_yaml.stderr
    assert yaml.safe_load(as_yaml.stdout)["diff"] == json.loads(as_json.stdout)["diff"]
    same = k3("apply", "--diff")
    assert same.returncode == 0 and same.stdout == ""
    assert "no changes" in same.stderr


def test_conflict_names_the_owner_then_force_conflicts_takes_the_field(k3: K3, cluster: Any) -> None:
    assert k3("apply", "--timeout", "60s").returncode == 0
    lws = live(cluster, "leaderworkersets", LWS)
    cluster.store.apply(
        "leaderworkersets",
        {
            "apiVersion": lws["apiVersion"],
            "kind": "LeaderWorkerSet",
            "metadata": {"name": LWS, "namespace": NAMESPACE},
            "spec": {"replicas": 2},
        },
        NAMESPACE,
        manager="kubectl-scale",
        force=True,
    )
    conflict = k3("apply", "--no-wait")
    assert conflict.returncode == 1
    assert (
        "error: apply kimi-k3/LeaderWorkerSet/kimi-k3-gb300-tp16: conflict with another field manager: "
        ".spec.replicas (owned by 'kubectl-scale')"
    ) in conflict.stderr
    assert "hint: re-run with --force-conflicts" in conflict.stderr
    assert live(cluster, "leaderworkersets", LWS)["spec"]["replicas"] == 2

    forced = k3("apply", "--no-wait", "--force-conflicts")
    assert forced.returncode == 0, forced.stderr
    assert live(cluster, "leaderworkersets", LWS)["spec"]["replicas"] == 1


def test_429_and_500_are_retried(k3: K3, cluster: Any) -> None:
    throttled = cluster.faults.add("PATCH", r"/leaderworkersets/", 429, retry_after=0.2, times=2)
    broken = cluster.faults.add("GET", r"/namespaces/kimi-k3/jobs", 500, times=2)
    result = k3("apply", "--timeout", "60s")
    assert result.returncode == 0, result.stderr
    assert (throttled.hits, broken.hits) == (2, 2)
    assert live(cluster, "leaderworkersets", LWS)["status"]["readyReplicas"] == 1


def test_kubectl_conventions_namespace_flag_and_kubeconfig_env(cluster: Any) -> None:
    result = run_cli(
        "apply", "-p", PROFILE, "-n", "team-a", "--no-wait", *FAST, env={"KUBECONFIG": str(cluster.kubeconfig)}
    )
    assert result.returncode == 0, result.stderr
    assert cluster.store.get("leaderworkersets", LWS, "team-a") is not None
    assert cluster.store.get("leaderworkersets", LWS, NAMESPACE) is None


def test_no_config_and_no_server_are_environment_errors(tmp_path: Any) -> None:
    missing = run_cli("status", "-p", PROFILE, "--kubeconfig", str(tmp_path / "nope"))
    assert missing.returncode == 3
    assert missing.stderr.startswith("error: no usable Kubernetes configuration")
    dead = write_kubeconfig(tmp_path / "dead", f"http://127.0.0.1:{free_port()}")
    unreachable = run_cli("apply", "-p", PROFILE, "--kubeconfig", str(dead))
    assert unreachable.returncode == 3, unreachable.stderr
    assert (
        "Kubernetes API unreachable" in unreachable.stderr
        and "hint: check --kubeconfig/--context" in unreachable.stderr
    )
    assert "Traceback" not in unreachable.stderr


def test_a_changed_single_group_says_it_is_replaced_in_place(k3: K3, cluster: Any) -> None:
    first = k3("apply", "--timeout", "60s")
    assert first.returncode == 0, first.stderr
    assert "replaces the group in place" not in first.stderr  # created, not replaced
    # Without a terminal the outage needs --yes: refused, the live group untouched.
    refused = k3("apply", "--timeout", "60s", "--set", "vllm.max_model_len=524288")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.splitlines() == [
        f"error: the change replaces the only group of LeaderWorkerSet {LWS} in place (one replica, maxSurge 0): the "
        "endpoint serves nothing until the new group has loaded the weights (up to the startup budget, 7200s): "
        "refused without --yes (stdin is not a terminal, so nobody can confirm)",
        "hint: re-run with --yes to accept the outage, or `up --strategy blue-green` with a second free clique",
    ]
    assert "524288" not in json.dumps(cluster.store.get("leaderworkersets", LWS, NAMESPACE)["spec"])
    # Nothing live changes: no question.
    assert k3("apply", "--timeout", "60s").returncode == 0
    changed = k3("apply", "--timeout", "60s", "--yes", "--set", "vllm.max_model_len=524288")
    assert changed.returncode == 0, changed.stderr
    lines = changed.stderr.splitlines()
    at = lines.index(f"  kimi-k3/LeaderWorkerSet/{LWS} configured")
    assert lines[at + 1].startswith(
        f"  note: LeaderWorkerSet {LWS} has one replica and maxSurge 0: a changed pod "
        "template replaces the group in place, so the endpoint is down"
    )


def test_node_preflight_runs_on_every_eligible_node(k3: K3, cluster: Any) -> None:
    # The fixture's clique of four plus two more trays in it, and a clique of two (too small for the group).
    cluster.add_gb300_nodes(count=2, prefix="extra")
    cluster.add_gb300_nodes(clique="5b1c3a9e-2f4d-4e7a-9c1b-0d2e3f4a5b6c.9", count=2, prefix="lonely")
    result = k3("apply", "--timeout", "60s")
    assert result.returncode == 0, result.stderr
    job = live(cluster, "jobs", f"{LWS}-node-preflight")
    pod = job["spec"]["template"]["spec"]
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    hosts = term["matchExpressions"][0]["values"]
    assert len(hosts) == 6 and not [h for h in hosts if h.startswith("lonely")]
    assert (job["spec"]["completions"], job["spec"]["parallelism"], job["spec"]["completionMode"]) == (6, 6, "Indexed")
    assert f"node-preflight checks every eligible node: {', '.join(hosts)}" in result.stderr
    assert job["status"]["succeeded"] == 6
    # A re-run against the same nodes renders the same Job.
    again = k3("apply", "--timeout", "60s")
    assert again.returncode == 0, again.stderr
    assert f"kimi-k3/Job/{LWS}-node-preflight unchanged" in again.stderr


def test_applying_into_a_terminating_namespace_says_so(k3: K3, cluster: Any) -> None:
    """The NamespaceLifecycle admission plugin (kubernetes staging/src/k8s.io/apiserver/pkg/admission/plugin/
    namespace/lifecycle/admission.go) refuses new content in a namespace being deleted: not an RBAC problem."""
    cluster.store.create("namespaces", {"metadata": {"name": "kimi-k3"}})
    cluster.controllers.namespaces.enabled = False
    cluster.store.delete("namespaces", "kimi-k3")
    result = k3("apply", "--timeout", "20s")
    assert result.returncode == 3, result.stderr
    assert (
        "is forbidden: unable to create new content in namespace kimi-k3 because it is being terminated"
        in result.stderr
    )
    assert "hint: the namespace is still being deleted (a recent `down --purge`?)" in result.stderr
