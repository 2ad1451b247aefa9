"""Boundaries of the guard's decisions (k3deploy/fault_guard/decide.py): the hour's edge, several groups in one pass,
and what confirm keeps of each read."""

from __future__ import annotations

import dataclasses

from k3deploy.fault_guard.decide import (
    REASON_NO_ROOM,
    REASON_RATE,
    REASON_TRAY,
    Decision,
    Group,
    confirm,
    decide,
    recent_cordons,
)
from tests.fault_guard.test_decide import NOW, cluster, sick, snap

TWO = (Group(0, ("p0",), ("a0", "a1", "a2", "a3")), Group(1, ("q0",), ("b0", "b1", "b2", "b3")))


def test_a_cordon_exactly_an_hour_old_is_out_of_the_window() -> None:
    trays = cluster()
    trays["c0"] = dataclasses.replace(trays["c0"], guard_cordoned_at=NOW - 3600)
    trays["c1"] = dataclasses.replace(trays["c1"], guard_cordoned_at=NOW - 3599)
    assert recent_cordons(trays.values(), NOW) == 1


def test_a_healthy_group_before_a_sick_one_does_not_end_the_pass() -> None:
    [d] = decide(snap(sick(cluster(4), "b1"), TWO), 2)
    assert (d.group, d.verdict) == (1, "act")


def test_every_group_held_by_the_rate_limit_waits_and_the_message_counts_this_passs_plans() -> None:
    trays = sick(sick(cluster(4), "a0"), "b0")
    assert [(d.group, d.reason) for d in decide(snap(trays, TWO), 0)] == [(0, REASON_RATE), (1, REASON_RATE)]
    _, second = decide(snap(trays, TWO), 1)
    assert "and 1 tray(s) were cordoned by guard in the last hour; 1 more would pass it" in (second.why_waiting or "")


def test_every_group_without_room_waits() -> None:
    trays = sick(sick(cluster(2), "a0"), "b0")
    assert [(d.group, d.reason) for d in decide(snap(trays, TWO), 5)] == [(0, REASON_NO_ROOM), (1, REASON_NO_ROOM)]


def test_a_group_placed_in_a_clique_too_small_but_fully_scheduled_is_left_alone() -> None:
    trays = cluster()
    trays["a3"] = dataclasses.replace(trays["a3"], cordoned=True)
    assert decide(snap(trays, (Group(0, ("p0",), ("a0", "a1", "a2")),)), 0) == []


def test_confirm_goes_through_every_decision_of_the_second_read() -> None:
    trays = sick(sick(cluster(4), "a0"), "b0")
    first = decide(snap(trays, TWO), 2)
    # Group 0 cleared in between, group 1 still sick: group 1 is acted on.
    [d] = confirm(first, decide(snap(sick(cluster(4), "b0"), TWO), 2))
    assert (d.group, d.cordon) == (1, ("b0",))
    # Group 0 seen only now, group 1 in both reads.
    [d] = confirm([first[1]], decide(snap(trays, TWO), 2))
    assert d.group == 1
    # A wait first, then an act.
    waits = decide(snap(trays, TWO), 1)
    assert [x.verdict for x in waits] == ["act", "wait"]
    later = [waits[1], dataclasses.replace(waits[0])]
    assert [x.verdict for x in confirm(first, later)] == ["wait", "act"]
    # Two acts, the first a tray no longer sick in common with the first read (nothing to do), the second still.
    gone = Decision(0, "act", REASON_TRAY, {"a3": ("x",)}, cordon=("a3",))
    assert [x.group for x in confirm(first, [gone, first[1]])] == [1]


def test_confirm_keeps_a_leader_or_stranded_cause_only_when_both_reads_saw_it() -> None:
    before = Decision(0, "act", REASON_TRAY, {"a1": ("x",)}, cordon=("a1",))
    now = Decision(0, "act", REASON_TRAY, {"a1": ("x",)}, cordon=("a1",), leader_unhealthy=True)
    [d] = confirm([before], [now])
    assert not d.leader_unhealthy
    leader = Decision(0, "act", "LeaderUnhealthy", {}, leader_unhealthy=True)
    [d] = confirm([leader], [dataclasses.replace(leader, stranded="a")])
    assert d.stranded is None and d.reason == "LeaderUnhealthy"
