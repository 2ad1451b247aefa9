"""parallel.replicas against the cluster: `preflight --cluster` and `plan --cluster` say how many groups fit and,
when fewer than asked, name every clique and what it lacks. Pure checks here; the real CLI on a cluster with three
cliques, one of them half taken, runs on the real plane (tests/realk8s/preflight/test_replicas.py)."""

from __future__ import annotations

from k3deploy.preflight.checks_cluster import cluster_checks, eligible_hosts
from k3deploy.preflight.placement import place
from k3deploy.profile import Profile, load_profile
from k3deploy.render.manifests import rendered_objects
from k3deploy.report.model import Status
from tests.conftest import run_cli
from tests.preflight.test_checks_cluster import facts, gb300

K3 = "kimi-k3-gb300-tp16"
A, B, C = (f"c0ffee00-0000-4000-8000-00000000000{i}.{i}" for i in (1, 2, 3))


def _profile(replicas: int) -> Profile:
    return load_profile(K3, [f"parallel.replicas={replicas}"])


def _nodes(busy_in_c: int = 2) -> list:
    """Four trays in each of A, B, C; the first `busy_in_c` trays of C are taken by someone else."""
    return (
        [gb300(f"a{i}", A) for i in range(4)]
        + [gb300(f"b{i}", B) for i in range(4)]
        + [gb300(f"c{i}", C, requested=4 if i < busy_in_c else 0) for i in range(4)]
    )


def test_two_groups_fit_in_two_of_three_cliques() -> None:
    result = place(_profile(2), _nodes())
    assert result.fits and result.placed == 2
    rows = {c.clique: (len(c.trays), c.groups, len(c.used), c.free_after) for c in result.cliques}
    assert rows == {A: (4, [0], 4, 0), B: (4, [1], 4, 0), C: (2, [], 0, 2)}
    check = {r.name: r for r in cluster_checks(_profile(2), facts(_nodes()), rendered_objects(_profile(2)))}[
        "k8s.placement"
    ]
    # Clique C's 2 free trays can take a leader but never a group (no gang admission, no clique pinned).
    assert check.status is Status.WARN
    assert (check.measured, check.detail) == (
        "2 groups in 2 clique(s), room for 0 more",
        f"group 0 in clique {A}; group 1 in clique {B}; but clique {C} has 2 free tray(s), fewer than the 4 a group "
        "needs: with kubernetes.gang_admission none and no kubernetes.clique, a leader the scheduler puts there waits "
        "forever for its workers",
    )
    assert check.hint is not None and check.hint.startswith("set kubernetes.gang_admission kueue or volcano")


def test_three_groups_on_two_free_cliques_fail_naming_each_clique_and_what_it_lacks() -> None:
    check = {r.name: r for r in cluster_checks(_profile(3), facts(_nodes()), rendered_objects(_profile(3)))}[
        "k8s.placement"
    ]
    assert check.status is Status.FAIL
    assert check.measured == "2 of 3 groups fit"
    assert check.target == "3 groups of 4 nodes with 4 free nvidia.com/gpu in one nvidia.com/gpu.clique"
    assert check.detail == (
        f"clique {A} takes group 0 and lacks trays: 0 free tray(s), 4 short of a group of 4; "
        f"clique {B} takes group 1 and lacks trays: 0 free tray(s), 4 short of a group of 4; "
        f"clique {C} lacks trays: 2 free tray(s), 2 short of a group of 4 "
        "(c0: 0 of 4 GPUs free, needs 4; c1: 0 of 4 GPUs free, needs 4)"
    )
    assert "lower parallel.replicas to 2" in (check.hint or "")


def test_an_nvl72_clique_holds_four_groups_and_two_trays_to_spare() -> None:
    nodes = [gb300(f"r{i:02d}", A) for i in range(18)]
    four = place(_profile(4), nodes)
    assert four.fits and four.cliques[0].groups == [0, 1, 2, 3] and four.cliques[0].free_after == 2
    assert not place(_profile(5), nodes).fits


def test_the_node_preflight_hosts_are_the_trays_of_every_clique_that_holds_a_group() -> None:
    assert eligible_hosts(_profile(2), _nodes()) == [f"a{i}" for i in range(4)] + [f"b{i}" for i in range(4)]
    assert eligible_hosts(_profile(2), _nodes(busy_in_c=0)) == sorted(f"{c}{i}" for c in "abc" for i in range(4))


def test_cli_plan_cluster_needs_a_kubernetes_profile() -> None:
    done = run_cli("plan", "-p", "local-cpu", "--cluster")
    assert done.returncode == 2
    assert done.stderr.startswith("error: --cluster needs a kubernetes profile")


def test_groups_the_render_pins_to_one_clique_are_judged_in_that_clique_only() -> None:
    """`kubernetes.clique` pins every group's pods to one clique (the rendered nodeSelector). Before: placement dealt
    the groups over every clique ("group 0 in clique A; group 1 in clique B", a PASS) and `up` ended Unschedulable."""
    profile = load_profile(K3, ["parallel.replicas=2", f"kubernetes.clique={A}"])
    objects = rendered_objects(profile)
    lws = next(o for o in objects if o["kind"] == "LeaderWorkerSet")
    assert lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["nodeSelector"]["nvidia.com/gpu.clique"] == A
    check = {r.name: r for r in cluster_checks(profile, facts(_nodes(busy_in_c=4)), objects)}["k8s.placement"]
    assert check.status is Status.FAIL
    assert check.measured == "1 of 2 groups fit"
    assert check.detail.startswith(
        f"clique {A} takes group 0 and lacks trays: 0 free tray(s), 4 short of a group of 4; "
        f"clique {B} lacks trays: 0 free tray(s), 4 short of a group of 4"
    ), check.detail
    assert f"b0: the serving pods are pinned to nvidia.com/gpu.clique={A} (kubernetes.clique)" in check.detail
    assert eligible_hosts(profile, _nodes()) == ["a0", "a1", "a2", "a3"]  # the node-preflight Job's hosts too
    # one group pinned there fits
    one = load_profile(K3, [f"kubernetes.clique={A}"])
    fits = {r.name: r for r in cluster_checks(one, facts(_nodes()), rendered_objects(one))}["k8s.placement"]
    assert fits.status is Status.PASS and fits.detail == f"the group fits in clique {A} on a0, a1, a2, a3"
