"""Blue-green upgrade of a single serving group (`up --strategy blue-green`, parallel.replicas 1).

With one group, LeaderWorkerSet's own rolling update (maxUnavailable 1, maxSurge 0) takes the group down before its
replacement has loaded the weights: the endpoint serves nothing for the model's load time. maxSurge 1 would load a
surge group first, but LWS then still recreates group 0 in place and removes the surge group afterwards
(kubernetes-sigs/lws pkg/controllers/leaderworkerset_controller.go, rollingUpdateParameters), so the weights load
twice. Blue-green loads them once, in a second clique:

1. apply: the new template is rendered under the other colour's name (rollout/colours.py) with a preview Service of
   its own; the live group and the API Service are left as they are;
2. wait for the new group (the usual watch and diagnosis), smoke-test it through its leader;
3. switch the API Service's selector to the new group, wait until its EndpointSlices list the new leader as ready;
4. remove the old group and the preview Service; the new colour is what `status`, `down` and later `up`s work on.

The steps are planned by rollout/plan.py (`blue_green`, `switch_over`) and undone by rollout/undo.py; this module
reads. Any failure before the switch removes the new group and its preview Service and leaves the old group serving
(undo.py `abandon`). A failure after it (the final smoke through the Service) is an ordinary rollback to the
previous revision. Without a second free clique (cluster facts: nodes and the GPUs pods hold), the change would
replace the only group in place; `up` says so and asks first (or needs --yes).
"""

from __future__ import annotations

from collections.abc import Callable

from k3deploy.errors import K3DeployError, UsageError
from k3deploy.kobject import JsonObject, KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.lws import API_VERSION
from k3deploy.preflight.checks_cluster import eligible_hosts
from k3deploy.preflight.facts import parse_nodes
from k3deploy.profile.model import Profile
from k3deploy.rollout.colours import (
    api_service_of,
    colours,
    lws_of,
    other,
    preview_name,
    recoloured,
    selected,
)
from k3deploy.rollout.ownership import INSTANCE_LABEL
from k3deploy.rollout.surge import in_place_note
from k3deploy.targets.kubernetes.poll import poll
from k3deploy.targets.kubernetes.upgrade import template_changes

#: Seconds between two looks at the API Service's EndpointSlices after the switch.
POLL_S = 0.5
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def live_name(api: KubePort, profile: Profile, objects: list[KubeObject]) -> str:
    """The colour the live API Service routes to (the rendered name when there is none yet)."""
    base = profile.name
    service = api_service_of(objects, base)
    if service is None:
        return base
    live = api.get("v1", "Service", service["metadata"]["name"], profile.kubernetes.namespace)
    name = selected(live)
    return name if name in colours(base) else base


def as_live(api: KubePort, profile: Profile, objects: list[KubeObject]) -> list[KubeObject]:
    """The rendered set under the colour that serves now."""
    return recoloured(objects, profile.name, live_name(api, profile, objects))


def _live_lws(api: KubePort, lws: KubeObject) -> KubeObject | None:
    return api.get(lws["apiVersion"], lws["kind"], lws["metadata"]["name"], lws["metadata"].get("namespace"))


def has_room(api: KubePort, profile: Profile) -> bool:
    """Whether a whole second group fits beside what runs now (GPUs the live group holds count as taken)."""
    nodes, _ = api.list("v1", "Node")
    pods, _ = api.list("v1", "Pod")
    return len(eligible_hosts(profile, parse_nodes(nodes, pods))) >= profile.parallel.nodes


def outage_question(api: KubePort, profile: Profile, rendered: list[KubeObject]) -> str | None:
    """None when blue-green can go ahead (or there is nothing live to replace); else the question to ask: the change
    can only replace the only group in place. Raises UsageError for N >= 2 groups (the rolling upgrade keeps those
    serving)."""
    if profile.parallel.replicas != 1:
        raise UsageError(
            f"--strategy blue-green is for one serving group; this profile has parallel.replicas "
            f"{profile.parallel.replicas}",
            hint="with two or more groups the default rolling upgrade keeps serving: drop --strategy",
        )
    objects = as_live(api, profile, rendered)
    lws = lws_of(objects)
    live = _live_lws(api, lws) if lws is not None else None
    if live is None or lws is None or not template_changes(api, live, lws) or has_room(api, profile):
        return None
    budget = profile.startup_budget.total_s
    return (
        f"no second NVLink clique has {profile.parallel.nodes} free trays for a new group beside "
        f"{live['metadata']['name']}: the change replaces the only group in place, an outage of about the model's "
        f"load time (up to the startup budget, {budget}s). Go ahead?"
    )


