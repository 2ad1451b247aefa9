"""The guard's decisions (k3deploy/fault_guard/decide.py): every branch of decide and confirm."""

from __future__ import annotations

import dataclasses

from k3deploy.fault_guard.decide import (
    REASON_LEADER,
    REASON_NO_ROOM,
    REASON_RATE,
    REASON_STRANDED,
    REASON_TRAY,
    Group,
    Snapshot,
    Tray,
    confirm,
    decide,
    recent_cordons,
    room_by_clique,
    stranded_in,
    unhealthy_trays,
)

NOW = 1_000_000.0
SICK = ("GpuNvlinkWatch: NvLink down",)


def cluster(cliques: int = 3, per: int = 4) -> dict[str, Tray]:
    """`cliques` cliques a..c of `per` healthy trays each, named a0..a3, b0.."""
    return {f"{c}{i}": Tray(f"{c}{i}", c) for c in "abcdefgh"[:cliques] for i in range(per)}


def snap(trays: dict[str, Tray], groups: tuple[Group, ...] | None = None, size: int = 4) -> Snapshot:
    groups = groups if groups is not None else (Group(0, ("p0", "p1", "p2", "p3"), ("a0", "a1", "a2", "a3")),)
    return Snapshot(trays=trays, groups=groups, group_size=size, now=NOW)


def sick(trays: dict[str, Tray], name: str, **kw: object) -> dict[str, Tray]:
    return {**trays, name: dataclasses.replace(trays[name], faults=SICK, **kw)}  # type: ignore[arg-type]


def test_a_healthy_release_leads_to_no_decision() -> None:
    assert decide(snap(cluster()), 2) == []


def test_a_sick_tray_under_a_group_cordons_it_and_restarts_the_group() -> None:
    [d] = decide(snap(sick(cluster(), "a1")), 2)
    assert (d.group, d.verdict, d.reason, d.cordon) == (0, "act", REASON_TRAY, ("a1",))
    assert d.sick == {"a1": SICK}
    assert d.describe() == "group 0: a1: GpuNvlinkWatch: NvLink down; cordon a1 and delete its pods"


def test_a_sick_tray_under_no_group_is_not_guards_business() -> None:
    assert decide(snap(sick(cluster(), "b2")), 2) == []


def test_a_tray_already_cordoned_is_not_cordoned_again_but_the_group_still_moves() -> None:
    [d] = decide(snap(sick(cluster(), "a1", cordoned=True)), 0)
    assert (d.verdict, d.cordon) == ("act", ())  # no cordon: the rate limit of 0 does not hold it back


def test_the_rate_limit_counts_guards_cordons_of_the_last_hour() -> None:
    trays = cluster()
    trays["c0"] = dataclasses.replace(trays["c0"], cordoned=True, guard_cordoned_at=NOW - 60)
    trays["c1"] = dataclasses.replace(trays["c1"], cordoned=True, guard_cordoned_at=NOW - 3601)
    assert recent_cordons(trays.values(), NOW) == 1
    [d] = decide(snap(sick(trays, "a1")), 1)
    assert (d.verdict, d.reason, d.cordon) == ("wait", REASON_RATE, ())
    assert "max_cordons_per_hour is 1 and 1 tray(s)" in (d.why_waiting or "")
    [d] = decide(snap(sick(trays, "a1")), 2)
    assert d.verdict == "act"


def test_the_rate_limit_counts_what_this_pass_plans() -> None:
    groups = (
        Group(0, ("p0",), ("a0", "a1", "a2", "a3")),
        Group(1, ("q0",), ("b0", "b1", "b2", "b3")),
    )
    trays = sick(sick(cluster(4), "a0"), "b0")
    first, second = decide(snap(trays, groups), 1)
    assert (first.group, first.verdict) == (0, "act")
    assert (second.group, second.verdict, second.reason) == (1, "wait", REASON_RATE)


def test_never_the_last_clique_with_room_for_the_group() -> None:
    trays = cluster(2)
    # Clique b has a tray taken by another workload: once a1 is cordoned no clique has 4 free trays.
    trays["b3"] = dataclasses.replace(trays["b3"], taken_by_other=True)
    [d] = decide(snap(sick(trays, "a1")), 5)
    assert (d.verdict, d.reason, d.cordon) == ("wait", REASON_NO_ROOM, ())
    assert d.why_waiting == "no clique would keep room for a group of 4 trays (free trays: a 3, b 3)"
    assert d.describe().startswith("group 0: a1: GpuNvlinkWatch: NvLink down; waiting: no clique")


def test_room_counts_the_groups_own_healthy_trays_and_not_other_groups_or_sick_or_cordoned_ones() -> None:
    trays = cluster(2)
    trays["b0"] = dataclasses.replace(trays["b0"], cordoned=True)
    trays["b1"] = dataclasses.replace(trays["b1"], faults=SICK)
    groups = (Group(0, ("p",), ("a0", "a1", "a2", "a3")), Group(1, ("q",), ("b2",)))
    assert room_by_clique(snap(trays, groups), groups[0], ["a1"]) == {"a": 3, "b": 1}
    assert room_by_clique(snap(trays, groups), groups[1], []) == {"a": 0, "b": 2}


