"""rollout/undo.py: the rollback and `down` as steps, and their summary lines, as pure functions."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.errors import K3DeployError
from k3deploy.lws import NAME_LABEL
from k3deploy.rollout import plan as p
from k3deploy.rollout import steps as st
from k3deploy.rollout import undo as u
from k3deploy.targets.kubernetes.history import KEPT_KINDS

NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kimi"}}
PVC = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "w", "namespace": "kimi"}}
JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "prefetch", "namespace": "kimi"}}
SVC = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kimi", "namespace": "kimi"}}


def lws(name: str = "kimi", image: str = "v1") -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": "kimi"},
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"image": image}},
    }


V1 = [NS, PVC, JOB, lws(), SVC]
EXTRA = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "extra", "namespace": "kimi"}}
V2 = [NS, PVC, JOB, lws(image="v2"), SVC, EXTRA]


def kinds(steps: list[st.Step]) -> list[str]:
    return [type(s).__name__ for s in steps]


def test_a_first_install_is_removed_weights_and_namespace_kept_and_its_history_deleted() -> None:
    undo = u.undo(None, None, p.Plan([], V2), [], [], "kimi")
    assert kinds(undo.steps) == ["Begin", "Remove", "Delete"]
    begin, remove, history = undo.steps
    assert begin == st.Begin(st.ROLLBACK)
    assert isinstance(remove, st.Remove) and remove.objects == V2 and remove.keep == KEPT_KINDS
    assert history == st.Delete("v1", "ConfigMap", "kimi-k3deploy-revisions", stage=st.ROLLBACK)
    outcomes = [st.StepOutcome(), st.StepOutcome(removed=["a", "b"], kept=["Secret/x (k3deploy did not create it)"])]
    outcomes.append(st.StepOutcome(removed=["ConfigMap/kimi-k3deploy-revisions"]))
    assert u.summary(undo, [outcomes]) == (
        "first install removed (2 objects deleted; weight cache PVC and namespace kept; kept, not k3deploy's: "
        "Secret/x (k3deploy did not create it))"
    )


def test_an_upgrade_restores_the_previous_revision_removes_what_only_the_failed_one_had_and_records_it() -> None:
    undo = u.undo(V1, 4, p.Plan([], V2), [], [], "kimi")
    assert kinds(undo.steps) == ["Begin", "Guard", "Restore", "Remove", "Wait", "RecordRevision"]
    _, guard, restore, remove, wait, record = undo.steps
    assert guard == st.Guard(V2, V1)
    assert isinstance(restore, st.Restore) and restore.objects[0] is NS and len(restore.objects) == len(V1)
    assert isinstance(remove, st.Remove) and remove.objects == [EXTRA] and remove.label == "rollback: "
    assert isinstance(wait, st.Wait) and wait.objects == p.serving(V1)
    assert record == st.RecordRevision(V1, stage=st.ROLLBACK)
    outcomes = [
        st.StepOutcome(),
        st.StepOutcome(),
        st.StepOutcome(applied=[{"object": "LeaderWorkerSet/kimi", "action": "configured"}]),
        st.StepOutcome(removed=["deleted ConfigMap/extra"]),
        st.StepOutcome(),
        st.StepOutcome(revision=6),
    ]
    assert u.summary(undo, [outcomes]) == "restored revision 4 (now revision 6; 2 objects changed) and it is ready"


def test_someone_elses_change_stops_the_restore_and_says_why() -> None:
    undo = u.undo(V1, 4, p.Plan([], V2), [], [], "kimi")
    stopped = [st.StepOutcome(), st.StepOutcome(summary="LeaderWorkerSet/kimi runs a template ...", stop=True)]
    assert u.summary(undo, [stopped]) == (
        "rollback skipped: LeaderWorkerSet/kimi runs a template ...; re-applying revision 4 would revert that change"
    )


def test_the_revision_that_failed_is_nothing_to_roll_back_to() -> None:
    undo = u.undo(V1, 4, p.Plan([], V1), [], [], "kimi")
    assert kinds(undo.steps) == ["Begin"]
    assert u.summary(undo, [[st.StepOutcome()]]) == "nothing to roll back to: revision 4 is the one that failed"


def test_without_a_plan_the_live_set_is_what_is_undone() -> None:
    undo = u.undo(V1, 4, None, [], V2, "kimi")
    assert isinstance(undo.steps[1], st.Guard) and undo.steps[1].applied == V2


def _blue_green() -> p.BlueGreen:
    preview = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kimi-green-preview"}}
    return p.BlueGreen(old="kimi", new="kimi-green", objects=V2, old_objects=V1, preview=preview)


def test_a_blue_green_cut_short_before_its_switch_is_abandoned_and_the_previous_objects_come_back() -> None:
    bg = _blue_green()
    plan = p.Plan([st.Begin(st.APPLY), st.Switch(None, "kimi-green", "kimi-green-0")], V2, bg)
    undo = u.undo(V1, 4, plan, plan.steps[:1], [], "kimi")
    # The new group goes first: a restore the API server refuses must not leave it beside the old one.
    assert kinds(undo.steps) == ["Begin", "Delete", "Delete", "WaitGone", "Restore"]
    restore = undo.steps[4]
    assert isinstance(restore, st.Restore) and restore.objects == [NS, PVC, SVC]  # not the serving group, not Jobs
    assert undo.steps[1:4] == [
        st.Delete("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "kimi-green", stage=st.ROLLBACK),
        st.Delete("v1", "Service", "kimi-green-preview", stage=st.ROLLBACK),
        st.WaitGone("kimi-green", stage=st.ROLLBACK),
    ]
    outcomes = [
        st.StepOutcome(),
        st.StepOutcome(removed=["LeaderWorkerSet/kimi-green"]),
        st.StepOutcome(),
        st.StepOutcome(),
        st.StepOutcome(applied=[{"object": "Service/kimi", "action": "configured"}]),
    ]
    assert u.summary(undo, [outcomes]) == (
        "blue-green abandoned: new group removed (LeaderWorkerSet/kimi-green); kimi still serving "
        "(1 of the previous revision's objects restored)"
    )


def test_the_new_group_is_deleted_only_while_the_api_service_does_not_select_it() -> None:
    api = {**SVC, "metadata": {"name": "kimi-api"}, "spec": {"selector": {NAME_LABEL: "kimi"}}}
    bg = p.BlueGreen(old="kimi", new="kimi-green", objects=[], old_objects=[NS, api])
    delete = u.abandon(bg, None).steps[0]
    assert delete == st.Delete(
        "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "kimi-green", stage=st.ROLLBACK, unless_selected_by="kimi-api"
    )


def test_a_part_an_error_stopped_says_what_it_deleted_and_kept_before() -> None:
    part = u.abandon(_blue_green(), V1)
    done = [st.StepOutcome(removed=["LeaderWorkerSet/kimi-green"]), st.StepOutcome(kept=["Service/p (not ours)"])]
    assert u.stopped(part, done, "apply Service/kimi: 500") == (
        "abandoning the blue-green failed: apply Service/kimi: 500 (deleted before it: LeaderWorkerSet/kimi-green; "
        "kept, not k3deploy's: Service/p (not ours))"
    )
    assert u.stopped(part, [], "boom") == "abandoning the blue-green failed: boom (nothing deleted before it)"


def test_after_the_switch_the_previous_revision_comes_back_first_then_the_new_group_goes() -> None:
    bg = _blue_green()
    plan = p.Plan([st.Begin(st.APPLY), st.Switch(None, "kimi-green", "kimi-green-0")], V2, bg)
    undo = u.undo(V1, 4, plan, plan.steps, [], "kimi")
    assert [part.kind for part in undo.parts] == [u.RESTORE, u.ABANDON]
    assert kinds(undo.parts[1].steps) == ["Delete", "Delete", "WaitGone"]  # nothing restored twice
    restored = [st.StepOutcome()] * 5 + [st.StepOutcome(revision=5)]
    gone = [st.StepOutcome()] * 3
    assert u.summary(undo, [restored, gone]) == (
        "restored revision 4 (now revision 5; 0 objects changed) and it is ready; "
        "blue-green abandoned: new group removed (nothing left); kimi still serving"
    )
    # A Guard stops only its own part: the new group still goes.
    skipped = [st.StepOutcome(), st.StepOutcome(summary="someone changed it", stop=True)]
    assert u.summary(undo, [skipped, gone]) == (
        "rollback skipped: someone changed it; re-applying revision 4 would revert that change; "
        "blue-green abandoned: new group removed (nothing left); kimi still serving"
    )


@pytest.mark.parametrize("purge", [False, True])
def test_down_removes_the_live_set_and_leftovers_then_waits_for_each_group(purge: bool) -> None:
    other = lws("kimi-green")
    undo = u.teardown(V1, [other], purge, "kimi")
    assert kinds(undo.steps) == ["Begin", "Remove", "Delete", "WaitGone"]
    begin, remove, history, gone = undo.steps
    assert begin == st.Begin(st.DOWN)
    assert isinstance(remove, st.Remove) and remove.objects == [*V1, other]
    assert remove.keep == (frozenset() if purge else KEPT_KINDS)
    assert history == st.Delete("v1", "ConfigMap", "kimi-k3deploy-revisions", stage=st.DOWN)
    assert gone == st.WaitGone("kimi", stage=st.DOWN, best_effort=purge)
    done = [st.StepOutcome(), st.StepOutcome(removed=["a", "b"]), st.StepOutcome(removed=["ConfigMap/h"])]
    tail = "" if purge else "; weight cache PVC kept (--purge deletes it)"
    assert u.summary(undo, [[*done, st.StepOutcome()]]) == f"deleted 3 objects, pods gone{tail}"
    nothing = [st.StepOutcome(), st.StepOutcome(kept=["Secret/t (k3deploy did not create it)"]), st.StepOutcome()]
    assert (
        u.summary(undo, [nothing])
        == f"nothing to delete{tail}; kept, not k3deploy's: Secret/t (k3deploy did not create it)"
    )


def test_a_target_that_rolls_back_in_one_go_is_said_in_its_own_words() -> None:
    undo = u.whole(None)
    assert undo.steps == [st.RollbackAll(None)]
    assert u.summary(undo, [[st.StepOutcome(summary="removed")]]) == "removed"
    assert u.whole_down(V1, True).steps == [st.DownAll(V1, True)]


def test_the_reachable_rollback_steps_cover_a_first_install_and_an_upgrade_and_none_without_a_wait() -> None:
    objects = [NS, JOB, lws(), SVC]
    steps = u.reachable(objects, p.UP_STRATEGY, "kimi")
    assert {"Remove", "Delete", "Guard", "Restore", "Wait", "RecordRevision"} <= set(kinds(steps))
    assert u.reachable(objects, p.Strategy(wait=False), "kimi") == []
    assert u.reachable(objects, p.Strategy(dry_run=True), "kimi") == []


def test_an_object_of_the_same_name_in_another_namespace_is_one_the_failed_revision_added() -> None:
    there = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kimi", "namespace": "elsewhere"}}
    undo = u.undo(V1, 4, p.Plan([], [*V1[:3], lws(image="v2"), SVC, there]), [], [], "kimi")
    removes = [s for s in undo.steps if isinstance(s, st.Remove)]
    assert len(removes) == 1 and removes[0].objects == [there]


def test_the_reachable_upgrade_rollback_removes_the_failed_revisions_jobs() -> None:
    """The upgrade rollback reviewed is from a revision without the set's Jobs: its Remove is theirs."""
    objects = [NS, JOB, lws(), SVC]
    removes = [s for s in u.reachable(objects, p.UP_STRATEGY, "kimi") if isinstance(s, st.Remove)]
    assert next(s.objects for s in removes if s.label == "rollback: ") == [JOB]


