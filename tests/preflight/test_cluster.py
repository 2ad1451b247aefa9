"""The pure parts of the cluster probe (k3deploy/preflight/cluster.py) over recorded API objects; preflight
--cluster against a real API server is tests/realk8s/preflight/test_cluster.py."""

from __future__ import annotations

from k3deploy.lws import NAME_LABEL, colours
from k3deploy.preflight.cluster import _claim, others_pods
from k3deploy.profile import load_profile

GB300 = "kimi-k3-gb300-tp16"


def _pod(name: str, namespace: str, lws: str | None) -> dict:
    labels = {NAME_LABEL: lws} if lws else {}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": {"nodeName": "gb300-05"}}


def test_our_own_group_in_either_colour_is_not_someone_elses() -> None:
    profile = load_profile(GB300, [])
    blue, green = colours(profile.name)
    pods = [
        _pod("blue", "kimi-k3", blue),
        _pod("green", "kimi-k3", green),
        _pod("another-model", "kimi-k3", "another-model"),
        _pod("same-name-elsewhere", "other", blue),
        _pod("training", "kimi-k3", None),
    ]
    assert [p["metadata"]["name"] for p in others_pods(pods, profile, "kimi-k3")] == [
        "another-model",
        "same-name-elsewhere",
        "training",
    ]


def test_a_claims_capacity_is_the_bound_volumes_else_its_request() -> None:
    spec = {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "shared",
        "resources": {"requests": {"storage": "2Ti"}},
    }
    pending = _claim({"metadata": {"name": "cache"}, "spec": spec, "status": {"phase": "Pending"}})
    bound = _claim(
        {"metadata": {"name": "cache"}, "spec": spec, "status": {"phase": "Bound", "capacity": {"storage": "4Ti"}}}
    )
    assert (pending.capacity, pending.phase, pending.access_modes) == ("2Ti", "Pending", ["ReadWriteMany"])
    assert (bound.capacity, bound.phase, bound.storage_class) == ("4Ti", "Bound", "shared")
