"""One look at the cluster before a plan: what the Kubernetes target's `plan()` needs of what is live, read once.

The serving colour (the API Service's selector), the eligible hosts the node-preflight Job is pinned to (one node
list and one pod list), a cut-short blue-green's leftovers and the live LeaderWorkerSet (targets/kubernetes/upgrade.py
`read_lws`). The set is the one the command rendered: pinned to the hosts (render/node_preflight.py) and put under
the serving colour, never rendered again."""

from __future__ import annotations

from dataclasses import dataclass, field

from k3deploy.errors import K3DeployError
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.preflight.checks_cluster import eligible_hosts
from k3deploy.preflight.cluster import others_pods
from k3deploy.preflight.facts import parse_nodes
from k3deploy.profile.model import Profile
from k3deploy.render.node_preflight import with_hosts
from k3deploy.reporter import Reporter
from k3deploy.rollout.colours import lws_of, recoloured
from k3deploy.rollout.plan import LiveState, Strategy
from k3deploy.targets.kubernetes.bluegreen import live_name
from k3deploy.targets.kubernetes.bluegreen_repair import found_leftovers
from k3deploy.targets.kubernetes.upgrade import read_lws


@dataclass(frozen=True)
class Observation:
    """What is live, and the command's set as the plan takes it."""

    #: The rendered set, its node-preflight Job pinned to `hosts`, under the serving colour.
    objects: list[KubeObject]
    #: The colour (LeaderWorkerSet name) the API Service routes to; the profile's name when none is live.
    serving: str
    #: The LeaderWorkerSet and the leftovers, as rollout/plan.py reads them.
    live: LiveState
    #: The eligible nodes the node-preflight Job checks; empty when it checks any parallel.nodes GPU nodes.
    hosts: list[str] = field(default_factory=list)


def _hosts(api: KubePort, profile: Profile, reporter: Reporter) -> list[str]:
    """Every eligible node, from one node list and one pod list, when the profile pins the node-preflight Job to
    none; [] when it does or the nodes cannot be listed (then the Job checks any parallel.nodes GPU nodes, as a
    GitOps sync does)."""
    kube = profile.kubernetes
    if not kube.node_preflight_job or kube.node_preflight_hosts:
        return []
    try:
        nodes, _ = api.list("v1", "Node")
        pods, _ = api.list("v1", "Pod")
    except K3DeployError as exc:
        reporter.note(
            f"  node-preflight checks any {profile.parallel.nodes} GPU nodes (cannot list nodes: {exc.message})"
        )
        return []
    hosts = eligible_hosts(profile, parse_nodes(nodes, others_pods(pods, profile, kube.namespace)))
    if hosts:
        reporter.note(f"  node-preflight checks every eligible node: {', '.join(hosts)}")
    return hosts


def observe(
    api: KubePort, profile: Profile, objects: list[KubeObject], strategy: Strategy, reporter: Reporter
) -> Observation:
    """Read what `plan()` needs of the cluster for `objects` (the command's rendered set), each thing once."""
    hosts = _hosts(api, profile, reporter)
    serving = live_name(api, profile, objects)
    live_objects = recoloured(with_hosts(objects, hosts) if hosts else list(objects), profile.name, serving)
    leftovers = [] if strategy.dry_run or strategy.diff else found_leftovers(api, profile, live_objects)
    lws = read_lws(api, lws_of(live_objects), strategy)
    return Observation(live_objects, serving, LiveState(lws=lws, leftovers=leftovers), hosts)