def test_a_summary_needs_the_outcomes_of_every_part() -> None:
    bg = _blue_green()
    plan = p.Plan([st.Switch(None, "kimi-green", "kimi-green-0")], V2, bg)
    undo = u.undo(V1, 4, plan, plan.steps, [], "kimi")
    with pytest.raises(ValueError):
        u.summary(undo, [[st.StepOutcome()] * 6])


def test_a_rollout_began_writing_once_an_apply_that_is_not_a_dry_run_began() -> None:
    assert u.began_writing([st.Begin(st.APPLY), st.Apply([NS])])
    assert not u.began_writing([st.Begin(st.APPLY), st.Apply([NS], dry_run=True), st.Diff([NS])])
    assert not u.began_writing([])


def test_a_failed_part_raises_the_first_error_with_what_every_part_did() -> None:
    undo = u.undo(V1, 4, p.Plan([st.Switch(None, "kimi-green", "kimi-green-0")], V2, _blue_green()), [], [], "kimi")
    refused = K3DeployError("apply Service/kimi: 503", hint="retry later", exit_code=3)
    done = [[st.StepOutcome(), st.StepOutcome(removed=["LeaderWorkerSet/kimi-green"]), st.StepOutcome()]]
    with pytest.raises(K3DeployError) as caught:
        u.summary(undo, done, [(0, refused)])
    assert caught.value.message == (
        "abandoning the blue-green failed: apply Service/kimi: 503 (deleted before it: LeaderWorkerSet/kimi-green)"
    )
    assert (caught.value.hint, caught.value.exit_code) == ("retry later", 3)


def test_a_restored_revision_behind_a_gated_service_lets_its_recreated_leaders_back_in_as_they_are() -> None:
    """The revision that comes back passed its gates when it went live: the leaders LWS recreates for it are labelled
    for traffic without a smoke once ready (k3deploy/traffic_gate.py); without the gate's label in the Service's
    selector nothing is labelled."""
    gated = {**SVC, "spec": {"selector": {"leaderworkerset.sigs.k8s.io/name": "kimi", "k3deploy/gated": "true"}}}
    ungated = {**SVC, "spec": {"selector": {"leaderworkerset.sigs.k8s.io/name": "kimi"}}}
    part = u.restore([lws("kimi", "v1"), gated], 1, [lws("kimi", "v2"), gated], "kimi")
    assert kinds(part.steps)[-3:] == ["Wait", "GateLeaders", "RecordRevision"]
    assert part.steps[-2] == st.GateLeaders("kimi", smoke=False, stage=st.ROLLBACK)
    plain = u.restore([lws("kimi", "v1"), ungated], 1, [lws("kimi", "v2"), ungated], "kimi")
    assert "GateLeaders" not in kinds(plain.steps)
