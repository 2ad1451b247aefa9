"""The group-by-group rollout's rules pinned at their boundaries, both sides (the survivors of tests/mutation/run on
k3deploy/rollout/groups.py): which applies are walked (same N, N >= 2), which pods are a group's, when a group is
done or failed, and which --group-endpoint templates are accepted."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.rollout.groups import (
    check_group_template,
    group_endpoint,
    group_pods,
    group_state,
    partitioned,
    replicas_of,
    steps_groups,
)
from tests.rollout.test_groups import _lws, _pod

NAME = "leaderworkerset.sigs.k8s.io/name"
GROUP = "leaderworkerset.sigs.k8s.io/group-index"


def test_a_set_without_spec_replicas_is_one_group_and_no_set_is_none() -> None:
    lws = _lws()
    del lws["spec"]["replicas"]
    assert (replicas_of(lws), replicas_of({}), replicas_of(None), replicas_of(_lws(3))) == (1, 1, 0, 3)


@pytest.mark.parametrize(("replicas", "walked"), [(1, False), (2, True), (3, True)])
def test_only_two_or_more_groups_are_walked_one_group_is_the_controllers(replicas: int, walked: bool) -> None:
    assert steps_groups(_lws(replicas), _lws(replicas)) is walked


def test_a_set_without_a_rollout_strategy_gets_a_rolling_update_with_the_partition() -> None:
    lws = _lws()
    del lws["spec"]["rolloutStrategy"]
    assert partitioned(lws, 1)["spec"]["rolloutStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"partition": 1},
    }
    assert "rolloutStrategy" not in lws["spec"]


def _member(name: str, lws: str = "k3", group: str = "1", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {NAME: lws, GROUP: group}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def test_a_groups_pods_are_the_live_ones_of_that_set_and_that_group_only() -> None:
    mine = [_member("k3-1"), _member("k3-1-1")]
    others = [
        _member("k3-0", group="0"),
        _member("k3-2", group="2"),
        _member("other-1", lws="other"),
        _member("k3-1-2", deleting=True),
        {"metadata": {"name": "bare"}},
        {"metadata": {"name": "unlabelled", "labels": {}}},
    ]
    assert group_pods([others[0], *mine, *others[1:]], "k3", 1) == mine
    assert group_pods(mine, "k3", 0) == []


@pytest.mark.parametrize("reason", ["CrashLoopBackOff", "ImagePullBackOff", "CreateContainerError"])
def test_a_fatal_problem_of_a_new_pod_fails_the_group_naming_it(reason: str) -> None:
    pod = _pod("k3-1-1", "new", False, reason)
    pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"] = "back-off 5m0s"
    assert group_state([_pod("k3-1", "new"), pod], "new", 2) == (False, f"pod k3-1-1: {reason}: back-off 5m0s")
    del pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
    assert group_state([_pod("k3-1", "new"), pod], "new", 2) == (False, f"pod k3-1-1: {reason}")


def test_a_problem_that_may_clear_by_waiting_does_not_fail_the_group() -> None:
    for reason in ("ContainerCreating", "ErrImagePull"):  # a first failed pull is retried before it backs off
        waiting = _pod("k3-1-1", "new", False, reason)
        assert group_state([_pod("k3-1", "new"), waiting], "new", 2) == (False, None)
    unscheduled = _pod("k3-1-1", "new", False)
    unscheduled["status"]["conditions"].append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable"})
    assert group_state([_pod("k3-1", "new"), unscheduled], "new", 2) == (False, None)


@pytest.mark.parametrize(("count", "done"), [(1, False), (2, True), (3, False)])
def test_a_group_is_done_with_exactly_size_pods_all_on_the_key(count: int, done: bool) -> None:
    pods = [_pod(f"k3-1-{i}", "new") for i in range(count)]
    assert group_state(pods, "new", 2) == (done, None)


def test_a_new_pod_not_running_is_not_ready_even_with_a_ready_condition() -> None:
    pending = _pod("k3-1-1", "new")
    pending["status"]["phase"] = "Pending"
    assert group_state([_pod("k3-1", "new"), pending], "new", 2) == (False, None)


def test_the_group_endpoint_template_fills_every_field_and_drops_a_trailing_slash() -> None:
    template = "http://{pod}.{lws}.{namespace}.svc:9000/g{group}/"
    assert group_endpoint(template, "kimi", "ml", 3, 8000) == "http://kimi-3.kimi.ml.svc:9000/g3"
    assert group_endpoint("", "kimi", "ml", 0, 8000) == "http://kimi-0.kimi.ml.svc:8000"


@pytest.mark.parametrize(
    "template",
    ["http://{pod}.{lws}.{namespace}.svc:8000/{group}", "https://{pod}:8443", "http://127.0.0.1:9000/{lws}/{group}"],
)
def test_a_template_naming_only_the_four_fields_and_making_a_url_is_kept(template: str) -> None:
    assert check_group_template(template) == template


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("http://{nope}:8000", "'http://{nope}:8000' names {nope}; it may use only {pod}, {lws}, {group}, {namespace}"),
        ("http://{b}{a}{pod}:8000", "names {a}, {b}; it may use only"),
        ("http://{pod:8000", "'http://{pod:8000' is not a valid template: "),
        ("http://{pod!x}:8000", "'http://{pod!x}:8000' is not a valid template: "),
        ("http://{group:s}:8000", "'http://{group:s}:8000' is not a valid template: "),
        # A format spec is filled in only by format(): a name, an index or an attribute in it fails there.
        ("http://{pod:{x}}:8000", "'http://{pod:{x}}:8000' is not a valid template: 'x'"),
        ("http://{pod:{0}}:8000", "'http://{pod:{0}}:8000' is not a valid template: "),
        ("http://{pod:{lws.x}}:8000", "'http://{pod:{lws.x}}:8000' is not a valid template: "),
        ("http://{pod.real}:8000", "names {pod.real}"),
        ("{pod}:8000", "is not an http(s) URL"),
    ],
)
def test_a_template_with_other_names_or_that_does_not_fill_in_is_refused_saying_why(template: str, why: str) -> None:
    with pytest.raises(ValueError) as caught:
        check_group_template(template)
    assert why in str(caught.value)


def test_a_template_is_tried_on_group_0_the_first_real_group() -> None:
    """Groups are numbered from 0: a template that puts the group into the port fills in to a valid URL for each."""
    assert check_group_template("http://10.0.0.9:80{group}") == "http://10.0.0.9:80{group}"
    assert group_endpoint("http://10.0.0.9:80{group}", "kimi", "ml", 1, 8000) == "http://10.0.0.9:801"
    # ... and one that gives group 0 port 0 is refused, though every later group would get a port.
    with pytest.raises(ValueError, match="port 0 is not a port to connect to"):
        check_group_template("http://10.0.0.9:{group}")
