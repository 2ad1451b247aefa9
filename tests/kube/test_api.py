"""KubeApi, the raw-dict boundary, against the test API server through a real kubeconfig."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from k3deploy.errors import CheckFailed, EnvironmentProblem, KubeError
from k3deploy.kube.api import KubeApi, object_key
from k3deploy.kube.client import KubeOptions


@pytest.fixture
def api(kube: Any) -> KubeApi:
    return KubeApi(KubeOptions(kubeconfig=str(kube.kubeconfig)))


CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}}


def test_apply_get_list_delete_round_trip(api: KubeApi, kube: Any) -> None:
    assert api.get("v1", "ConfigMap", "c", "default") is None
    created = api.apply(CM)
    assert created["data"] == {"a": "1"}
    assert [m["manager"] for m in created["metadata"]["managedFields"]] == ["k3deploy"]
    dry = api.apply({**CM, "data": {"a": "2"}}, dry_run=True)
    assert dry["data"] == {"a": "2"} and api.get("v1", "ConfigMap", "c", "default")["data"] == {"a": "1"}
    items, version = api.list("v1", "ConfigMap", "default")
    assert [i["metadata"]["name"] for i in items] == ["c"] and int(version) >= int(
        created["metadata"]["resourceVersion"]
    )
    assert api.delete("v1", "ConfigMap", "c", "default") is True
    assert api.delete("v1", "ConfigMap", "c", "default") is False


def test_watch_yields_raw_events_from_a_version(api: KubeApi) -> None:
    _, version = api.list("v1", "ConfigMap", "default")
    api.apply(CM)
    events = list(itertools.islice(api.watch("v1", "ConfigMap", "default", version, timeout_s=5), 1))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "c")]


def test_unserved_kinds_and_forbidden_verbs_are_domain_errors(api: KubeApi, kube: Any) -> None:
    assert api.served("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet") is False
    assert api.get("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "x", "default") is None
    with pytest.raises(CheckFailed, match="does not serve LeaderWorkerSet"):
        api.apply(
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {"name": "x", "namespace": "default"},
            }
        )
    kube.faults.add("GET", r"/configmaps", 403, times=None)
    with pytest.raises(KubeError, match="forbidden") as info:
        api.list("v1", "ConfigMap", "default")
    assert (info.value.status, info.value.reason, info.value.exit_code, info.value.transient) == (
        403,
        "Forbidden",
        3,
        False,
    )
    assert isinstance(info.value, EnvironmentProblem)  # still the domain error of its exit code
    assert info.value.body["kind"] == "Status" and info.value.body["code"] == 403


def test_object_key() -> None:
    assert object_key(CM) == "default/ConfigMap/c"
    assert object_key({"kind": "Namespace", "metadata": {"name": "n"}}) == "Namespace/n"


def test_a_conflicting_apply_is_a_kube_error_with_the_servers_status_object(api: KubeApi) -> None:
    api.apply(CM)
    res = api.resource("v1", "ConfigMap")
    api.dynamic.server_side_apply(
        res,
        body={**CM, "data": {"a": "other"}},
        name="c",
        namespace="default",
        field_manager="someone-else",
        force_conflicts=True,
    )
    with pytest.raises(KubeError) as info:
        api.apply({**CM, "data": {"a": "3"}})
    error = info.value
    assert (error.status, error.reason, error.exit_code, error.transient) == (409, "Conflict", 1, False)
    assert error.message.startswith("apply default/ConfigMap/c: conflict: ")
    assert [cause["field"] for cause in error.body["details"]["causes"]] == [".data.a"]
    assert "someone-else" in error.body["details"]["causes"][0]["message"]


def test_a_watch_ends_in_kube_errors_410_gone_and_a_dropped_connection(api: KubeApi, kube: Any) -> None:
    _, version = api.list("v1", "ConfigMap", "default")
    kube.faults.add("GET", r"watch=", 410, message="too old resource version")
    with pytest.raises(KubeError) as gone:
        list(api.watch("v1", "ConfigMap", "default", version, timeout_s=5))
    assert (gone.value.status, gone.value.transient) == (410, False)
    kube.faults.add("GET", r"watch=", drop=True)
    with pytest.raises(KubeError) as dropped:
        list(api.watch("v1", "ConfigMap", "default", version, timeout_s=5))
    assert (dropped.value.status, dropped.value.reason, dropped.value.transient) == (0, "Unreachable", True)
