"""The waiter's rules pinned at their boundaries, both sides (the survivors of tests/mutation/run on
k3deploy/rollout/judge.py): the crash limit, which pod failures fail a Job or a LeaderWorkerSet, the grace clocks."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.rollout.judge import (
    CLAIM_TEMPLATES,
    CRASH_LIMIT,
    REVISIONS,
    WaitState,
    current_key,
    judge,
    missing_claim_template,
    owned_by_job,
    pending,
    pod_row,
)
from tests.rollout.test_judge import LWS_TARGET, _lws, _pod, _state

JOB_TARGET = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "prefetch"}}


def _ready_lws() -> dict[str, Any]:
    lws = _lws("vllm:1", 1)
    lws["status"]["observedGeneration"] = 1
    return lws


def _waiting(pod: dict[str, Any], reason: str) -> dict[str, Any]:
    pod["status"]["containerStatuses"] = [{"name": "c", "state": {"waiting": {"reason": reason, "message": "m"}}}]
    return pod


def _oom(pod: dict[str, Any]) -> dict[str, Any]:
    pod["status"]["containerStatuses"] = [{"name": "c", "state": {"terminated": {"reason": "OOMKilled"}}}]
    return pod


def _job_state(pod: dict[str, Any]) -> WaitState:
    job = {"kind": "Job", "metadata": {"name": "prefetch", "uid": "j1"}, "status": {"active": 1}}
    pod["metadata"] = {"name": "prefetch-x", "uid": "jp", "ownerReferences": [{"uid": "j1"}], "labels": {}}
    return WaitState(objects={"Job": {"prefetch": job}, "Pod": {"prefetch-x": pod}})


@pytest.mark.parametrize(("crashes", "fails"), [(CRASH_LIMIT - 1, False), (CRASH_LIMIT, True)])
def test_the_group_fails_at_the_third_crash_not_before(crashes: int, fails: bool) -> None:
    assert CRASH_LIMIT == 3
    state = _state(_ready_lws(), [], [_pod("k3-0")])
    state.crashes["k3"] = {("p", "vllm", n, "Error") for n in range(crashes)}
    failure = judge(state, [LWS_TARGET], now=0.0, grace_s=30).failure
    assert (failure is not None) is fails
    if failure is not None:
        assert (failure.subject, failure.reason) == ("LeaderWorkerSet/k3", "CrashLoop")
        assert failure.message == f"{crashes} container crashes across the group's pods"
        assert failure.names == {"k3", "k3-0"} and failure.pod == "k3-0"


def test_crashes_of_a_jobs_pods_are_the_jobs_backoff_limit_to_judge_not_the_waiters() -> None:
    state = _job_state(_waiting(_pod("x"), "CrashLoopBackOff"))
    state.crashes["prefetch"] = {("jp", "c", n, "Error") for n in range(5)}
    assert judge(state, [JOB_TARGET], now=0.0, grace_s=30).failure is None


@pytest.mark.parametrize("reason", ["ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError"])
def test_a_job_pod_that_cannot_start_fails_the_rollout_at_once(reason: str) -> None:
    failure = judge(_job_state(_waiting(_pod("x"), reason)), [JOB_TARGET], now=0.0, grace_s=30).failure
    assert failure is not None and (failure.subject, failure.reason) == ("Pod/prefetch-x", reason)
    assert failure.names == {"prefetch", "prefetch-x"} and failure.pod == "prefetch-x"


def test_an_oom_killed_job_pod_fails_the_rollout_at_once() -> None:
    failure = judge(_job_state(_oom(_pod("x"))), [JOB_TARGET], now=0.0, grace_s=30).failure
    assert failure is not None and failure.reason == "OOMKilled"


@pytest.mark.parametrize("reason", ["CrashLoopBackOff", "ImagePullBackOff"])
def test_a_serving_pod_that_cannot_start_fails_the_rollout_at_once(reason: str) -> None:
    state = _state(_ready_lws(), [], [_waiting(_pod("k3-0"), reason)])
    verdict = judge(state, [LWS_TARGET], now=0.0, grace_s=30)
    assert verdict.failure is not None and verdict.failure.reason == reason and verdict.ready is False


def test_a_transient_pull_error_is_waited_for() -> None:
    state = _state(_ready_lws(), [], [_waiting(_pod("k3-0"), "ErrImagePull")])
    assert judge(state, [LWS_TARGET], now=0.0, grace_s=30).failure is None


def test_an_unschedulable_clock_restarts_when_the_pod_was_scheduled_in_between() -> None:
    state = _state(_ready_lws(), [], [_pod("k3-0", scheduled=False)])
    assert judge(state, [LWS_TARGET], now=0.0, grace_s=30).failure is None
    state.objects["Pod"]["k3-0"] = _pod("k3-0")
    assert judge(state, [LWS_TARGET], now=20.0, grace_s=30).failure is None
    state.objects["Pod"]["k3-0"] = _pod("k3-0", scheduled=False)
    assert judge(state, [LWS_TARGET], now=40.0, grace_s=30).failure is None  # 40 s since first, 0 since it came back
    assert judge(state, [LWS_TARGET], now=69.0, grace_s=30).failure is None
    assert judge(state, [LWS_TARGET], now=70.0, grace_s=30).failure is not None


def _claiming(pod: dict[str, Any], template: str, created: bool = False) -> dict[str, Any]:
    pod["spec"] = {"resourceClaims": [{"name": "imex", "resourceClaimTemplateName": template}]}
    if created:
        pod["status"]["resourceClaimStatuses"] = [{"name": "imex", "resourceClaimName": "k3-0-imex"}]
    return pod


@pytest.mark.parametrize(("now", "fails"), [(29.0, False), (30.0, True)])
def test_a_claim_on_a_missing_template_fails_once_the_grace_has_passed(now: float, fails: bool) -> None:
    state = _state(_ready_lws(), [], [_claiming(_pod("k3-0"), "k3-imex")])
    state.objects[CLAIM_TEMPLATES] = {"other": {}}
    assert judge(state, [LWS_TARGET], now=0.0, grace_s=30).failure is None
    failure = judge(state, [LWS_TARGET], now=now, grace_s=30).failure
    assert (failure is not None and failure.reason == "ResourceClaimTemplateNotFound") is fails


def test_a_claim_is_miswired_only_when_its_template_is_known_to_be_missing_and_no_claim_was_made() -> None:
    state = WaitState(objects={CLAIM_TEMPLATES: {"k3-imex": {}}})
    assert missing_claim_template(_claiming(_pod("a"), "k3-imex"), state) is None  # the template exists
    assert missing_claim_template(_claiming(_pod("a"), "gone", created=True), state) is None  # its claim was made
    message = missing_claim_template(_claiming(_pod("a"), "gone"), state)
    assert message is not None and "(templates there: k3-imex)" in message
    empty = WaitState(objects={CLAIM_TEMPLATES: {}})
    assert "(templates there: none)" in (missing_claim_template(_claiming(_pod("a"), "gone"), empty) or "")
    unread = WaitState(objects={CLAIM_TEMPLATES: {}}, unavailable={CLAIM_TEMPLATES})
    assert missing_claim_template(_claiming(_pod("a"), "gone"), unread) is None
    assert missing_claim_template(_claiming(_pod("a"), "gone"), WaitState()) is None


def test_a_job_pod_is_told_by_owner_uid_then_by_controller_uid_then_by_name() -> None:
    job = {"metadata": {"name": "prefetch", "uid": "new"}}
    assert owned_by_job({"metadata": {"labels": {"job-name": "prefetch"}}}, job)
    assert owned_by_job({"metadata": {"labels": {"batch.kubernetes.io/job-name": "prefetch"}}}, job)
    assert not owned_by_job({"metadata": {"labels": {"job-name": "other"}}}, job)
    assert owned_by_job({"metadata": {"labels": {"job-name": "prefetch", "controller-uid": "new"}}}, job)
    assert not owned_by_job({"metadata": {"labels": {"job-name": "prefetch", "controller-uid": "old"}}}, job)
    no_uid = {"metadata": {"name": "prefetch"}}
    assert owned_by_job({"metadata": {"ownerReferences": [{"uid": "x"}], "labels": {"job-name": "prefetch"}}}, no_uid)


def test_ready_needs_every_waited_object_ready_and_no_failure() -> None:
    state = _state(_ready_lws(), [], [_pod("k3-0")])
    assert judge(state, [LWS_TARGET], now=0.0, grace_s=30).ready is True
    missing = judge(state, [LWS_TARGET, JOB_TARGET], now=0.0, grace_s=30)
    assert missing.ready is False and missing.rows[-1].state == "NotFound"
    state.objects["Pod"]["k3-0"] = _waiting(_pod("k3-0"), "CrashLoopBackOff")
    assert judge(state, [LWS_TARGET], now=0.0, grace_s=30).ready is False


def test_a_failed_job_is_the_failure_with_its_own_reason() -> None:
    job = {"kind": "Job", "metadata": {"name": "prefetch", "uid": "j1"}, "status": {}}
    job["status"]["conditions"] = [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": "m"}]
    failure = judge(WaitState(objects={"Job": {"prefetch": job}}), [JOB_TARGET], now=0.0, grace_s=30).failure
    assert failure is not None and (failure.subject, failure.reason, failure.names) == (
        "Job/prefetch",
        "DeadlineExceeded",
        {"prefetch"},
    )


def test_pod_rows_name_the_role_node_and_restarts() -> None:
    leader = _pod("k3-0")
    leader["spec"] = {"nodeName": "n1"}
    leader["status"]["containerStatuses"] = [{"name": "c", "restartCount": 2, "state": {}}]
    assert pod_row(leader, WaitState(), 0.0).detail == "group 0 leader, node n1, 2 restarts"
    worker = _pod("k3-0-1")
    worker["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] = "1"
    assert pod_row(worker, WaitState(), 0.0).detail == "group 0 worker 1, node -"
    bare = {"metadata": {"name": "p"}, "status": {}}
    assert pod_row(bare, WaitState(), 0.0).detail == "node -"


def test_the_row_keeps_since_when_it_has_had_its_state() -> None:
    state = _state(_ready_lws(), [], [_pod("k3-0")])
    judge(state, [LWS_TARGET], now=1.0, grace_s=30)
    assert judge(state, [LWS_TARGET], now=5.0, grace_s=30).rows[0].since == 1.0
    state.objects["Pod"]["k3-0"] = _waiting(_pod("k3-0"), "ErrImagePull")
    assert judge(state, [LWS_TARGET], now=6.0, grace_s=30).rows[1].since == 6.0


def test_the_current_template_key_is_unknown_without_revisions_to_read() -> None:
    state = _state(_ready_lws(), [], [])
    assert current_key(LWS_TARGET, state) is None
    assert current_key(JOB_TARGET, state) is None
    state.unavailable.add(REVISIONS)
    assert current_key(LWS_TARGET, state) is None


def test_at_the_deadline_the_first_object_not_ready_is_named_with_its_stuck_pod() -> None:
    lws = _ready_lws()
    lws["status"]["readyReplicas"] = 0
    lws["status"]["conditions"] = []
    state = _state(lws, [], [_waiting(_pod("k3-0"), "ErrImagePull")])
    subject, reason, message, names = pending([LWS_TARGET], state)
    assert (subject, reason) == ("LeaderWorkerSet/k3", "Progressing")
    assert message == "0/1 groups ready, 1 updated; Pod/k3-0: ErrImagePull m" and names == {"k3", "k3-0"}
    assert pending([JOB_TARGET], state)[:3] == ("Job/prefetch", "NotFound", "")
    assert pending([], state) == ("the set", "Timeout", "", set())


def test_terminating_pods_and_pods_of_other_sets_are_not_shown() -> None:
    leaving = _pod("k3-0")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    other = _pod("other-0")
    other["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/name"] = "other"
    state = _state(_ready_lws(), [], [leaving, other, _pod("k3-1", uid="p1")])
    assert [r.name for r in judge(state, [LWS_TARGET], now=0.0, grace_s=30).rows] == [
        "LeaderWorkerSet/k3",
        "  Pod/k3-1",
    ]


def test_no_template_key_for_a_job_an_absent_lws_or_unreadable_revisions() -> None:
    from tests.support.lws_revision import new_revision

    lws = _ready_lws()
    revision = new_revision(lws, 1)
    state = _state(lws, [revision], [])
    assert current_key(LWS_TARGET, state)  # known: the revision's hash
    job = {"kind": "Job", "metadata": {"name": "prefetch", "uid": "j"}, "status": {}}
    state.objects["Job"] = {"prefetch": job}
    assert current_key(JOB_TARGET, state) is None
    absent = _state(lws, [revision], [])
    del absent.objects["LeaderWorkerSet"]["k3"]
    assert current_key(LWS_TARGET, absent) is None
    state.unavailable.add(REVISIONS)
    assert current_key(LWS_TARGET, state) is None


def test_a_complete_job_is_ready_without_a_template_proof() -> None:
    job = {"kind": "Job", "metadata": {"name": "prefetch", "uid": "j1"}, "status": {}}
    job["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    done = judge(WaitState(objects={"Job": {"prefetch": job}}), [JOB_TARGET], now=0.0, grace_s=30)
    assert done.ready and done.rows[0].state == "Complete" and done.accepted == []


def test_an_outgoing_pod_does_not_hide_the_current_pods_after_it() -> None:
    from tests.support.lws_revision import REVISION_KEY, new_revision

    lws = _ready_lws()
    current = new_revision(lws, 1)["metadata"]["labels"][REVISION_KEY]
    old = _waiting(_pod("k3-0", "old-hash", uid="a"), "ImagePullBackOff")
    new = _waiting(_pod("k3-1", current, uid="b"), "CreateContainerError")
    state = _state(lws, [new_revision(lws, 1)], [old, new])
    failure = judge(state, [LWS_TARGET], now=0.0, grace_s=30).failure
    assert failure is not None and (failure.pod, failure.reason) == ("k3-1", "CreateContainerError")


def test_the_first_failing_pod_is_the_failure() -> None:
    state = _state(
        _ready_lws(),
        [],
        [_waiting(_pod("k3-0", uid="a"), "ImagePullBackOff"), _waiting(_pod("k3-1", uid="b"), "CrashLoopBackOff")],
    )
    failure = judge(state, [LWS_TARGET], now=0.0, grace_s=30).failure
    assert failure is not None and (failure.pod, failure.reason) == ("k3-0", "ImagePullBackOff")


def test_at_the_deadline_a_stuck_pod_is_quoted_by_its_first_problem() -> None:
    lws = _ready_lws()
    lws["status"]["conditions"] = []
    pod = _waiting(_pod("k3-0", scheduled=False), "ImagePullBackOff")
    _, _, message, _ = pending([LWS_TARGET], _state(lws, [], [pod]))
    assert message.endswith("; Pod/k3-0: Unschedulable 0/4 nodes are available")


def test_a_complete_job_beside_an_lws_with_revisions_is_ready_as_it_is() -> None:
    from tests.support.lws_revision import new_revision

    lws = _ready_lws()
    job = {"kind": "Job", "metadata": {"name": "prefetch", "uid": "j1"}, "spec": {}, "status": {}}
    job["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    state = _state(lws, [new_revision(lws, 1)], [])
    state.objects["Job"] = {"prefetch": job}
    verdict = judge(state, [JOB_TARGET], now=0.0, grace_s=30)
    assert verdict.ready and verdict.rows[0].state == "Complete"


@pytest.mark.parametrize(("now", "fails"), [(129.0, False), (130.0, True)])
def test_the_claim_grace_counts_from_when_it_was_first_seen(now: float, fails: bool) -> None:
    state = _state(_ready_lws(), [], [_claiming(_pod("k3-0"), "k3-imex")])
    state.objects[CLAIM_TEMPLATES] = {}
    assert judge(state, [LWS_TARGET], now=100.0, grace_s=30).failure is None
    assert (judge(state, [LWS_TARGET], now=now, grace_s=30).failure is not None) is fails


def test_at_the_deadline_ready_objects_are_passed_over_and_a_running_job_keeps_its_reason() -> None:
    job = {"kind": "Job", "metadata": {"name": "prefetch", "uid": "j1"}, "status": {"active": 1}}
    state = _state(_ready_lws(), [], [_pod("k3-0")])
    state.objects["Job"] = {"prefetch": job}
    subject, reason, message, _ = pending([LWS_TARGET, JOB_TARGET], state)
    assert (subject, reason, message) == ("Job/prefetch", "Running", "0 succeeded, 1 active, 0 failed")
