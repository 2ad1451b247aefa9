"""The trap cliques of a placement (preflight/placement.py `traps`, `trap_hint`), which preflight's k8s.placement
WARNs of and `plan --cluster` prints beside its table."""

from __future__ import annotations

from k3deploy.preflight.placement import place, trap_hint, traps
from k3deploy.profile import load_profile
from tests.preflight.test_checks_cluster import CLIQUE_A, CLIQUE_B, gb300

K3 = "kimi-k3-gb300-tp16"


def _nodes(a: int, b: int) -> list:
    return [gb300(f"a{i}", CLIQUE_A) for i in range(a)] + [gb300(f"b{i}", CLIQUE_B) for i in range(b)]


def test_a_clique_with_some_free_trays_but_not_a_group_is_a_trap() -> None:
    profile = load_profile(K3)
    assert traps(profile, place(profile, _nodes(4, 3))) == [
        f"clique {CLIQUE_B} has 3 free tray(s), fewer than the 4 a group needs"
    ]
    assert traps(profile, place(profile, _nodes(4, 4))) == []
    assert traps(profile, place(profile, _nodes(4, 0))) == []


def test_one_group_is_pinned_where_it_fits_several_are_admitted_whole() -> None:
    one = load_profile(K3)
    assert trap_hint(place(one, _nodes(4, 3))).startswith(
        f"set kubernetes.clique={CLIQUE_A} (the group is pinned where it fits), or kubernetes.gang_admission"
    )
    # Two groups cannot share one clique pin: the hint starts at gang admission.
    two = load_profile(K3, ["parallel.replicas=2"])
    result = place(two, _nodes(8, 2))
    assert traps(two, result) == [f"clique {CLIQUE_B} has 2 free tray(s), fewer than the 4 a group needs"]
    assert trap_hint(result).startswith("set kubernetes.gang_admission kueue or volcano")


def test_without_an_nvlink_domain_there_is_no_clique_to_be_trapped_in() -> None:
    # Three trays in all, counted as one clique of any trays: short of a group, but no clique a leader could pick.
    profile = load_profile(K3, ["hardware.nvlink_domain=false"])
    result = place(profile, _nodes(2, 1))
    assert [len(c.trays) for c in result.cliques] == [3]
    assert traps(profile, result) == []
