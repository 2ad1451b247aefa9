"""`k3deploy guard` on the real plane: the GB300 set applied, the real LWS controller and scheduler, KWOK trays.

A fault condition (NVSentinel's GpuNvlinkWatch) on a tray under group 0: `guard --once` writes the evidence bundle,
cordons the tray with its annotations, and the group's pods, deleted, are recreated by the real LWS controller and
placed by the real scheduler on healthy trays of one clique. The rate limit and the last-clique rule hold the fault
(exit 1, an Event, nothing changed); a condition that clears before guard reads again leads to no action;
`--dry-run` changes nothing.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, cli_env
from tests.realk8s.client import wait_until
from tests.realk8s.cluster_fixtures import NO_DRA, PROFILE, Deployment

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(900)]
LWS = "kimi-k3-gb300-tp16"
CLIQUE = "nvidia.com/gpu.clique"
FAULT = "GpuNvlinkWatch"
#: Settings of every guard run here: no leader readiness signal (KWOK's pods are Ready throughout anyway), and no
#: re-gate of the leaders `apply` left out of traffic (its own test: test_traffic_gate.py).
GUARD = ("--set", "guard.leader_health=false", "--set", "smoke.gate_traffic=false")
ANNOTATIONS = ("k3deploy/guard-cordoned-at", "k3deploy/guard-reason", "k3deploy/guard-cordoned-by")


def group_pods(deploy: Deployment, group: str = "0") -> dict[str, dict]:
    """Name -> pod of group `group` of the LWS (not being deleted)."""
    return {
        p["metadata"]["name"]: p
        for p in deploy.pods()
        if p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/name") == LWS
        and p["metadata"]["labels"].get("leaderworkerset.sigs.k8s.io/group-index") == group
        and not p["metadata"].get("deletionTimestamp")  # a deleted pod the node has not finished yet keeps its uid
    }


def node(deploy: Deployment, name: str) -> dict:
    return dict(deploy.plane.api.get(f"/api/v1/nodes/{name}"))


def set_fault(deploy: Deployment, tray: str) -> None:
    """NVSentinel's way: a node condition of the fault's type, status True (removed at the test's end)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": FAULT,
        "status": "True",
        "reason": "GpuNvlinkWatchIsNotHealthy",
        "message": "GPU 2 NVLink 7 down",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    deploy.patch(f"/api/v1/nodes/{tray}/status", {"status": {"conditions": [condition]}}, kind="strategic-merge")
    deploy.on_teardown(lambda: clear_fault(deploy, tray))


def clear_fault(deploy: Deployment, tray: str) -> None:
    patch = {"status": {"conditions": [{"type": FAULT, "$patch": "delete"}]}}
    deploy.patch(f"/api/v1/nodes/{tray}/status", patch, kind="strategic-merge")


def uncordon_after(deploy: Deployment, tray: str) -> None:
    """Put the tray back as it was at the test's end: guard never uncordons, the test does."""
    patch = {"metadata": {"annotations": dict.fromkeys(ANNOTATIONS)}, "spec": {"unschedulable": None}}
    deploy.on_teardown(lambda: deploy.patch(f"/api/v1/nodes/{tray}", patch))


def guard_events(deploy: Deployment) -> list[dict]:
    return [
        e
        for e in deploy.list("events")
        if (e.get("source") or {}).get("component") == "k3deploy-guard"
        and e["involvedObject"]["kind"] == "LeaderWorkerSet"
    ]


def applied(deploy: Deployment, *sets: str) -> dict[str, dict]:
    """Apply the set (with `sets`) and give its containers a log (current and previous run); group 0's pods."""
    done = deploy.k3("apply", "--timeout", "240s", *sets)
    assert done.returncode == 0, done.stderr
    deploy.logs(["vllm"], ["INFO engine step 41", "ERROR NCCL watchdog: NVLink error"], previous=["INFO start"])
    pods = group_pods(deploy)
    assert len(pods) == 4
    return pods


def describe(deploy: Deployment) -> str:
    """Every pod of the namespace: name, phase, node and clique, and why it is not scheduled (for a failure)."""
    rows = []
    for p in deploy.list("pods"):
        where = p["spec"].get("nodeName")
        clique = node(deploy, where)["metadata"]["labels"].get(CLIQUE) if where else None
        why = [c.get("message") for c in p["status"].get("conditions") or [] if c.get("status") == "False"]
        rows.append(f"{p['metadata']['name']} {p['status'].get('phase')} {where} {clique} {why}")
    return "; ".join(rows)


def unchanged(deploy: Deployment, before: dict[str, dict], tray: str) -> None:
    """Group 0's pods are the same ones, and the tray is not cordoned."""
    after = group_pods(deploy)
    assert {n: p["metadata"]["uid"] for n, p in after.items()} == {n: p["metadata"]["uid"] for n, p in before.items()}
    assert not node(deploy, tray)["spec"].get("unschedulable")


def test_guard_keeps_the_evidence_cordons_the_sick_tray_and_the_group_lands_on_healthy_trays(
    deploy: Deployment, tmp_path: Path
) -> None:
    before = applied(deploy)
    leader = before[LWS + "-0"]
    sick = next(p["spec"]["nodeName"] for n, p in before.items() if n != LWS + "-0")
    set_fault(deploy, sick)
    uncordon_after(deploy, sick)
    evidence = tmp_path / "evidence"

    done = deploy.k3(
        "guard", "--once", "--evidence-dir", str(evidence), "-o", "json", *GUARD, "--set", "guard.confirm_after_s=0"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [decision] = report["decisions"]
    assert (decision["group"], decision["verdict"], decision["reason"]) == (0, "act", "TrayUnhealthy")
    assert decision["cordon"] == [sick]
    assert report["cordoned"] == [sick]
    assert sorted(report["deleted_pods"]) == sorted(before)

    # The evidence bundle: one new file, named by group and time, with every rank's logs, events, conditions.
    [bundle_file] = evidence.iterdir()
    assert bundle_file.name.startswith(f"{LWS}-group-0-") and bundle_file.suffix == ".json"
    assert report["evidence"] == [str(bundle_file)]
    bundle = json.loads(bundle_file.read_text())
    assert (bundle["namespace"], bundle["group"]) == (deploy.namespace, 0)
    assert sorted(p["name"] for p in bundle["pods"]) == sorted(before)
    for pod in bundle["pods"]:
        assert "ERROR NCCL watchdog: NVLink error" in pod["logs"]["vllm"]["current"], pod["name"]
        assert "INFO start" in pod["logs"]["vllm"]["previous"], pod["name"]
    assert any(e["involvedObject"]["name"] == leader["metadata"]["name"] for e in bundle["events"])
    [sick_node] = [n for n in bundle["nodes"] if n["name"] == sick]
    assert {"type": FAULT, "status": "True"}.items() <= next(
        c for c in sick_node["conditions"] if c["type"] == FAULT
    ).items()
    assert {n["name"] for n in bundle["nodes"]} == {p["spec"]["nodeName"] for p in before.values()}

    # The tray is cordoned, with why and by whom.
    live = node(deploy, sick)
    assert live["spec"]["unschedulable"] is True
    notes = live["metadata"]["annotations"]
    assert notes["k3deploy/guard-cordoned-by"] == f"k3deploy guard of {deploy.namespace}/{LWS}"
    assert notes["k3deploy/guard-reason"].startswith(f"group 0: {FAULT}: GpuNvlinkWatchIsNotHealthy")

    # The real LWS controller recreates the group; the real scheduler places it on healthy trays of one clique. It
    # places a group's pods one at a time (gang_admission none): a leader that lands in the clique the sick tray was
    # cordoned in strands the group there, and guard's next pass deletes it again (GroupStranded), as its loop would.
    stranded_passes = 0

    def recreated() -> dict[str, dict] | None:
        nonlocal stranded_passes
        pods = group_pods(deploy)
        fresh = len(pods) == 4 and not {p["metadata"]["uid"] for p in pods.values()} & {
            p["metadata"]["uid"] for p in before.values()
        }
        if fresh and all(p["status"].get("phase") == "Running" for p in pods.values()):
            return pods
        again = deploy.k3(
            "guard", "--once", "--evidence-dir", str(evidence), "-o", "json", *GUARD, "--set", "guard.confirm_after_s=0"
        )
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["cordoned"] == []
        stranded_passes += bool(json.loads(again.stdout)["deleted_pods"])
        return None

    try:
        after = wait_until("group 0 recreated and Running", recreated, 400, interval_s=2.0)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}: {describe(deploy)}") from None
    trays = {p["spec"]["nodeName"] for p in after.values()}
    assert sick not in trays and len(trays) == 4
    assert len({node(deploy, t)["metadata"]["labels"][CLIQUE] for t in trays}) == 1
    said = guard_events(deploy)
    assert sorted(e["reason"] for e in said) == ["GroupStranded"] * stranded_passes + ["TrayUnhealthy"]
    [moved] = [e for e in said if e["reason"] == "TrayUnhealthy"]
    assert moved["type"] == "Warning" and sick in moved["message"] and bundle_file.name in moved["message"]
    print(f"guard: group 0 stranded {stranded_passes} time(s) before it landed on {sorted(trays)}")


def test_dry_run_rate_limit_last_clique_and_a_cleared_fault_change_nothing(deploy: Deployment, tmp_path: Path) -> None:
    before = applied(deploy)
    sick = next(p["spec"]["nodeName"] for n, p in before.items() if n != LWS + "-0")
    set_fault(deploy, sick)
    uncordon_after(deploy, sick)
    evidence = tmp_path / "evidence"
    args = ("--once", "--evidence-dir", str(evidence), *GUARD, "--set", "guard.confirm_after_s=0")

    # --dry-run: says what it would do, writes and changes nothing.
    dry = deploy.k3("guard", *args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert (
        dry.stdout.strip() == f"dry run: group 0: {sick}: {FAULT}: GpuNvlinkWatchIsNotHealthy: GPU 2 NVLink 7 "
        f"down; cordon {sick} and delete its pods"
    )
    assert not evidence.exists() and guard_events(deploy) == []
    unchanged(deploy, before, sick)

    # The rate limit: none allowed this hour.
    limited = deploy.k3("guard", *args, "--set", "guard.max_cordons_per_hour=0")
    assert limited.returncode == 1, limited.stderr
    assert "error: guard holds 1 fault(s) it cannot act on" in limited.stderr
    assert [e["reason"] for e in guard_events(deploy)] == ["RateLimited"]
    unchanged(deploy, before, sick)

    # The last clique with room: every other clique's trays cordoned for the test, the group's own clique short
    # of one once the sick tray goes.
    own = node(deploy, sick)["metadata"]["labels"][CLIQUE]
    others = [
        n["metadata"]["name"]
        for n in deploy.plane.api.get("/api/v1/nodes")["items"]
        if (n["metadata"].get("labels") or {}).get(CLIQUE) not in (None, own)
    ]
    deploy.cordon(*others)
    held = deploy.k3("guard", *args)
    assert held.returncode == 1, held.stderr
    assert "waiting: no clique would keep room for a group of 4 trays" in held.stdout
    assert sorted(e["reason"] for e in guard_events(deploy)) == ["NoCliqueWithRoom", "RateLimited"]
    unchanged(deploy, before, sick)
    assert not evidence.exists()
    for name in others:
        assert "k3deploy/guard-cordoned-at" not in (node(deploy, name)["metadata"].get("annotations") or {})

    # A fault that clears before guard reads again: no action.
    for name in others:
        deploy.patch(f"/api/v1/nodes/{name}", {"spec": {"unschedulable": None}})
    assert deploy.plane.admin_kubeconfig is not None
    argv = [
        "guard",
        "-p",
        PROFILE,
        "--kubeconfig",
        str(deploy.plane.admin_kubeconfig),
        "-n",
        deploy.namespace,
        *NO_DRA,
        "--once",
        "--evidence-dir",
        str(evidence),
        *GUARD,
        "--set",
        "guard.confirm_after_s=60",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "k3deploy", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        cwd=REPO_ROOT,
    )
    try:
        assert proc.stderr is not None
        # What guard says before it reads again: the fault it saw, then that it reads again (warnings may come first).
        seen = []
        while len(seen) < 50 and "guard: reading again in 60s before acting" not in seen:
            seen.append(proc.stderr.readline().strip())
        assert seen[-1] == "guard: reading again in 60s before acting", seen
        assert seen[-2].startswith(f"guard: seen: group 0: {sick}: {FAULT}"), seen
        clear_fault(deploy, sick)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "guard: no action: the fault cleared before guard acted" in err
    assert out.strip() == "no sick tray under a serving group"
    unchanged(deploy, before, sick)
    assert not evidence.exists()
