"""`observe` (targets/kubernetes/observe.py): the Kubernetes target's plan reads what is live once, from the set the
command rendered. Against the recording stand-in (tests/rollout/recorded/replay.py `RecordedApi`, which answers only
the reads it holds and lists every call), each read is counted and nothing renders a second set."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from k3deploy.kobject import KubeObject
from k3deploy.lws import API_VERSION, colours
from k3deploy.profile import load_profile
from k3deploy.render import manifests
from k3deploy.render.node_preflight import is_node_preflight
from k3deploy.reporter import Reporter
from k3deploy.rollout.colours import api_service_of, lws_of, preview_name
from k3deploy.rollout.plan import UP_STRATEGY, LiveLws, Strategy
from k3deploy.targets.kubernetes.observe import observe
from tests.preflight.test_checks_cluster import CLIQUE_A, CLIQUE_B, gb300
from tests.rollout.recorded.replay import RecordedApi, get_key, list_key

K3 = "kimi-k3-gb300-tp16"
PROFILE = load_profile(K3)
NS = PROFILE.kubernetes.namespace
BLUE, GREEN = colours(K3)
SET = manifests.rendered_objects(PROFILE)
SERVICE = api_service_of(SET, K3)


def _node(name: str, clique: str) -> KubeObject:
    return {
        "metadata": {"name": name, "labels": dict(gb300(name, clique).labels)},
        "status": {
            "allocatable": {"nvidia.com/gpu": "4", "cpu": "144", "memory": "900Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(node: str, namespace: str, lws: str | None) -> KubeObject:
    labels = {"leaderworkerset.sigs.k8s.io/name": lws} if lws else {}
    return {
        "metadata": {"name": f"pod-on-{node}", "namespace": namespace, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"resources": {"requests": {"nvidia.com/gpu": "4"}}}]},
        "status": {"phase": "Running"},
    }


#: Clique A: four trays, one held by the live green group (its GPUs count as free: the upgrade replaces it).
#: Clique B: four trays, one held by another tenant's pod, so no group fits there.
NODES = [_node(f"a{i}", CLIQUE_A) for i in range(4)] + [_node(f"b{i}", CLIQUE_B) for i in range(4)]
PODS = [_pod("a0", NS, GREEN), _pod("b0", "other-team", None)]


def _live_green() -> KubeObject:
    lws = copy.deepcopy(lws_of(SET))
    assert lws is not None
    lws["metadata"]["name"] = GREEN
    lws["metadata"]["generation"] = 3
    return lws


def _reads(*, green_preview: bool = False) -> dict[str, dict[str, Any]]:
    """A cluster where green serves: the API Service selects it, blue is gone, maybe a preview Service is left."""
    assert SERVICE is not None
    live_service = copy.deepcopy(SERVICE)
    live_service["spec"]["selector"]["leaderworkerset.sigs.k8s.io/name"] = GREEN
    get = {
        get_key("v1", "Service", SERVICE["metadata"]["name"], NS): live_service,
        get_key(API_VERSION, "LeaderWorkerSet", BLUE, NS): None,
        get_key(API_VERSION, "LeaderWorkerSet", GREEN, NS): _live_green(),
        get_key("v1", "Service", preview_name(BLUE), NS): None,
        get_key("v1", "Service", preview_name(GREEN), NS): {"kind": "Service"} if green_preview else None,
    }
    lists = {list_key("v1", "Node", None, None, None): NODES, list_key("v1", "Pod", None, None, None): PODS}
    return {"get": get, "list": lists}


def _no_render(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    builds: list[object] = []
    monkeypatch.setattr(manifests, "context", lambda profile: builds.append(profile))
    return builds


def test_one_look_reads_each_thing_once_and_renders_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    builds = _no_render(monkeypatch)
    api = RecordedApi(_reads(green_preview=True))
    seen = observe(api, PROFILE, list(SET), UP_STRATEGY, Reporter(interactive=False))
    assert api.calls == [
        f"list {list_key('v1', 'Node', None, None, None)}",
        f"list {list_key('v1', 'Pod', None, None, None)}",
        f"get {get_key('v1', 'Service', SERVICE['metadata']['name'], NS)}",
        f"get {get_key(API_VERSION, 'LeaderWorkerSet', BLUE, NS)}",
        f"get {get_key('v1', 'Service', preview_name(BLUE), NS)}",
        f"get {get_key('v1', 'Service', preview_name(GREEN), NS)}",
        f"get {get_key(API_VERSION, 'LeaderWorkerSet', GREEN, NS)}",
    ]
    assert builds == []  # the command's set is pinned, not rendered again
    assert seen.serving == GREEN and lws_of(seen.objects)["metadata"]["name"] == GREEN
    assert seen.hosts == ["a0", "a1", "a2", "a3"]  # clique B cannot hold a group beside the other tenant
    assert capsys.readouterr().err.splitlines() == ["  node-preflight checks every eligible node: a0, a1, a2, a3"]
    (job,) = [o for o in seen.objects if is_node_preflight(o)]
    assert job["spec"]["completions"] == 4 and job["spec"]["completionMode"] == "Indexed"
    assert [o["metadata"]["name"] for o in seen.live.leftovers] == [preview_name(GREEN)]
    assert seen.live.lws == LiveLws(live=_live_green())


def test_a_dry_run_of_a_profile_with_hosts_reads_only_the_colour_and_the_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """Named hosts need no node or pod list; a dry run neither clears leftovers nor judges the group."""
    _no_render(monkeypatch)
    pinned = load_profile(K3, ["kubernetes.node_preflight_hosts=[a1,a2,a3,a4]"])
    api = RecordedApi(_reads())
    seen = observe(api, pinned, list(SET), Strategy(dry_run=True), Reporter(quiet=True))
    assert api.calls == [f"get {get_key('v1', 'Service', SERVICE['metadata']['name'], NS)}"]
    assert seen.hosts == [] and seen.live.leftovers == [] and seen.live.lws == LiveLws()
    assert [o for o in seen.objects if is_node_preflight(o)] == [o for o in SET if is_node_preflight(o)]
