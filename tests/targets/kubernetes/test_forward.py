"""Which way a smoke gate reaches its server (targets/kubernetes/forward.py): --group-endpoint for the per-group gates, then
--endpoint (or kubernetes.endpoint_override) for every gate, else a port-forward to a ready leader the API Service
selects; the port-forward itself runs on the real plane (tests/realk8s/test_forward.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from k3deploy.errors import SmokeUnreachable
from k3deploy.profile import load_profile
from k3deploy.targets import DeployOptions
from k3deploy.targets.kubernetes import forward

PROFILE = "kimi-k3-gb300-tp16"
SELECTOR = {"leaderworkerset.sigs.k8s.io/name": PROFILE, "leaderworkerset.sigs.k8s.io/worker-index": "0"}


def _pod(name: str, group: int, *, ready: bool = True, leaving: bool = False, worker: int = 0) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {
            **SELECTOR,
            "leaderworkerset.sigs.k8s.io/group-index": str(group),
            "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
        },
    }
    if leaving:
        meta["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    return {"metadata": meta, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]}}


class Api:
    """The two reads `serving_leader` makes: the API Service and the pods its selector names."""

    def __init__(self, pods: list[dict[str, Any]], selector: dict[str, str] | None = None) -> None:
        self.pods, self.selector = pods, SELECTOR if selector is None else selector
        self.selectors: list[str | None] = []

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        assert (kind, name, namespace) == ("Service", f"{PROFILE}-api", "kimi-k3")
        return {"spec": {"selector": self.selector}}

    def list(self, api_version: str, kind: str, namespace: str | None = None, **kw: Any) -> tuple[list, str]:
        self.selectors.append(kw.get("label_selector"))
        return self.pods, "1"


def _target(api: Api | None = None, **options: Any) -> Any:
    return SimpleNamespace(api=api, options=DeployOptions(**options))


def test_group_endpoint_then_endpoint_override_every_gate() -> None:
    profile = load_profile(PROFILE, [])
    target = _target(endpoint="http://10.0.0.5:8000/", group_endpoint="http://gw/{pod}")
    with forward.reach(target.api, target.options, profile, PROFILE, 1) as way:
        assert (way.kind, way.url) == ("endpoint", f"http://gw/{PROFILE}-1")
    with forward.reach(target.api, target.options, profile) as way:  # the final smoke: --endpoint
        assert (way.kind, way.url, way.describe()) == (
            "endpoint",
            "http://10.0.0.5:8000",
            "via the given endpoint http://10.0.0.5:8000",
        )
    bare = _target(endpoint="http://10.0.0.5:8000")
    with forward.reach(bare.api, bare.options, profile, PROFILE, 0) as way:
        assert way.url == "http://10.0.0.5:8000"  # a per-group gate without --group-endpoint
    override = load_profile(PROFILE, ["kubernetes.endpoint_override=http://gateway:80"])
    with forward.reach(None, DeployOptions(), override, PROFILE, 0) as way:
        assert way.url == "http://gateway:80"


def test_the_final_smoke_forwards_to_the_lowest_ready_leader_the_service_selects() -> None:
    profile = load_profile(PROFILE, [])
    api = Api(
        [
            _pod(f"{PROFILE}-2", 2),
            _pod(f"{PROFILE}-0", 0, leaving=True),
            _pod(f"{PROFILE}-1", 1),
            _pod(f"{PROFILE}-0-1", 0, worker=1),
            _pod(f"{PROFILE}-3", 3, ready=False),
        ]
    )
    assert forward.serving_leader(api, profile) == f"{PROFILE}-1"
    assert api.selectors == [",".join(f"{k}={v}" for k, v in sorted(SELECTOR.items()))]


def test_no_ready_leader_is_a_smoke_that_cannot_reach_the_server() -> None:
    profile = load_profile(PROFILE, [])
    target = _target(Api([_pod(f"{PROFILE}-0", 0, ready=False)]))
    with (
        pytest.raises(SmokeUnreachable, match="selects no ready leader pod") as caught,
        forward.reach(target.api, target.options, profile),
    ):
        pass
    assert f"kubectl -n kimi-k3 port-forward svc/{PROFILE}-api 8000:8000" in (caught.value.hint or "")
    assert forward.serving_leader(Api([], selector={}), profile) is None


@pytest.mark.parametrize(
    ("options", "sets", "reviewed"),
    [
        ({"group_smoke": True}, [], True),
        ({"group_smoke": False}, [], False),  # --skip-smoke
        ({"group_smoke": True, "endpoint": "http://10.0.0.5:8000"}, [], False),
        ({"group_smoke": True, "smoke_where": "in-cluster"}, [], False),
        ({"group_smoke": True}, ["kubernetes.endpoint_override=http://gateway:80"], False),
    ],
)
def test_up_reviews_the_port_forward_access_only_when_its_smoke_forwards(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], sets: list[str], reviewed: bool
) -> None:
    from k3deploy.targets.kubernetes import render
    from k3deploy.targets.kubernetes import target as kubernetes

    seen: dict[str, Any] = {}
    monkeypatch.setattr(kubernetes, "run_preflight", lambda *a, **kw: seen.update(kw) or [])
    profile = load_profile(PROFILE, sets)
    objects = render.render(profile).objects
    kubernetes.KubernetesTarget(DeployOptions(**options)).preflight(profile, objects)
    forwarded = {(a.verb, a.subresource) for a in seen["needs"] if a.resource == "pods" and a.subresource}
    assert (("get", "portforward") in forwarded) is reviewed
    assert (("create", "portforward") in forwarded) is reviewed
    assert seen["objects"] == objects  # the set the command rendered, not one rendered again
