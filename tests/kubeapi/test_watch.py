"""Watches through the official client: initial state, resume from a resourceVersion, selector transitions,
bookmarks, timeoutSeconds, 410 Gone for compacted versions, and a watch dropped mid-stream.
"""

from __future__ import annotations

import json

import pytest
import urllib3
from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

from tests.kubeapi.server import KubeApiServer


@pytest.fixture
def core(kube: KubeApiServer) -> client.CoreV1Api:
    """CoreV1Api on a server with the controllers off."""
    kube.controllers.disable()
    return client.CoreV1Api(config.new_client_from_config(str(kube.kubeconfig)))


def _cm(core: client.CoreV1Api, name: str, labels: dict[str, str] | None = None) -> client.V1ConfigMap:
    return core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": labels or {}}})


def _events(core: client.CoreV1Api, **kw: object) -> list[tuple[str, str]]:
    stream = watch.Watch().stream(core.list_namespaced_config_map, "default", timeout_seconds=1, **kw)
    return [(e["type"], e["object"].metadata.name) for e in stream]


def test_watch_without_version_starts_with_the_current_objects(core: client.CoreV1Api) -> None:
    _cm(core, "a")
    _cm(core, "b")
    assert _events(core) == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_resumes_after_a_list_resource_version(core: client.CoreV1Api) -> None:
    _cm(core, "before")
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    _cm(core, "a")
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    core.delete_namespaced_config_map("a", "default")
    assert _events(core, resource_version=rv) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_selector_watch_sees_objects_enter_and_leave(core: client.CoreV1Api) -> None:
    _cm(core, "a", {"app": "k3"})
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"app": "other"}}})
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"app": "k3"}}})
    _cm(core, "b", {"app": "other"})
    assert _events(core, resource_version=rv, label_selector="app=k3") == [("DELETED", "a"), ("ADDED", "a")]
    assert _events(core, resource_version=rv, field_selector="metadata.name=b") == [("ADDED", "b")]


def test_compacted_resource_version_is_gone(kube: KubeApiServer, core: client.CoreV1Api) -> None:
    _cm(core, "a")
    old = core.list_namespaced_config_map("default").metadata.resource_version
    _cm(core, "b")
    kube.store.compact()
    with pytest.raises(ApiException) as exc:
        _events(core, resource_version=old)
    assert exc.value.status == 410 and "too old resource version" in exc.value.reason
    resp = core.list_namespaced_config_map(
        "default", watch=True, resource_version=old, timeout_seconds=1, _preload_content=False
    )
    raw = [json.loads(line) for line in resp.data.decode().splitlines()]
    assert raw == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"too old resource version: {old} ({kube.store.rv})",
                "reason": "Expired",
                "code": 410,
            },
        }
    ]
    # Re-listing gives a version to resume from.
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    _cm(core, "c")
    assert _events(core, resource_version=rv) == [("ADDED", "c")]


def test_bounded_history_expires_old_versions(kube_factory) -> None:  # fixture factory
    kube = kube_factory(history_limit=3, controllers=False)
    core = client.CoreV1Api(config.new_client_from_config(str(kube.kubeconfig)))
    start = core.list_namespaced_config_map("default").metadata.resource_version
    for i in range(5):
        _cm(core, f"c{i}")
    with pytest.raises(ApiException) as exc:
        _events(core, resource_version=start)
    assert exc.value.status == 410
    recent = str(kube.store.rv - 2)
    assert _events(core, resource_version=recent) == [("ADDED", "c3"), ("ADDED", "c4")]


def test_bookmarks_carry_the_current_resource_version(kube: KubeApiServer, core: client.CoreV1Api) -> None:
    kube.bookmark_interval = 0.1
    _cm(core, "a")
    rv = kube.store.rv
    events = list(
        watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=str(rv),
            allow_watch_bookmarks=True,
            timeout_seconds=3,
            deserialize=False,
        )
    )
    assert len(events) > 1 and {e["type"] for e in events} == {"BOOKMARK"}
    assert events[-1]["object"]["metadata"]["resourceVersion"] == str(rv)


def test_bookmarks_come_a_minute_apart_and_two_seconds_before_the_deadline(
    kube: KubeApiServer, core: client.CoreV1Api
) -> None:
    """k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go nextBookmarkTime: every bookmarkFrequency (a minute)
    and 2 s before the watch times out; a watch shorter than 2 s gets none."""
    assert kube.bookmark_interval == 60.0
    rv = str(kube.store.rv)
    stream = list(
        watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=3,
            deserialize=False,
        )
    )
    assert [e["type"] for e in stream] == ["BOOKMARK"]
    short = list(
        watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=1,
            deserialize=False,
        )
    )
    assert short == []


def test_dropped_watch_resumes_from_the_last_event(kube: KubeApiServer, core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    for name in ("a", "b", "c"):
        _cm(core, name)
    rule = kube.faults.add("GET", r"/configmaps\?.*watch=true", drop=True, drop_after=1)
    seen: list[str] = []
    w = watch.Watch()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for event in w.stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5):
            seen.append(event["object"].metadata.name)
    assert seen == ["a"] and rule.hits == 1
    assert _events(core, resource_version=w.resource_version) == [("ADDED", "b"), ("ADDED", "c")]


def test_dynamic_client_watch(kube: KubeApiServer) -> None:
    kube.controllers.disable()
    kube.add_crds()
    dyn = dynamic.DynamicClient(config.new_client_from_config(str(kube.kubeconfig)))
    lws = dyn.resources.get(api_version="leaderworkerset.x-k8s.io/v1", kind="LeaderWorkerSet")
    rv = lws.get(namespace="default").metadata.resourceVersion
    lws.create(
        body={
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "x"},
            "spec": {
                "replicas": 1,
                "leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "w", "image": "i"}]}}},
            },
        },
        namespace="default",
    )
    lws.status.patch(
        body={"status": {"readyReplicas": 1}},
        name="x",
        namespace="default",
        content_type="application/merge-patch+json",
    )
    events = [
        (e["type"], e["object"].status.readyReplicas if e["object"].status else None)
        for e in lws.watch(namespace="default", resource_version=rv, timeout=1)
    ]
    assert events == [("ADDED", None), ("MODIFIED", 1)]


@pytest.mark.parametrize("how", ["drop", "close", "expire"])
def test_break_watches_ends_open_streams(kube: KubeApiServer, core: client.CoreV1Api, how: str) -> None:
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    resp = core.list_namespaced_config_map(
        "default", watch=True, resource_version=rv, timeout_seconds=30, _preload_content=False
    )
    _cm(core, "a")
    lines = []
    kube.wait_for(lambda: kube.watch_events_sent >= 1)
    kube.break_watches(how)
    try:
        for chunk in resp.stream(1024):
            lines += chunk.decode().splitlines()
    except urllib3.exceptions.ProtocolError:
        lines.append("<dropped>")
    events = [json.loads(line)["type"] if line.startswith("{") else line for line in lines]
    assert events == {"drop": ["ADDED", "<dropped>"], "close": ["ADDED"], "expire": ["ADDED", "ERROR"]}[how]
    if how == "expire":
        assert json.loads(lines[-1])["object"]["code"] == 410
        with pytest.raises(ApiException) as exc:
            _events(core, resource_version=rv)
        assert exc.value.status == 410
