"""The Kueue checks (k3deploy/preflight/checks_kueue.py) as pure functions of KueueFacts; the facts read from a real
Kueue are tests/realk8s/test_kueue.py."""

from __future__ import annotations

import pytest

from k3deploy.preflight.checks_kueue import group_gpus, kueue_checks, unusable
from k3deploy.preflight.facts import KueueFacts
from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from tests.preflight.test_checks_cluster import facts

KUEUE = load_profile("kimi-k3-gb300-tp16", ["kubernetes.gang_admission=kueue"])
CLIQUE = "nvidia.com/gpu.clique"
READY = KueueFacts(
    served=True,
    local_queue="k3deploy",
    local_queue_found=True,
    cluster_queue="gb300",
    cluster_queue_found=True,
    gpu_quota={"gb300": 32},
    flavor_levels={"gb300": [CLIQUE, "kubernetes.io/hostname"]},
    lws_integration=True,
)


def _statuses(kueue: KueueFacts) -> dict[str, Status]:
    return {r.name: r.status for r in kueue_checks(KUEUE, facts([], kueue=kueue))}


def test_a_usable_setup_passes_every_check_and_is_usable() -> None:
    assert group_gpus(KUEUE) == 16
    assert set(_statuses(READY).values()) == {Status.PASS}
    assert set(_statuses(READY)) == {
        "k8s.kueue.served",
        "k8s.kueue.queue",
        "k8s.kueue.topology",
        "k8s.kueue.leaderworkerset",
    }
    assert unusable(KUEUE, READY) == ""


@pytest.mark.parametrize(
    ("change", "failing", "why"),
    [
        ({"served": False}, "k8s.kueue.served", "Workload kind is not served"),
        ({"local_queue_found": False}, "k8s.kueue.queue", "no LocalQueue k3deploy"),
        ({"cluster_queue_found": False}, "k8s.kueue.queue", "points at no ClusterQueue"),
        ({"gpu_quota": {"gb300": 12}}, "k8s.kueue.topology", "16 nvidia.com/gpu of quota"),
        ({"flavor_levels": {"gb300": ["kubernetes.io/hostname"]}}, "k8s.kueue.topology", "Topology with"),
        ({"flavor_levels": {}}, "k8s.kueue.topology", "no flavor of ClusterQueue gb300"),
        ({"lws_integration": False}, "k8s.kueue.leaderworkerset", "LeaderWorkerSet integration"),
    ],
)
def test_each_missing_piece_fails_its_own_check_and_makes_kueue_unusable(
    change: dict[str, object], failing: str, why: str
) -> None:
    broken = READY.model_copy(update=change)
    statuses = _statuses(broken)
    assert statuses[failing] is Status.FAIL
    assert [name for name, status in statuses.items() if status is Status.FAIL] == [failing]
    assert why in unusable(KUEUE, broken)


def test_an_integration_that_could_not_be_tried_warns_but_leaves_kueue_usable() -> None:
    untried = READY.model_copy(update={"lws_integration": None})
    assert _statuses(untried)["k8s.kueue.leaderworkerset"] is Status.WARN
    assert unusable(KUEUE, untried) == ""


def test_no_kueue_checks_for_a_profile_that_does_not_queue_or_facts_not_read() -> None:
    assert (
        kueue_checks(load_profile("kimi-k3-gb300-tp16", ["kubernetes.gang_admission=none"]), facts([], kueue=READY))
        == []
    )
    assert kueue_checks(KUEUE, facts([])) == []


def test_with_kueue_groups_that_do_not_fit_yet_are_a_wait_not_a_failure() -> None:
    from tests.preflight.test_checks_cluster import CLIQUE_A, CLIQUE_B, by_name, gb300

    nodes = [gb300(f"a{i}", CLIQUE_A) for i in range(4)] + [gb300(f"b{i}", CLIQUE_B) for i in range(3)]
    two = ["parallel.replicas=2"]
    queued = by_name(
        facts(nodes, kueue=READY), load_profile("kimi-k3-gb300-tp16", [*two, "kubernetes.gang_admission=kueue"])
    )
    assert queued["k8s.placement"].status is Status.WARN
    assert "Kueue holds 1 group(s) whole" in queued["k8s.placement"].detail
    alone = by_name(facts(nodes), load_profile("kimi-k3-gb300-tp16", [*two, "kubernetes.gang_admission=none"]))
    assert alone["k8s.placement"].status is Status.FAIL
    none_fit = [gb300(f"a{i}", CLIQUE_A) for i in range(3)]
    nothing = by_name(
        facts(none_fit, kueue=READY), load_profile("kimi-k3-gb300-tp16", [*two, "kubernetes.gang_admission=kueue"])
    )
    assert nothing["k8s.placement"].status is Status.FAIL
