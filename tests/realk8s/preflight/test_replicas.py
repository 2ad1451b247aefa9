"""`preflight --cluster` and `plan --cluster` with N groups on the real plane: three cliques of four GB300 trays,
two trays of the third held by someone else's running pods (real pods KWOK runs, GPUs counted from the real API)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import run_cli
from tests.preflight.test_checks_pinning import PINNED
from tests.realk8s.client import wait_until
from tests.realk8s.cluster_fixtures import NO_DRA, PROFILE, Deployment
from tests.realk8s.objects import clique_ids

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
A, B, C = clique_ids(3)
HELD = ("gb300-09", "gb300-10")


def _hold_gpus(deploy: Deployment) -> None:
    """Running pods of someone else's holding all 4 GPUs of the first two trays of clique C."""
    deploy.create_namespace()
    wait_until("the default ServiceAccount", lambda: deploy.get("serviceaccounts", "default"), 60)
    for node in HELD:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"training-{node}"},
            "spec": {
                "nodeName": node,
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [
                    {
                        "name": "train",
                        "image": "nvcr.io/nvidia/pytorch:25.10-py3",
                        "resources": {"limits": {"nvidia.com/gpu": "4"}},
                    }
                ],
            },
        }
        deploy.plane.api.create(deploy.path("pods"), pod)
    wait_until(
        "the training pods to run",
        lambda: all(
            (deploy.get("pods", f"training-{n}") or {}).get("status", {}).get("phase") == "Running" for n in HELD
        ),
        60,
    )


def _cli(deploy: Deployment, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        command,
        "-p",
        PROFILE,
        "--cluster",
        "--kubeconfig",
        str(deploy.plane.admin_kubeconfig),
        "-n",
        f"{deploy.namespace}-serving",
        *NO_DRA,
        *args,
    )


def _sets(*sets: str) -> list[str]:
    return [arg for s in [*PINNED, *sets] for arg in ("--set", s)]


def test_cli_preflight_and_plan_place_groups_per_clique(deploy: Deployment) -> None:
    _hold_gpus(deploy)
    done = _cli(deploy, "preflight", "-o", "json", *_sets("parallel.replicas=3"))
    assert done.returncode == 1, done.stderr
    placement = {c["name"]: c for c in json.loads(done.stdout)["checks"]}["k8s.placement"]
    assert (placement["status"], placement["measured"]) == ("fail", "2 of 3 groups fit")
    for clique in (A, B, C):
        assert f"clique {clique}" in placement["detail"]
    assert f"clique {C} lacks trays: 2 free tray(s), 2 short of a group of 4" in placement["detail"]
    assert f"{HELD[0]}: 0 of 4 GPUs free, needs 4" in placement["detail"]
    assert "k8s.placement" in done.stderr.splitlines()[-2]

    two = _cli(deploy, "preflight", "-o", "json", *_sets("parallel.replicas=2"))
    checks = {c["name"]: c for c in json.loads(two.stdout)["checks"]}
    # Clique C's 2 free trays can take a leader, never a group.
    assert checks["k8s.placement"]["status"] == "warn", checks["k8s.placement"]
    assert f"but clique {C} has 2 free tray(s), fewer than the 4 a group needs" in checks["k8s.placement"]["detail"]

    table = _cli(deploy, "plan", "--set", "parallel.replicas=2")
    assert table.returncode == 0, table.stderr
    prefix = A.split(".")[0]
    rows = {line.split()[0]: line.split()[1:5] for line in table.stdout.splitlines() if line.strip().startswith(prefix)}
    assert rows == {A: ["4", "0", "4", "0"], B: ["4", "1", "4", "0"], C: ["2", "-", "0", "2"]}
    assert "placement: 2 group(s) of 4 trays, each in one clique - fits" in table.stdout
    assert "a new model revision needs room for two" in table.stderr
    # The trap preflight WARNs of, beside the cliques it is about.
    assert f"warning: clique {C} has 2 free tray(s), fewer than the 4 a group needs: with" in table.stderr
    assert "hint: set kubernetes.gang_admission kueue or volcano" in table.stderr

    as_json = _cli(deploy, "plan", "-o", "json", "--set", "parallel.replicas=3")
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert (report["placement"]["placed"], report["placement"]["fits"]) == (2, False)
    assert report["placement"]["traps"] == [f"clique {C} has 2 free tray(s), fewer than the 4 a group needs"]
    assert [c["clique"] for c in report["placement"]["cliques"]] == [A, B, C]
    assert "error: only 2 of 3 groups fit on the cluster's cliques" in as_json.stderr
