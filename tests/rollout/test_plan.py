"""The rollout planned as pure data (rollout/plan.py): a first install, `apply`'s dry run, diff and --no-wait, and the
rolling walk of N >= 2 groups, each from a live state as the target reads it; no cluster, no I/O.

The walks are planned on live states recorded from the real control plane (tests/rollout/recorded), read by
`read_lws` as the Kubernetes target reads them; the rest on live states made by hand (`live_of`)."""

from __future__ import annotations

import copy
from typing import Any

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build as render
from k3deploy.rollout import plan as p
from k3deploy.rollout import steps as st
from k3deploy.rollout.colours import lws_of
from tests.render.sets import prefetch_name
from tests.rollout.recorded.replay import recorded

PROFILE = "kimi-k3-gb300-tp16"
LWS = PROFILE
UP = p.Strategy(group_smoke=True)


def rendered(*sets: str) -> list[dict[str, Any]]:
    return [m.obj for m in render(load_profile(PROFILE, list(sets)))]


def live_of(obj: dict[str, Any], generation: int = 3) -> dict[str, Any]:
    """The LeaderWorkerSet as the API server returns it: the rendered spec plus server fields and a status."""
    live = copy.deepcopy(obj)
    live["metadata"].update({"generation": generation, "resourceVersion": "41", "uid": "u-1"})
    live["status"] = {"replicas": obj["spec"]["replicas"], "readyReplicas": obj["spec"]["replicas"]}
    return live


def kinds(steps: list[st.Step]) -> list[str]:
    return [type(s).__name__ for s in steps]


def keys(objects: list[dict[str, Any]]) -> list[str]:
    return [f"{o['kind']}/{o['metadata']['name']}" for o in objects]


def partition(obj: dict[str, Any]) -> int | None:
    config = (obj.get("spec") or {}).get("rolloutStrategy", {}).get("rollingUpdateConfiguration", {})
    return config.get("partition")


def test_a_first_install_applies_phase_by_phase_waits_then_applies_the_smoke_hook_and_records() -> None:
    objects = rendered()
    plan = p.build(objects, p.LiveState(), UP, PROFILE)
    applies = [s for s in plan.stage(st.APPLY) if isinstance(s, st.Apply)]
    # The node-preflight and prefetch Jobs are waited before what follows them; the smoke Job is not applied yet.
    assert [keys(s.objects)[-1] for s in applies if s.waited] == [
        f"Job/{PROFILE}-node-preflight",
        f"Job/{prefetch_name(objects)}",
    ]
    assert f"Job/{PROFILE}-smoke" not in [k for s in applies for k in keys(s.objects)]
    assert sum(len(s.objects) for s in applies) == len(objects) - 1
    # Every leader not yet in traffic is gated before the smoke hook goes in (the API Service selects only those).
    assert kinds(plan.stage(st.WAIT)) == ["Begin", "Wait", "GateLeaders", "Apply", "RecordRevision"]
    wait, gate, hook, record = plan.stage(st.WAIT)[1:]
    assert gate == st.GateLeaders(LWS, smoke=True)
    assert isinstance(wait, st.Wait) and keys(wait.objects)[:3] == [
        f"LeaderWorkerSet/{LWS}",
        f"Service/{PROFILE}-api",
        f"PodDisruptionBudget/{PROFILE}",
    ]
    assert f"Job/{prefetch_name(objects)}" not in keys(wait.objects)
    assert isinstance(hook, st.Apply) and keys(hook.objects) == [f"Job/{PROFILE}-smoke"] and hook.report
    assert isinstance(record, st.RecordRevision) and record.objects == objects == plan.objects
    assert not any(isinstance(s, st.SmokeGroup) for s in plan.steps) and plan.blue_green is None


def test_an_in_cluster_smoke_runs_the_job_itself_so_the_plan_never_applies_it() -> None:
    plan = p.build(rendered(), p.LiveState(), p.Strategy(group_smoke=True, in_cluster_smoke=True), PROFILE)
    applied = [k for s in plan.steps if isinstance(s, st.Apply) for k in keys(s.objects)]
    assert f"Job/{PROFILE}-smoke" not in applied


