"""Pure helpers of the group-by-group rollout and of blue-green colours."""

from __future__ import annotations

from k3deploy.rollout.colours import (
    colours,
    other,
    preview_service,
    recoloured,
    selected,
)
from k3deploy.rollout.groups import (
    group_endpoint,
    group_state,
    partitioned,
    steps_groups,
)

NAME = "leaderworkerset.sigs.k8s.io/name"
KEY = "leaderworkerset.sigs.k8s.io/template-revision-hash"


def _lws(replicas: int = 2) -> dict:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "k3", "namespace": "ns"},
        "spec": {
            "replicas": replicas,
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0},
            },
            "leaderWorkerTemplate": {
                "size": 2,
                "workerTemplate": {
                    "spec": {
                        "affinity": {
                            "podAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [
                                    {"labelSelector": {"matchLabels": {NAME: "k3"}}}
                                ]
                            }
                        }
                    }
                },
            },
        },
    }


def _pod(name: str, key: str, ready: bool = True, waiting: str | None = None) -> dict:
    status: dict = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if waiting:
        status["containerStatuses"] = [{"name": "vllm", "state": {"waiting": {"reason": waiting}}}]
    return {"metadata": {"name": name, "labels": {KEY: key}}, "status": status}


def test_partitioned_copies_and_keeps_the_rest_of_the_strategy() -> None:
    lws = _lws()
    held = partitioned(lws, 2)
    assert held["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] == {
        "maxUnavailable": 1,
        "maxSurge": 0,
        "partition": 2,
    }
    assert "partition" not in lws["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]


def test_only_a_change_of_a_live_set_of_two_or_more_same_sized_groups_is_walked() -> None:
    assert steps_groups(_lws(2), _lws(2)) and steps_groups(_lws(4), _lws(4))
    assert not steps_groups(None, _lws(2))
    assert not steps_groups(_lws(1), _lws(1))
    assert not steps_groups(_lws(2), _lws(3))


def test_a_group_is_done_only_when_every_pod_runs_the_new_key_and_is_ready() -> None:
    assert group_state([_pod("k3-1", "new"), _pod("k3-1-1", "new")], "new", 2) == (True, None)
    assert group_state([_pod("k3-1", "new"), _pod("k3-1-1", "old")], "new", 2) == (False, None)
    assert group_state([_pod("k3-1", "new")], "new", 2) == (False, None)
    assert group_state([_pod("k3-1", "new"), _pod("k3-1-1", "new", ready=False)], "new", 2) == (False, None)
    assert group_state([_pod("k3-1", "new"), _pod("k3-1-1", "new")], "", 2) == (False, None)
    # A crash of a new pod fails at once; one of an outgoing pod is not the new template's.
    done, fatal = group_state([_pod("k3-1", "new", False, "CrashLoopBackOff"), _pod("k3-1-1", "old")], "new", 2)
    assert not done and fatal == "pod k3-1: CrashLoopBackOff"
    assert group_state([_pod("k3-1", "new", False), _pod("k3-1-1", "old", False, "CrashLoopBackOff")], "new", 2) == (
        False,
        None,
    )


def test_group_endpoint_is_the_leaders_dns_name_or_the_template() -> None:
    assert group_endpoint(None, "k3", "ns", 1, 8000) == "http://k3-1.k3.ns.svc:8000"
    assert group_endpoint("http://127.0.0.1:9/{pod}/", "k3", "ns", 1, 8000) == "http://127.0.0.1:9/k3-1"


def test_colours_alternate_and_recolouring_moves_every_selector_by_name() -> None:
    assert colours("k3") == ("k3", "k3-green")
    assert other("k3", "k3") == "k3-green" and other("k3", "k3-green") == "k3"
    service = {"kind": "Service", "metadata": {"name": "k3-api"}, "spec": {"selector": {NAME: "k3", "x": "k3"}}}
    pdb = {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "k3"},
        "spec": {"selector": {"matchLabels": {NAME: "k3"}}},
    }
    green = recoloured([_lws(), service, pdb], "k3", "k3-green")
    assert green[0]["metadata"]["name"] == "k3-green"
    affinity = green[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["affinity"]["podAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]["matchLabels"] == {
        NAME: "k3-green"
    }
    assert green[1]["spec"]["selector"] == {NAME: "k3-green", "x": "k3"} and green[1]["metadata"]["name"] == "k3-api"
    assert green[2]["spec"]["selector"]["matchLabels"] == {NAME: "k3-green"} and green[2]["metadata"]["name"] == "k3"
    assert selected(service) == "k3"
    preview = preview_service(service, "k3-green")
    assert preview["metadata"]["name"] == "k3-green-preview" and selected(preview) == "k3-green"
    assert recoloured([service], "k3", "k3") == [service]
