"""Readiness rules pinned at their boundaries, both sides (the survivors of tests/mutation/run on
k3deploy/rollout/readiness.py): generations, group counts, Job completions, and which pod troubles are fatal."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.rollout.readiness import (
    FATAL_WAITING_REASONS,
    PodProblem,
    is_fatal,
    job_readiness,
    lws_readiness,
    pod_phase_label,
    pod_problems,
    pod_ready,
    readiness,
    restarts,
)


def _lws(generation: int = 2, observed: int | None = 2, ready: int = 2, updated: int = 2, **cond: Any) -> dict:
    available = {"type": "Available", "status": "True", "reason": "AllGroupsReady", **cond}
    status: dict[str, Any] = {"readyReplicas": ready, "updatedReplicas": updated, "conditions": [available]}
    if observed is not None:
        status["observedGeneration"] = observed
    return {
        "kind": "LeaderWorkerSet",
        "metadata": {"generation": generation},
        "spec": {"replicas": 2},
        "status": status,
    }


@pytest.mark.parametrize(("observed", "ready"), [(1, False), (2, True), (3, True), (None, True)])
def test_an_lws_is_ready_only_once_its_controller_saw_this_generation(observed: int | None, ready: bool) -> None:
    found = lws_readiness(_lws(observed=observed))
    assert found.ready is ready
    if not ready:
        assert found.message == "controller has not seen generation 2 yet (2/2 groups ready, 2 updated)"


@pytest.mark.parametrize(("observed", "ready"), [("1", False), ("2", True), ("", True)])
def test_an_available_condition_from_an_older_generation_is_stale(observed: str, ready: bool) -> None:
    assert lws_readiness(_lws(observedGeneration=observed)).ready is ready


@pytest.mark.parametrize(("ready", "updated", "is_ready"), [(2, 2, True), (1, 2, False), (2, 1, False), (3, 3, True)])
def test_every_group_must_be_ready_and_updated(ready: int, updated: int, is_ready: bool) -> None:
    found = lws_readiness(_lws(ready=ready, updated=updated))
    assert found.ready is is_ready
    assert found.message == f"{ready}/2 groups ready, {updated} updated"
    assert found.reason == ("Available" if is_ready else "AllGroupsReady")


def test_an_update_in_progress_is_not_ready_even_when_available() -> None:
    obj = _lws()
    obj["status"]["conditions"].append({"type": "UpdateInProgress", "status": "True"})
    assert (lws_readiness(obj).ready, lws_readiness(obj).reason) == (False, "UpdateInProgress")
    obj["status"]["conditions"][-1]["status"] = "False"
    assert lws_readiness(obj).ready is True


def test_without_available_an_lws_is_progressing() -> None:
    obj = _lws()
    obj["status"]["conditions"] = []
    assert (lws_readiness(obj).ready, lws_readiness(obj).reason) == (False, "Progressing")
    obj["status"]["conditions"] = [{"type": "Available", "status": "False", "reason": "GroupsNotReady"}]
    assert lws_readiness(obj).reason == "GroupsNotReady" and not lws_readiness(obj).failed


def _job(**status: Any) -> dict:
    return {"kind": "Job", "spec": {"completions": 2}, "status": status}


@pytest.mark.parametrize(
    ("status", "ready", "reason"),
    [
        ({"succeeded": 2}, True, "Complete"),
        ({"succeeded": 1}, False, "Pending"),
        ({"succeeded": 2, "active": 1}, False, "Running"),
        ({"succeeded": 3}, True, "Complete"),
    ],
)
def test_a_job_is_complete_once_its_completions_succeeded_and_none_is_active(
    status: dict, ready: bool, reason: str
) -> None:
    found = job_readiness(_job(**status))
    assert (found.ready, found.reason, found.failed) == (ready, reason, False)


def test_a_failed_condition_fails_a_job_for_good_and_complete_makes_it_ready() -> None:
    failed = job_readiness(_job(conditions=[{"type": "Failed", "status": "True"}], failed=3))
    assert (failed.ready, failed.failed, failed.reason) == (False, True, "Failed")
    assert failed.message == "0 succeeded, 0 active, 3 failed"
    not_yet = job_readiness(_job(conditions=[{"type": "Failed", "status": "False"}]))
    assert not not_yet.failed
    done = job_readiness(
        {"kind": "Job", "spec": {}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    )
    assert (done.ready, done.reason) == (True, "Complete")
    assert job_readiness({"kind": "Job", "spec": {}, "status": {"succeeded": 5}}).ready is False


def test_other_kinds_are_ready_once_they_exist() -> None:
    assert readiness({"kind": "Service"}) == readiness({"kind": "ConfigMap"})
    assert readiness({"kind": "Service"}).ready and readiness({"kind": "Service"}).reason == "Exists"
    domain = readiness({"kind": "ComputeDomain", "status": {"status": "Ready"}})
    assert (domain.ready, domain.reason) == (True, "Ready")
    assert readiness({"kind": "ComputeDomain"}).reason == "NotReady"
    assert readiness({"kind": "Job", "spec": {}, "status": {}}).ready is False


def _pod(*statuses: dict, init: tuple[dict, ...] = (), **status: Any) -> dict:
    return {
        "metadata": {},
        "status": {"containerStatuses": list(statuses), "initContainerStatuses": list(init), **status},
    }


def test_oom_kills_are_seen_in_the_current_or_the_last_state() -> None:
    now = pod_problems(_pod({"name": "c", "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}))
    before = pod_problems(_pod({"name": "c", "state": {}, "lastState": {"terminated": {"reason": "OOMKilled"}}}))
    for problems in (now, before):
        assert [(p.reason, p.crashed, p.container) for p in problems] == [("OOMKilled", True, "c")]
        assert problems[0].message == "container c was killed for exceeding its memory (exit 137)"


@pytest.mark.parametrize(("code", "problem"), [(0, None), (1, "Error")])
def test_a_container_that_exited_non_zero_is_a_crash(code: int, problem: str | None) -> None:
    found = pod_problems(_pod({"name": "c", "state": {"terminated": {"exitCode": code}}}))
    assert [p.reason for p in found] == ([problem] if problem else [])
    if problem:
        assert found[0].crashed and found[0].message == "container c exited with code 1"


def test_waiting_reasons_and_which_are_fatal() -> None:
    pulling = pod_problems(_pod({"name": "c", "state": {"waiting": {"reason": "ErrImagePull", "message": "m"}}}))
    assert [(p.reason, p.crashed) for p in pulling] == [("ErrImagePull", False)]
    assert not is_fatal(pulling[0])  # a pull can succeed on the next try
    looping = pod_problems(_pod({"name": "c", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}))
    assert looping[0].crashed and is_fatal(looping[0])
    assert pod_problems(_pod({"name": "c", "state": {"waiting": {"reason": "ContainerCreating"}}})) == []
    assert all(is_fatal(PodProblem(r, "")) for r in FATAL_WAITING_REASONS)
    assert is_fatal(PodProblem("OOMKilled", "")) and not is_fatal(PodProblem("Unschedulable", ""))
    init = pod_problems(_pod(init=({"name": "fetch", "state": {"waiting": {"reason": "ImagePullBackOff"}}},)))
    assert [p.container for p in init] == ["fetch"]


def test_scheduling_comes_first_and_only_when_false() -> None:
    pod = _pod(
        {"name": "c", "state": {"waiting": {"reason": "ImagePullBackOff"}}},
        conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/4"}],
    )
    assert [p.reason for p in pod_problems(pod)] == ["Unschedulable", "ImagePullBackOff"]
    pod["status"]["conditions"][0]["status"] = "True"
    assert [p.reason for p in pod_problems(pod)] == ["ImagePullBackOff"]


def test_restarts_add_up_over_init_and_app_containers() -> None:
    pod = _pod({"restartCount": 2}, {"restartCount": 3}, init=({"restartCount": 1},))
    assert restarts(pod) == 6 and restarts(_pod()) == 0


def test_phase_labels_as_kubectl_shows_them() -> None:
    assert pod_phase_label({"metadata": {"deletionTimestamp": "t"}, "status": {}}) == "Terminating"
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    assert pod_phase_label({"metadata": {}, "status": ready}) == "Ready"
    assert pod_phase_label({"metadata": {}, "spec": {"nodeName": "n"}, "status": {"phase": "Pending"}}) == (
        "ContainerCreating"
    )
    assert pod_phase_label({"metadata": {}, "status": {"phase": "Pending"}}) == "Pending"
    assert pod_phase_label({"metadata": {}, "status": {}}) == "Pending"
    assert pod_phase_label({"metadata": {}, "spec": {"nodeName": "n"}, "status": {"phase": "Running"}}) == "Running"
    crashing = _pod({"name": "c", "state": {"waiting": {"reason": "CrashLoopBackOff"}}})
    assert pod_phase_label(crashing) == "CrashLoopBackOff"


def test_a_pod_is_ready_only_when_it_runs_as_the_statefulset_and_lws_controllers_count_it() -> None:
    # A Ready condition on a pod still Pending (a stale status write) is not a ready pod to KCM's isRunningAndReady
    # nor to LWS's PodRunningAndReady: k3deploy must not show it Ready while the LWS waits on it.
    stale = {
        "metadata": {},
        "spec": {"nodeName": "n"},
        "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert not pod_ready(stale) and pod_phase_label(stale) == "ContainerCreating"
    stale["status"]["phase"] = "Running"
    assert pod_ready(stale) and pod_phase_label(stale) == "Ready"
    stale["status"]["conditions"][0]["status"] = "False"
    assert not pod_ready(stale)


def test_missing_counts_read_as_zero_and_missing_replicas_as_one() -> None:
    bare = {"kind": "LeaderWorkerSet", "metadata": {}, "spec": {}, "status": {}}
    bare["status"]["conditions"] = [{"type": "Available", "status": "True"}]
    assert lws_readiness(bare).message == "0/1 groups ready, 0 updated" and not lws_readiness(bare).ready
    bare["status"].update(readyReplicas=1, updatedReplicas=1)
    assert lws_readiness(bare).ready  # one group by default, and no generation to be behind
    two = _lws(ready=1, updated=1)
    two["status"].pop("readyReplicas")
    assert lws_readiness(two).message == "0/2 groups ready, 1 updated"
    unborn = _lws(generation=0, observed=None)
    del unborn["metadata"]["generation"]
    assert lws_readiness(unborn).ready
    ahead = _lws(generation=1, observed=None, observedGeneration="1")
    del ahead["metadata"]["generation"]
    assert lws_readiness(ahead).ready  # an Available from generation 1 is not stale when none is recorded


def test_a_jobs_counts_read_as_zero_when_missing_and_its_message_defaults_to_them() -> None:
    assert job_readiness({"kind": "Job", "status": {}}).message == "0 succeeded, 0 active, 0 failed"
    counted = job_readiness({"kind": "Job", "status": {"succeeded": 1, "active": 2, "failed": 3}})
    assert counted.message == "1 succeeded, 2 active, 3 failed"
    said = job_readiness(_job(conditions=[{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]))
    assert said.message == "BackoffLimitExceeded"
    zero = job_readiness({"kind": "Job", "spec": {"completions": 0}, "status": {}})
    assert zero.ready  # nothing to complete


def test_a_scheduling_problem_is_not_a_crash_and_names_unschedulable_by_default() -> None:
    pod = _pod(conditions=[{"type": "PodScheduled", "status": "False"}])
    [problem] = pod_problems(pod)
    assert (problem.reason, problem.message, problem.crashed) == ("Unschedulable", "", False)
    assert PodProblem("x", "y").crashed is False


def test_a_terminated_container_without_a_reason_is_an_error_and_without_a_code_is_fine() -> None:
    [err] = pod_problems(_pod({"name": "c", "state": {"terminated": {"exitCode": 2}}}))
    assert err.reason == "Error"
    assert pod_problems(_pod({"name": "c", "state": {"terminated": {"reason": "Completed"}}})) == []
    waiting = pod_problems(_pod({"name": "c", "state": {"waiting": {"reason": "ImagePullBackOff"}}}))
    assert waiting[0].message == ""
    oom_now = _pod(
        {
            "name": "c",
            "state": {"terminated": {"reason": "OOMKilled", "exitCode": 9}},
            "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
        }
    )
    assert pod_problems(oom_now)[0].message.endswith("(exit 9)")  # the current state's, when both are OOM kills


def test_restarts_count_missing_as_zero_and_the_label_is_the_first_problem() -> None:
    assert restarts(_pod({"name": "c"}, {"name": "d", "restartCount": 1})) == 1
    pod = _pod(
        {"name": "c", "state": {"waiting": {"reason": "ImagePullBackOff"}}},
        conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    )
    assert pod_phase_label(pod) == "Unschedulable"
    assert pod_phase_label({"metadata": {}, "status": {"phase": "Running"}}) == "Running"


def test_an_lws_without_a_generation_is_judged_as_generation_0() -> None:
    seen = _lws(observed=0)
    del seen["metadata"]["generation"]
    assert lws_readiness(seen).ready  # observedGeneration 0 has seen generation 0


def test_a_job_without_a_succeeded_count_has_completed_nothing() -> None:
    assert job_readiness({"kind": "Job", "spec": {"completions": 1}, "status": {}}).ready is False