def test_apply_without_wait_applies_everything_and_records_the_revision_in_the_apply_stage() -> None:
    objects = rendered()
    plan = p.build(objects, p.LiveState(), p.Strategy(wait=False), PROFILE)
    assert plan.stage(st.WAIT) == []
    assert not any(s.waited for s in plan.steps if isinstance(s, st.Apply))
    assert [k for s in plan.steps if isinstance(s, st.Apply) for k in keys(s.objects)] == keys(objects)
    assert isinstance(plan.steps[-1], st.RecordRevision) and plan.steps[-1].stage == st.APPLY


def test_a_server_dry_run_says_so_records_nothing_and_leaves_leftovers_alone() -> None:
    leftover = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{LWS}-preview", "namespace": "kimi-k3"}}
    plan = p.build(rendered(), p.LiveState(leftovers=[leftover]), p.Strategy(dry_run=True, wait=False), PROFILE)
    assert kinds(plan.steps) == ["Begin"] + ["Apply"] * (len(plan.steps) - 1)
    assert all(s.dry_run for s in plan.steps if isinstance(s, st.Apply)) and plan.suffix == " (server dry run)"


def test_a_diff_only_diffs() -> None:
    objects = rendered()
    plan = p.build(objects, p.LiveState(), p.Strategy(diff=True, dry_run=True, wait=False), PROFILE)
    assert kinds(plan.steps) == ["Begin", "Diff"] and plan.steps[1].objects == objects  # type: ignore[union-attr]


def test_leftovers_of_a_cut_short_blue_green_go_before_anything_is_applied() -> None:
    leftover = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{LWS}-preview", "namespace": "kimi-k3"}}
    plan = p.build(rendered(), p.LiveState(leftovers=[leftover]), UP, PROFILE)
    assert kinds(plan.steps)[:3] == ["Begin", "RemoveLeftovers", "Apply"]
    assert plan.steps[1] == st.RemoveLeftovers([leftover], LWS)


def assert_walked_down(plan: p.Plan, new: list[dict[str, Any]]) -> None:
    """Held at partition 2, then each group rolled, waited, smoked by its leader and recorded, 1 then 0."""
    held = [
        o for s in plan.stage(st.APPLY) if isinstance(s, st.Apply) for o in s.objects if o["kind"] == "LeaderWorkerSet"
    ]
    assert [partition(o) for o in held] == [2]
    walk = plan.stage(st.WAIT)[1:-4]
    rendered_lws = lws_of(new)
    assert walk[0] == st.RecordGate(rendered_lws or {}, None)
    for group, start in ((1, 1), (0, 6)):
        note, apply, wait, smoke, gate = walk[start : start + 5]
        assert note == st.Note(
            f"  rolling group {group} of {LWS} (partition {group}; groups below keep serving)", "wait"
        )
        assert isinstance(apply, st.Apply) and [partition(o) for o in apply.objects] == [group] and not apply.report
        assert wait == st.WaitGroup(rendered_lws or {}, group)
        # A passed gate marks its leader: the API Service selects only marked leaders.
        heading = f"  smoke of group {group} through its leader {LWS}-{group}"
        assert smoke == st.SmokeGroup(LWS, group, heading, mark=True)
        assert gate == st.RecordGate(rendered_lws or {}, group)
    final, said = walk[11:13]
    assert isinstance(final, st.Apply) and final.objects == [rendered_lws] and partition(final.objects[0]) is None
    assert said == st.Note(f"  all 2 groups of {LWS} rolled, each smoke-tested before the next", "wait")
    assert kinds(plan.stage(st.WAIT)[-4:]) == ["Wait", "GateLeaders", "Apply", "RecordRevision"]


def test_two_changed_groups_are_held_at_partition_2_then_walked_down_each_smoked_before_the_next() -> None:
    # Two groups the real controller brought up, read for a new image: the dry run bumps the generation.
    new, live = recorded("two_groups", "new_image", UP)
    assert_walked_down(p.build(new, live, UP, PROFILE), new)


def test_a_walk_stopped_at_group_1_is_walked_again_from_the_top() -> None:
    # Group 1 runs the new template but never passed its gate, group 0 still runs the old one (partition 1 held).
    new, live = recorded("two_groups_mid_walk", "new_image", UP)
    assert live.lws.ungated == [1, 0]
    assert_walked_down(p.build(new, live, UP, PROFILE), new)


