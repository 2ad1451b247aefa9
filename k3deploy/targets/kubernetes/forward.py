"""How a smoke gate on a cluster reaches its server: the endpoint the user gave, else a port-forward through the API
server to a leader pod, as `kubectl port-forward` does (kube/portforward.py), so `up` works from a workstation, a
script or CI outside the cluster.

`--endpoint` (or `kubernetes.endpoint_override`) overrides every gate; `--group-endpoint` the per-group gates of the
rolling upgrade and blue-green. Without either, the final smoke forwards to the first ready leader the API Service
selects, and a per-group gate to that group's leader (`<lws>-<group>`). A forward that cannot be opened (RBAC, the
pod gone, the API server unreachable) is a SmokeUnreachable (smoke/reach.py): the install is kept.

`watch` and `bench` without `--endpoint` reach a Kubernetes deployment the same way (`to_leader`): a forward to the
first ready leader the API Service selects, open for the whole command.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

from k3deploy.errors import EnvironmentProblem, ForwardFailed, K3DeployError
from k3deploy.kube.api import KubeApi
from k3deploy.kube.options import KubeOptions
from k3deploy.kube.port import KubePort
from k3deploy.kube.portforward import PodPortForward
from k3deploy.lws import GROUP_INDEX_LABEL, WORKER_INDEX_LABEL, leader_name
from k3deploy.profile.model import Profile
from k3deploy.profile.object_names import api_service_name
from k3deploy.rollout.groups import group_endpoint
from k3deploy.rollout.readiness import pod_ready
from k3deploy.smoke.reach import Reach, unreachable


def by_hand(profile: Profile, pod: str | None) -> str:
    """How to smoke the same server by hand: a port-forward of one's own and `k3deploy smoke`, or the in-cluster Job."""
    namespace, port = profile.kubernetes.namespace, profile.vllm.port
    target = f"pod/{pod}" if pod else f"svc/{api_service_name(profile)}"
    return (
        f"to smoke it yourself: `kubectl -n {namespace} port-forward {target} {port}:{port}` and "
        f"`k3deploy smoke -p {profile.name} --endpoint http://127.0.0.1:{port}`; or re-run `up` with "
        "--endpoint URL or --smoke in-cluster"
    )


def serving_leader(api: KubePort, profile: Profile) -> str | None:
    """The first ready, not terminating leader pod the live API Service selects (lowest group), None when none."""
    namespace = profile.kubernetes.namespace
    service = api.get("v1", "Service", api_service_name(profile), namespace)
    selector = ((service or {}).get("spec") or {}).get("selector") or {}
    if not selector:
        return None
    pods, _ = api.list("v1", "Pod", namespace, label_selector=",".join(f"{k}={v}" for k, v in sorted(selector.items())))
    leaders = [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and (p["metadata"].get("labels") or {}).get(WORKER_INDEX_LABEL, "0") == "0"
        and pod_ready(p)
    ]
    leaders.sort(key=lambda p: (int(p["metadata"]["labels"].get(GROUP_INDEX_LABEL, "0")), p["metadata"]["name"]))
    return str(leaders[0]["metadata"]["name"]) if leaders else None


class GateOptions(Protocol):
    """The command's options a gate's way to the server follows (targets.DeployOptions has them)."""

    @property
    def kube(self) -> KubeOptions:
        """How to reach the API server."""

    @property
    def endpoint(self) -> str | None:
        """--endpoint: overrides every gate."""

    @property
    def group_endpoint(self) -> str | None:
        """--group-endpoint: overrides the per-group gates."""


@contextlib.contextmanager
def _forwarded(kube: KubeOptions, profile: Profile, pod: str) -> Iterator[Reach]:
    namespace, port = profile.kubernetes.namespace, profile.vllm.port
    hint = by_hand(profile, pod)
    try:
        forward = PodPortForward(kube, namespace, pod, port).open()
    except ForwardFailed as exc:
        raise unreachable(f"smoke could not reach the server: {exc.message}", None, hint) from None
    try:
        yield Reach(forward.url, "port-forward", forward.target, retry_hint=hint)
    finally:
        forward.close()


@contextlib.contextmanager
def reach(
    api: KubePort, options: GateOptions, profile: Profile, lws_name: str | None = None, group: int | None = None
) -> Iterator[Reach]:
    """The way to the server a gate smokes: the whole deployment (`group` None) or one group's leader."""
    namespace = profile.kubernetes.namespace
    if group is not None and lws_name is not None and options.group_endpoint:
        url = group_endpoint(options.group_endpoint, lws_name, namespace, group, profile.vllm.port)
        yield Reach(url, "endpoint", url)
        return
    override = options.endpoint or profile.kubernetes.endpoint_override
    if override:
        url = override.rstrip("/")
        yield Reach(url, "endpoint", url)
        return
    if group is not None and lws_name is not None:
        pod: str | None = leader_name(lws_name, group)
    else:
        try:
            pod = serving_leader(api, profile)
        except K3DeployError as exc:
            message = f"smoke could not find the leader to reach: {exc.message}"
            raise unreachable(message, None, by_hand(profile, None)) from None
    if pod is None:
        message = f"smoke could not reach the server: Service {api_service_name(profile)} selects no ready leader pod"
        raise unreachable(message, None, by_hand(profile, None))
    with _forwarded(options.kube, profile, pod) as way:
        yield way


@contextlib.contextmanager
def to_leader(kube: KubeOptions, profile: Profile, command: str) -> Iterator[Reach]:
    """A port-forward to the first ready leader the live API Service selects, for `command` (`watch`, `bench`)
    without --endpoint, as `up`'s smoke reaches it; EnvironmentProblem (exit 3) when there is none or it cannot be
    opened, with the by-hand way in the hint."""
    namespace, port = profile.kubernetes.namespace, profile.vllm.port
    hint = (
        f"give --endpoint URL: e.g. `kubectl -n {namespace} port-forward svc/{api_service_name(profile)} "
        f"{port}:{port}` and --endpoint http://127.0.0.1:{port}"
    )
    api: KubeApi | None = None
    try:
        api = KubeApi(kube)
        pod = serving_leader(api, profile)
    except K3DeployError as exc:
        raise EnvironmentProblem(f"{command} could not find the leader to reach: {exc.message}", hint=hint) from None
    finally:
        if api is not None:
            api.close()
    if pod is None:
        raise EnvironmentProblem(
            f"{command}: Service {api_service_name(profile)} in {namespace} selects no ready leader pod", hint=hint
        )
    try:
        forward = PodPortForward(kube, namespace, pod, port).open()
    except ForwardFailed as exc:
        raise EnvironmentProblem(f"{command} could not reach the leader: {exc.message}", hint=hint) from None
    try:
        yield Reach(forward.url, "port-forward", forward.target)
    finally:
        forward.close()