def in_place_question(api: KubePort, profile: Profile, rendered: list[KubeObject]) -> str | None:
    """The question to ask before a rolling apply replaces the only group in place (one replica, maxSurge 0, a
    changed pod template: rollout/surge.py); None when nothing live would be replaced."""
    lws = lws_of(as_live(api, profile, rendered))
    if lws is None or in_place_note(lws, "configured") is None:
        return None
    live = _live_lws(api, lws)
    if live is None:
        return None
    # The pod template, not the generation: a scale (another manager's replicas) replaces no group.
    dry = api.apply(lws, force=True, dry_run=True)
    if (dry.get("spec") or {}).get("leaderWorkerTemplate") == (live.get("spec") or {}).get("leaderWorkerTemplate"):
        return None
    return (
        f"the change replaces the only group of LeaderWorkerSet {live['metadata']['name']} in place (one replica, "
        "maxSurge 0): the endpoint serves nothing until the new group has loaded the weights (up to the startup "
        f"budget, {profile.startup_budget.total_s}s). Go ahead?"
    )


def wait_endpoint(
    api: KubePort, namespace: str, service: str, leader: str, remaining: Callable[[], float | None]
) -> None:
    """Until the Service's EndpointSlices list `leader` as ready (kube-proxies and gateways route by them), so the
    old group goes only once the new one takes traffic; skipped where the cluster serves no EndpointSlices."""
    if not api.served("discovery.k8s.io/v1", "EndpointSlice"):
        return

    def listed() -> bool | None:
        slices, _ = api.list(
            "discovery.k8s.io/v1", "EndpointSlice", namespace, label_selector=f"{SERVICE_NAME_LABEL}={service}"
        )
        ready = any(
            ((e.get("targetRef") or {}).get("name") == leader and (e.get("conditions") or {}).get("ready"))
            for s in slices
            for e in s.get("endpoints") or []
        )
        return True if ready else None

    if poll(listed, remaining, POLL_S) is None:
        raise K3DeployError(
            f"Service {service} did not list {leader} as a ready endpoint by the deadline",
            hint="the old group is kept; check the EndpointSlices (`kubectl get endpointslices`)",
        )


def leftovers(api: KubePort, profile: Profile, objects: list[KubeObject]) -> list[KubeObject]:
    """What a half-done blue-green may have left beside the live set: the other colour's LeaderWorkerSet and both
    preview Services (for `down`)."""
    lws = lws_of(objects)
    if lws is None:
        return []
    out = []
    # The release's labels: `down` deletes them only when they carry the release's ownership mark.
    labels = {INSTANCE_LABEL: profile.name}
    namespace = profile.kubernetes.namespace
    for name in colours(profile.name):
        if name != lws["metadata"]["name"]:
            out.append(
                {
                    "apiVersion": lws["apiVersion"],
                    "kind": "LeaderWorkerSet",
                    "metadata": {"name": name, "namespace": namespace, "labels": labels},
                }
            )
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": preview_name(name), "namespace": namespace, "labels": labels},
            }
        )
    return out


def other_group(api: KubePort, profile: Profile, objects: list[KubeObject]) -> list[KubeObject]:
    """The other colour's LeaderWorkerSet when it exists beside the live set (a blue-green under way or half-done)."""
    lws = lws_of(objects)
    if lws is None:
        return []
    name = other(profile.name, lws["metadata"]["name"])
    live = api.get(lws["apiVersion"], lws["kind"], name, profile.kubernetes.namespace)
    return [recoloured([lws], lws["metadata"]["name"], name)[0]] if live is not None else []


def describe(api: KubePort, profile: Profile, objects: list[KubeObject]) -> JsonObject:
    """For `status`: which colour serves, which groups exist (two while a blue-green is under way or half-done)."""
    namespace = profile.kubernetes.namespace
    lws = lws_of(objects)
    serving = lws["metadata"]["name"] if lws is not None else profile.name
    groups = [
        name for name in colours(profile.name) if api.get(API_VERSION, "LeaderWorkerSet", name, namespace) is not None
    ]
    previews = [
        preview_name(name)
        for name in colours(profile.name)
        if api.get("v1", "Service", preview_name(name), namespace) is not None
    ]
    return {
        "serving": serving if serving in groups else None,
        "groups": groups,
        "previews": previews,
        "in_progress": len(groups) > 1 or bool(previews),
    }