def test_a_template_no_gate_passed_on_is_gated_group_by_group_without_rolling() -> None:
    objects = rendered("parallel.replicas=2")
    live = p.LiveLws(live=live_of(lws_of(objects) or {}), ungated=[1])
    plan = p.build(objects, p.LiveState(live), UP, PROFILE)
    assert all(partition(o) is None for s in plan.steps if isinstance(s, st.Apply) for o in s.objects)
    smokes = [s for s in plan.steps if isinstance(s, st.SmokeGroup)]
    heading = f"  smoke of group 1 through its leader {LWS}-1 (no gate passed yet)"
    assert smokes == [st.SmokeGroup(LWS, 1, heading, mark=True)]
    assert not any(isinstance(s, st.Note) and "rolling group" in s.text for s in plan.steps)


def test_a_change_that_recreates_no_group_still_smokes_the_ungated_ones_only() -> None:
    objects = rendered("parallel.replicas=2")
    live = p.LiveLws(live=live_of(lws_of(objects) or {}), template_changes=True, pods_change=False, ungated=[])
    plan = p.build(objects, p.LiveState(live), UP, PROFILE)
    assert not any(isinstance(s, st.SmokeGroup) for s in plan.steps)
    assert kinds(plan.stage(st.WAIT)) == [
        "Begin",
        "RecordGate",
        "Apply",
        "Wait",
        "GateLeaders",
        "Apply",
        "RecordRevision",
    ]


def test_no_walk_without_a_gate_a_live_group_count_to_keep_or_a_change() -> None:
    two = rendered("parallel.replicas=2")
    changed = p.LiveLws(live=live_of(lws_of(two) or {}), template_changes=True, pods_change=True)
    one_live = p.LiveLws(live=live_of(lws_of(rendered()) or {}), template_changes=True, pods_change=True)
    # Two groups the real controller brought up, read for their own template.
    installed, unchanged = recorded("two_groups", "installed", UP)
    for objects, live, strategy in (
        (two, changed, p.Strategy(group_smoke=False)),  # --skip-smoke: the controller rolls every group itself
        (two, one_live, UP),  # a change of N is the controller's
        (installed, unchanged.lws, UP),  # nothing to roll, every gate passed
        (two, p.LiveLws(), UP),  # a first install
    ):
        plan = p.build(objects, p.LiveState(live), strategy, PROFILE)
        assert not any(isinstance(s, (st.SmokeGroup, st.WaitGroup, st.RecordGate)) for s in plan.steps), live
        assert all(partition(o) is None for s in plan.steps if isinstance(s, st.Apply) for o in s.objects)


def test_the_apply_summary_counts_actions_or_says_nothing_changed() -> None:
    created = st.StepOutcome([{"object": "Namespace/a", "action": "created"}], changed=True)
    same = st.StepOutcome([{"object": "Service/b", "action": "unchanged"}, {"object": "Job/c", "action": "unchanged"}])
    assert p.apply_summary([created, same]) == "1 created, 2 unchanged"
    assert p.apply_summary([same], " (server dry run)") == "no changes: all 2 objects unchanged (server dry run)"
    assert p.apply_summary([st.StepOutcome(), st.StepOutcome(summary="1 of 16 objects would change")]) == (
        "1 of 16 objects would change"
    )


def test_a_live_service_without_the_gate_has_its_serving_leaders_labelled_before_anything_is_applied() -> None:
    """A release installed before the traffic gate (or with it off): the leaders that serve now are labelled as they
    are first, so the gated Service applied next keeps selecting them instead of emptying until each is gated."""
    plan = p.build(rendered(), p.LiveState(ungated_service=True), UP, PROFILE)
    assert plan.steps[:3] == [st.Begin(st.APPLY), st.GateLeaders(LWS, smoke=False, stage=st.APPLY), plan.steps[2]]
    assert isinstance(plan.steps[2], st.Apply)
    ungated = rendered("smoke.gate_traffic=false")
    assert not any(
        isinstance(s, st.GateLeaders) for s in p.build(ungated, p.LiveState(ungated_service=True), UP, PROFILE).steps
    )
    dry = p.build(rendered(), p.LiveState(ungated_service=True), p.Strategy(dry_run=True, wait=False), PROFILE)
    assert not any(isinstance(s, st.GateLeaders) for s in dry.steps)