def test_a_group_of_one_clique_with_a_spare_tray_moves_within_it() -> None:
    trays = cluster(1, per=5)
    [d] = decide(snap(sick(trays, "a1")), 1)
    assert d.verdict == "act"


def test_a_failing_leader_restarts_the_group_with_nothing_to_cordon() -> None:
    groups = (Group(0, ("p0",), ("a0", "a1", "a2", "a3"), leader_unhealthy=True),)
    [d] = decide(snap(cluster(), groups), 0)
    assert (d.verdict, d.reason, d.cordon, d.sick) == ("act", REASON_LEADER, (), {})
    assert d.describe() == "group 0: its leader's /health fails while every pod is started; delete its pods"


def test_confirm_keeps_what_both_reads_show() -> None:
    first = decide(snap(sick(cluster(), "a1")), 2)
    assert confirm(first, decide(snap(sick(cluster(), "a1")), 2)) == first


def test_confirm_drops_a_fault_that_cleared_before_the_action() -> None:
    first = decide(snap(sick(cluster(), "a1")), 2)
    assert confirm(first, decide(snap(cluster()), 2)) == []


def test_confirm_drops_a_fault_seen_only_by_the_second_read() -> None:
    first = decide(snap(sick(cluster(), "a1")), 2)
    # a1 cleared, a2 turned sick in between: a2 has been seen once only.
    assert confirm(first, decide(snap(sick(cluster(), "a2")), 2)) == []
    assert confirm([], decide(snap(sick(cluster(), "a2")), 2)) == []


def test_confirm_cordons_only_trays_sick_in_both_reads() -> None:
    first = decide(snap(sick(cluster(), "a1")), 5)
    [d] = confirm(first, decide(snap(sick(sick(cluster(), "a1"), "a2")), 5))
    assert (d.verdict, d.cordon, list(d.sick)) == ("act", ("a1",), ["a1"])


def test_confirm_keeps_a_leader_restart_only_when_both_reads_saw_it() -> None:
    bad = (Group(0, ("p0",), ("a0", "a1", "a2", "a3"), leader_unhealthy=True),)
    first = decide(snap(cluster(), bad), 0)
    [d] = confirm(first, decide(snap(cluster(), bad), 0))
    assert (d.reason, d.leader_unhealthy) == (REASON_LEADER, True)
    assert confirm(first, decide(snap(cluster()), 0)) == []


def test_confirm_lets_a_wait_of_the_second_read_stand() -> None:
    first = decide(snap(sick(cluster(), "a1")), 1)
    trays = sick(cluster(), "a1")
    trays["c0"] = dataclasses.replace(trays["c0"], guard_cordoned_at=NOW - 5)
    [d] = confirm(first, decide(snap(trays), 1))
    assert (d.verdict, d.reason) == ("wait", REASON_RATE)


def test_unhealthy_trays_counts_sick_trays_under_the_groups_only() -> None:
    trays = sick(sick(cluster(), "a1"), "c3")
    assert unhealthy_trays(snap(trays)) == 1


def test_a_group_stranded_in_a_clique_too_small_for_it_is_deleted_again_to_land_elsewhere() -> None:
    trays = cluster()
    trays["a3"] = dataclasses.replace(trays["a3"], cordoned=True, guard_cordoned_at=NOW - 30)
    stuck = (Group(0, ("p0", "p1", "p2", "p3"), ("a0", "a1", "a2"), unschedulable=True),)
    assert stranded_in(snap(trays, stuck), stuck[0]) == "a"
    [d] = decide(snap(trays, stuck), 0)
    assert (d.verdict, d.reason, d.cordon, d.stranded) == ("act", REASON_STRANDED, (), "a")
    assert d.describe() == "group 0: stranded in clique a, which has no room for the whole group; delete its pods"
    assert confirm([d], decide(snap(trays, stuck), 0)) == [d]
    # Placed again and scheduled: nothing more to do.
    assert confirm([d], decide(snap(trays, (dataclasses.replace(stuck[0], unschedulable=False),)), 0)) == []


def test_a_group_waiting_in_a_clique_with_room_is_not_stranded() -> None:
    waiting = Group(0, ("p0", "p1"), ("a0",), unschedulable=True)
    assert stranded_in(snap(cluster(), (waiting,)), waiting) is None
    assert decide(snap(cluster(), (waiting,)), 0) == []
    # Nothing placed yet, or placed across cliques: no clique to call too small.
    assert (
        stranded_in(snap(cluster(), (Group(0, ("p0",), (), unschedulable=True),)), Group(0, ("p0",), (), True)) is None
    )


def test_a_stranded_group_with_nowhere_else_to_go_waits() -> None:
    trays = cluster(1)
    trays["a3"] = dataclasses.replace(trays["a3"], cordoned=True)
    stuck = (Group(0, ("p0",), ("a0", "a1", "a2"), unschedulable=True),)
    [d] = decide(snap(trays, stuck), 0)
    assert (d.verdict, d.reason, d.stranded) == ("wait", REASON_NO_ROOM, "a")
