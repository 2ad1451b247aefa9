"""KubeApi, the raw-dict boundary, against the real kube-apiserver through a real kubeconfig: server-side apply with
its managedFields and server dry run, a list's resourceVersion and a watch from it, an unserved kind, a real RBAC
denial, a real field-manager conflict; a watch ended by 410 and a dropped connection through the fault proxy
(tests/realk8s/faults.py), since a real server gives neither on demand."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from k3deploy.errors import CheckFailed, EnvironmentProblem, KubeError
from k3deploy.kube.api import KubeApi
from k3deploy.kube.client import KubeOptions
from tests.realk8s.fault_fixtures import ProxiedPlane
from tests.realk8s.plane import Plane

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(300)]
#: The namespace's own ConfigMap (kube-root-ca.crt, from the root-ca-cert-publisher) is left out by this label.
SELECTOR = "test=kube-api"


def _api(kubeconfig: Path | None) -> KubeApi:
    assert kubeconfig is not None
    return KubeApi(KubeOptions(kubeconfig=str(kubeconfig)))


def _cm(namespace: str, value: str = "1") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": namespace, "labels": {"test": "kube-api"}},
        "data": {"a": value},
    }


def test_apply_get_list_watch_conflict_delete_round_trip(realk8s: Plane, namespace: str) -> None:
    api = _api(realk8s.admin_kubeconfig)
    assert api.get("v1", "ConfigMap", "c", namespace) is None
    _, start = api.list("v1", "ConfigMap", namespace, label_selector=SELECTOR)
    created = api.apply(_cm(namespace))
    assert created["data"] == {"a": "1"}
    assert [(m["manager"], m["operation"]) for m in created["metadata"]["managedFields"]] == [("k3deploy", "Apply")]
    dry = api.apply(_cm(namespace, "2"), dry_run=True)
    assert dry["data"] == {"a": "2"} and api.get("v1", "ConfigMap", "c", namespace)["data"] == {"a": "1"}
    items, version = api.list("v1", "ConfigMap", namespace, label_selector=SELECTOR)
    assert [i["metadata"]["name"] for i in items] == ["c"]
    assert int(version) >= int(created["metadata"]["resourceVersion"])

    # A watch from the version listed before the apply sees the apply (bookmarks aside).
    events = (
        e
        for e in api.watch("v1", "ConfigMap", namespace, start, timeout_s=10, label_selector=SELECTOR)
        if e["type"] != "BOOKMARK"
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in itertools.islice(events, 1)] == [("ADDED", "c")]

    # Another field manager takes .data.a: k3deploy's apply without force is the server's 409 with its Status.
    res = api.resource("v1", "ConfigMap")
    api.dynamic.server_side_apply(
        res,
        body=_cm(namespace, "other"),
        name="c",
        namespace=namespace,
        field_manager="someone-else",
        force_conflicts=True,
    )
    with pytest.raises(KubeError) as info:
        api.apply(_cm(namespace, "3"))
    error = info.value
    assert (error.status, error.reason, error.exit_code, error.transient) == (409, "Conflict", 1, False)
    assert error.message.startswith(f"apply {namespace}/ConfigMap/c: conflict: ")
    assert [cause["field"] for cause in error.body["details"]["causes"]] == [".data.a"]
    assert "someone-else" in error.body["details"]["causes"][0]["message"]

    assert api.delete("v1", "ConfigMap", "c", namespace) is True
    assert api.delete("v1", "ConfigMap", "c", namespace) is False


def test_unserved_kinds_and_forbidden_verbs_are_domain_errors(realk8s: Plane, namespace: str) -> None:
    api = _api(realk8s.admin_kubeconfig)
    assert api.served("widgets.k3deploy.test/v1", "Widget") is False
    assert api.get("widgets.k3deploy.test/v1", "Widget", "x", namespace) is None
    with pytest.raises(CheckFailed, match="does not serve Widget"):
        api.apply(
            {
                "apiVersion": "widgets.k3deploy.test/v1",
                "kind": "Widget",
                "metadata": {"name": "x", "namespace": namespace},
            }
        )
    # realk8s-user holds no Role: the real RBAC authorizer's 403 (discovery is open to every authenticated user).
    user = _api(realk8s.user_kubeconfig)
    with pytest.raises(KubeError, match="forbidden") as info:
        user.list("v1", "ConfigMap", namespace)
    assert (info.value.status, info.value.reason, info.value.exit_code, info.value.transient) == (
        403,
        "Forbidden",
        3,
        False,
    )
    assert isinstance(info.value, EnvironmentProblem)  # still the domain error of its exit code
    assert info.value.body["kind"] == "Status" and info.value.body["code"] == 403
    assert 'User "realk8s-user" cannot list resource "configmaps"' in info.value.body["message"]


def test_a_watch_ends_in_kube_errors_410_gone_and_a_dropped_connection(
    fault_proxy: ProxiedPlane, namespace: str
) -> None:
    api = _api(fault_proxy.kubeconfig)
    _, version = api.list("v1", "ConfigMap", namespace)
    fault_proxy.faults.add("GET", r"watch=", 410, message="too old resource version")
    with pytest.raises(KubeError) as gone:
        list(api.watch("v1", "ConfigMap", namespace, version, timeout_s=5))
    assert (gone.value.status, gone.value.transient) == (410, False)
    # As the real server ends a watch whose version etcd compacted: an ERROR event carrying a 410 Status.
    api.apply(_cm(namespace))
    fault_proxy.faults.add("GET", r"watch=", expire=True, drop_after=1)
    with pytest.raises(KubeError) as expired:
        list(api.watch("v1", "ConfigMap", namespace, version, timeout_s=5, label_selector=SELECTOR))
    assert (expired.value.status, expired.value.transient) == (410, False)
    fault_proxy.faults.add("GET", r"watch=", drop=True)
    with pytest.raises(KubeError) as dropped:
        list(api.watch("v1", "ConfigMap", namespace, version, timeout_s=5))
    assert (dropped.value.status, dropped.value.reason, dropped.value.transient) == (0, "Unreachable", True)
