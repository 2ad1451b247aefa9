"""Blue-green planned as pure data (rollout/plan.py `blue_green`, `switch_over`): the new colour beside the live one,
its smoke, the switch, the old group's removal, and what a rollback reads of how far it got; no cluster.

The live states are recorded from the real control plane (tests/rollout/recorded: one group after a first install,
nothing installed), read by `read_lws` as the Kubernetes target reads them."""

from __future__ import annotations

import dataclasses

from k3deploy.rollout import plan as p
from k3deploy.rollout import steps as st
from k3deploy.rollout.colours import recoloured, selected
from tests.rollout.recorded.replay import recorded
from tests.rollout.test_plan import LWS, PROFILE, keys, kinds

GREEN = f"{LWS}-green"
BLUE_GREEN = p.Strategy(name="blue-green", group_smoke=True)


def changed(live_colour: str = LWS) -> tuple[list[dict], p.LiveState]:
    """The rendered change under the live colour, and the live state of a changed live group: the recorded group
    read for a new image (recoloured when another colour serves)."""
    objects, live = recorded("one_group", "new_image", BLUE_GREEN)
    assert live.lws.live is not None
    if live_colour == LWS:
        return objects, live
    group = recoloured([live.lws.live], LWS, live_colour)[0]
    return recoloured(objects, LWS, live_colour), p.LiveState(dataclasses.replace(live.lws, live=group))


def test_the_new_colour_goes_in_beside_the_live_group_with_a_preview_service_and_the_api_service_unmoved() -> None:
    objects, live = changed()
    plan = p.build(objects, live, BLUE_GREEN, PROFILE)
    assert plan.blue_green is not None and (plan.blue_green.old, plan.blue_green.new) == (LWS, GREEN)
    apply = plan.stage(st.APPLY)
    assert apply[1] == st.Note(
        f"  blue-green: new group {GREEN} beside the live {LWS}, with Service {GREEN}-preview of its own until the switch"
    )
    applied = [o for s in apply if isinstance(s, st.Apply) for o in s.objects]
    assert f"LeaderWorkerSet/{GREEN}" in keys(applied) and f"LeaderWorkerSet/{LWS}" not in keys(applied)
    assert f"Service/{GREEN}-preview" in keys(applied)
    assert selected(next(o for o in applied if o["metadata"]["name"] == f"{PROFILE}-api")) == LWS
    assert all(s.failure_of == GREEN for s in apply if isinstance(s, st.Apply))
    # A blue-green clears no leftovers of its own: what is beside the live group is its new colour.
    assert not any(isinstance(s, st.RemoveLeftovers) for s in plan.steps)


def test_the_new_group_is_waited_smoked_then_takes_the_service_and_only_then_the_old_group_goes() -> None:
    objects, live = changed()
    plan = p.build(objects, live, BLUE_GREEN, PROFILE)
    assert kinds(plan.stage(st.WAIT)) == [
        "Begin",
        "Wait",
        "SmokeGroup",
        "Switch",
        "Apply",
        "Delete",
        "WaitGone",
        "Delete",
        "Wait",
        "GateLeaders",
        "Apply",
        "RecordRevision",
    ]
    _, wait, smoke, switch, followers, delete, gone, preview, serving, gate, _, record = plan.stage(st.WAIT)
    assert isinstance(wait, st.Wait) and keys(wait.objects) == [f"LeaderWorkerSet/{GREEN}"]
    # The gate that passes marks the new leader: the switched API Service selects only marked leaders.
    # Until the switch the live group serves: what a failed gate's hint says.
    heading = f"  smoke of the new group {GREEN} through its leader"
    assert smoke == st.SmokeGroup(GREEN, 0, heading, mark=True, hint=f"the live group {LWS} still serves")
    assert gate == st.GateLeaders(GREEN, smoke=True)
    assert isinstance(switch, st.Switch) and switch.leader == f"{GREEN}-0" and selected(switch.service) == GREEN
    # The PodDisruptionBudget selects the group by name: it follows the switch.
    assert isinstance(followers, st.Apply) and keys(followers.objects) == [f"PodDisruptionBudget/{PROFILE}"]
    assert delete == st.Delete("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", LWS, f"  deleted the old group {LWS}")
    assert gone == st.WaitGone(LWS) and preview == st.Delete("v1", "Service", f"{GREEN}-preview")
    assert isinstance(serving, st.Wait) and f"LeaderWorkerSet/{GREEN}" in keys(serving.objects)
    assert isinstance(record, st.RecordRevision) and record.objects == plan.objects == recoloured(objects, LWS, GREEN)


def test_from_green_the_next_blue_green_goes_back_to_the_profiles_own_name() -> None:
    objects, live = changed(GREEN)
    plan = p.build(objects, live, BLUE_GREEN, PROFILE)
    assert plan.blue_green is not None and (plan.blue_green.old, plan.blue_green.new) == (GREEN, LWS)
    assert st.Delete("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", GREEN, f"  deleted the old group {GREEN}") in (
        plan.steps
    )


def test_without_smoke_the_switch_still_waits_for_the_new_group_first() -> None:
    objects, live = changed()
    plan = p.build(objects, live, p.Strategy(name="blue-green"), PROFILE)
    # No gate asked for: the new leader is marked as it is before the switch, or the Service would select nothing.
    assert kinds(plan.stage(st.WAIT))[:4] == ["Begin", "Wait", "GateLeaders", "Switch"]
    assert plan.stage(st.WAIT)[2] == st.GateLeaders(GREEN, smoke=False)


def test_nothing_live_or_nothing_changed_is_an_ordinary_rollout() -> None:
    objects, _ = changed()
    _, nothing = recorded("absent", "installed", BLUE_GREEN)
    _, unchanged = recorded("one_group", "installed", BLUE_GREEN)
    for state in (nothing, unchanged):
        plan = p.build(objects, state, BLUE_GREEN, PROFILE)
        assert plan.blue_green is None and not any(isinstance(s, st.Switch) for s in plan.steps)


def test_a_rollback_knows_whether_traffic_moved_by_the_steps_that_began() -> None:
    objects, live = changed()
    plan = p.build(objects, live, BLUE_GREEN, PROFILE)
    upto_smoke = plan.steps[: next(i for i, s in enumerate(plan.steps) if isinstance(s, st.SmokeGroup)) + 1]
    assert not p.switched(upto_smoke)
    assert p.switched(plan.steps[: next(i for i, s in enumerate(plan.steps) if isinstance(s, st.Switch)) + 1])
