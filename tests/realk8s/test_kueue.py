"""Gang and topology admission on a real Kueue (tests/realk8s/kueue.py): a group is admitted whole inside one NVLink
clique or not at all, `up` says which group Kueue holds and why, `status` shows each group's Workload, and
`gang_admission: auto` picks Kueue where it is set up and falls back with a warning where it is not.

The plane here is this module's own (8 GB300 trays in 2 cliques of 4, Kueue with the objects the Kueue page,
docs/guide/kueue.md, creates): Kueue's pod webhook sees every pod outside kube-system, which the session's shared
plane keeps without.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.realk8s import kueue
from tests.realk8s.binaries import binaries_or_skip
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.cluster_fixtures import NO_DRA, PROFILE, UP
from tests.realk8s.plane import Plane, PlaneOptions

LWS = PROFILE
GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"


@pytest.fixture(scope="module")
def kueue_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    """A plane with a real Kueue and its operator objects; its admin kubeconfig written."""
    binaries = binaries_or_skip()
    build = kueue.kueue_or_skip()
    directory = tmp_path_factory.mktemp("kueue-plane")
    plane = Plane(binaries, PlaneOptions(gb300_nodes=8, cliques=2, cpu_nodes=1, workdir=directory, kueue=build))
    with plane:
        kueue.apply_objects(plane.api, kueue.operator_objects(gpus=32))
        plane.admin_kubeconfig = plane.kubeconfig(Path(directory) / "admin.kubeconfig")
        yield plane


def _k3(plane: Plane, command: str, *args: str, timeout: float = 300) -> tuple[int, str, str]:
    done = run_cli(
        command,
        "-p",
        PROFILE,
        "--kubeconfig",
        str(plane.admin_kubeconfig),
        "-n",
        kueue.NAMESPACE,
        *NO_DRA,
        *args,
        timeout=timeout,
    )
    return done.returncode, done.stdout, done.stderr


def _pods(plane: Plane) -> list[dict]:
    items = plane.api.get(resource_path("v1", "pods", kueue.NAMESPACE))["items"]
    return [p for p in items if p["metadata"].get("labels", {}).get("leaderworkerset.sigs.k8s.io/name") == LWS]


def _cliques(plane: Plane) -> dict[str, str]:
    nodes = plane.api.get("/api/v1/nodes")["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"].get(kueue.CLIQUE_LABEL, "") for n in nodes}


def _group(pods: list[dict], index: str) -> list[dict]:
    return [p for p in pods if p["metadata"]["labels"].get(GROUP_LABEL) == index]


def _set_unschedulable(plane: Plane, node: str, value: bool | None) -> None:
    response = plane.api.request(
        "PATCH",
        f"/api/v1/nodes/{node}",
        content=json.dumps({"spec": {"unschedulable": value}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text


def test_kueue_admits_one_group_whole_in_the_clique_with_room_and_holds_the_other_whole(kueue_plane: Plane) -> None:
    plane = kueue_plane
    cliques = _cliques(plane)
    second = sorted(n for n, c in cliques.items() if c.endswith(".2"))
    # One tray of the second clique cordoned: only the first has the 4 free trays a group needs.
    _set_unschedulable(plane, second[0], True)
    try:
        code, out, err = _k3(
            plane,
            "up",
            "--set",
            "parallel.replicas=2",
            "--set",
            "production=false",
            "--skip-smoke",
            "--no-rollback",
            *UP,
            "--timeout",
            "60s",
        )
        assert code != 0, out + err
        assert "gang admission auto: kueue (Kueue admits each group whole through LocalQueue k3deploy)" in err
        assert "kubectl get workloads" in err
        lws = plane.api.get(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", kueue.NAMESPACE, LWS))
        assert lws["metadata"]["annotations"]["k3deploy/gang-admission"] == "kueue"
        pods = _pods(plane)
        # Which group Kueue takes first is its choice; the other must be held whole.
        bound = {p["metadata"]["labels"][GROUP_LABEL] for p in pods if p["spec"].get("nodeName")}
        assert len(bound) == 1, bound
        (taken,) = bound
        held_index = "1" if taken == "0" else "0"
        assert f"group {held_index}: queued by Kueue" in err, err
        admitted, held = _group(pods, taken), _group(pods, held_index)
        first_clique = next(c for c in cliques.values() if c.endswith(".1"))
        assert len(admitted) == 4 and {cliques[p["spec"]["nodeName"]] for p in admitted} == {first_clique}
        # The held group holds nothing: no pod of it is bound to a tray, each waits behind Kueue's gates.
        assert held and all(not p["spec"].get("nodeName") for p in held)
        assert all(p["spec"].get("schedulingGates") for p in held)
        code, out, err = _k3(plane, "status", "-o", "json")
        admission = {g["group"]: g for g in json.loads(out)["admission"]}
        assert admission[int(taken)]["admitted"] and not admission[int(held_index)]["admitted"], admission
    finally:
        _set_unschedulable(plane, second[0], None)

    def second_group_placed() -> list[dict] | None:
        group = [p for p in _group(_pods(plane), held_index) if p["spec"].get("nodeName")]
        return group if len(group) == 4 else None

    # With the second clique free again, Kueue admits the held group whole there.
    placed = wait_until("the second group admitted and bound", second_group_placed, 120)
    assert {cliques[p["spec"]["nodeName"]] for p in placed} == {cliques[second[0]]}
    code, out, err = _k3(plane, "down", "--yes")
    assert code == 0, out + err


def test_auto_without_kueue_falls_back_to_none(realk8s: Plane) -> None:
    """The session's plane has no Kueue: `apply` decides auto as none, says nothing of it (preflight's placement check
    WARNs where pod-by-pod scheduling can split a group), and records none on the LeaderWorkerSet."""
    namespace = "kueue-auto-none"
    args = ("-p", PROFILE, "--kubeconfig", str(realk8s.admin_kubeconfig), "-n", namespace, *NO_DRA)
    done = run_cli("apply", *args, "--set", "production=false", "--no-wait", timeout=300)
    try:
        assert done.returncode == 0, done.stderr
        assert "gang admission auto" not in done.stderr
        lws = realk8s.api.get(resource_path("leaderworkerset.x-k8s.io/v1", "leaderworkersets", namespace, LWS))
        assert lws["metadata"]["annotations"]["k3deploy/gang-admission"] == "none"
        assert "kueue.x-k8s.io/queue-name" not in lws["metadata"]["labels"]
    finally:
        gone = run_cli("down", *args, "--yes", timeout=300)
        assert gone.returncode == 0, gone.stderr


def test_only_the_hooks_the_manager_serves_are_registered() -> None:
    """The built release's webhook manifest narrowed to Kueue's own kinds and the LeaderWorkerSet and pod integrations:
    a Job hook (failurePolicy Fail) the manager does not serve would refuse every Job on the plane."""
    build = kueue.kueue_or_skip()
    hooks = kueue.webhooks(build.directory / "webhook" / "manifests.yaml", "https://127.0.0.1:9443", b"ca")
    paths = {h["clientConfig"]["url"].removeprefix("https://127.0.0.1:9443") for c in hooks for h in c["webhooks"]}
    assert "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset" in paths
    assert "/mutate--v1-pod" in paths and "/validate--v1-pod" in paths
    assert "/mutate-kueue-x-k8s-io-v1beta2-workload" in paths
    assert not any("batch-v1-job" in p or "jobset" in p or "ray-io" in p for p in paths), paths
    pod_hooks = [h for c in hooks for h in c["webhooks"] if h["name"] in ("mpod.kb.io", "vpod.kb.io")]
    assert all(
        h["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "kueue-system"] for h in pod_hooks
    )
