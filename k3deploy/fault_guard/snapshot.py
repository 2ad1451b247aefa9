"""One read of the cluster for `k3deploy guard`: the GPU trays, the release's groups and the raw objects behind them.

Everything through the one `KubeApi` of the command: Nodes and Pods (all namespaces: a tray that holds another
workload's GPU pod has no room), the release's ComputeDomains when the profile renders one, and each started
group's leader readiness (its /health probe, as the kubelet reports it) when `guard.leader_health` is on.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass

from k3deploy.fault_guard.decide import Group, Snapshot, Tray
from k3deploy.fault_guard.signals import (
    CD_API,
    CORDONED_AT,
    compute_domain_faults,
    condition_faults,
    cordoned,
    leader_unready,
    unschedulable,
)
from k3deploy.kobject import KubeObject
from k3deploy.kube.api import KubeApi
from k3deploy.lws import GROUP_INDEX_LABEL, NAME_LABEL, WORKER_INDEX_LABEL
from k3deploy.preflight.facts import GPU_RESOURCE, pod_request
from k3deploy.profile.model import Profile

#: The clique of a tray without the profile's clique label.
NO_CLIQUE = "(no clique)"


@dataclass(frozen=True)
class Observed:
    """A snapshot for the decision and what it was read from, for the evidence."""

    snapshot: Snapshot
    nodes: dict[str, KubeObject]
    #: Group index -> its pods.
    pods: dict[int, list[KubeObject]]
    domains: list[KubeObject]


def parse_time(text: str | None) -> float | None:
    """Epoch seconds of an RFC 3339 time (`2026-12-05T11:00:00Z`), None when absent or unreadable."""
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _live(pod: KubeObject) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _gpus(node: KubeObject) -> int:
    """The node's allocatable GPUs (0 for a CPU node or an unreadable count)."""
    value = ((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE, 0)
    return int(value) if str(value).isdigit() else 0


def read(
    api: KubeApi, profile: Profile, namespace: str, now: float, extra: Mapping[str, list[str]] | None = None
) -> Observed:
    """Read the cluster once: trays (GPU nodes), the release's groups, the ComputeDomains, leaders' health; `extra`
    adds faults by tray from outside the cluster (the Prometheus signal, prometheus_signal.py)."""
    guard, kube = profile.guard, profile.kubernetes
    lws = profile.name
    nodes_listed, _ = api.list("v1", "Node")
    pods_listed, _ = api.list("v1", "Pod")
    domains: list[KubeObject] = []
    if guard.compute_domain and kube.compute_domain and api.served(CD_API, "ComputeDomain"):
        domains, _ = api.list(CD_API, "ComputeDomain", namespace)
    cd_faults = compute_domain_faults(domains) if guard.compute_domain else {}

    mine = [
        p
        for p in pods_listed
        if (p.get("metadata") or {}).get("namespace") == namespace
        and ((p.get("metadata") or {}).get("labels") or {}).get(NAME_LABEL) == lws
    ]
    pods: dict[int, list[KubeObject]] = {}
    for pod in mine:
        index = ((pod["metadata"].get("labels") or {}).get(GROUP_INDEX_LABEL)) or ""
        if index.isdigit():
            pods.setdefault(int(index), []).append(pod)
    mine_names = {p["metadata"]["name"] for p in mine}
    taken = {
        (p.get("spec") or {}).get("nodeName")
        for p in pods_listed
        if _live(p)
        and pod_request(p, GPU_RESOURCE) > 0
        and not ((p.get("metadata") or {}).get("namespace") == namespace and p["metadata"]["name"] in mine_names)
    }

    trays: dict[str, Tray] = {}
    nodes: dict[str, KubeObject] = {}
    for node in nodes_listed:
        meta = node.get("metadata") or {}
        if not _gpus(node):
            continue
        name = meta["name"]
        nodes[name] = node
        faults = condition_faults(node, guard.fault_conditions) + cd_faults.get(name, []) + (extra or {}).get(name, [])
        trays[name] = Tray(
            name=name,
            clique=(meta.get("labels") or {}).get(kube.clique_label) or NO_CLIQUE,
            cordoned=cordoned(node),
            faults=tuple(faults),
            guard_cordoned_at=parse_time((meta.get("annotations") or {}).get(CORDONED_AT)),
            taken_by_other=name in taken,
        )

    groups = []
    for index, members in sorted(pods.items()):
        on = tuple(sorted({n for p in members if (n := (p.get("spec") or {}).get("nodeName"))}))
        leader = next(
            (
                p["metadata"]["name"]
                for p in members
                if (p["metadata"].get("labels") or {}).get(WORKER_INDEX_LABEL) == "0"
            ),
            "",
        )
        leader_bad = guard.leader_health and leader_unready(members, leader)
        groups.append(
            Group(
                index,
                tuple(sorted(p["metadata"]["name"] for p in members)),
                on,
                leader_unhealthy=leader_bad,
                unschedulable=unschedulable(members),
            )
        )
    snapshot = Snapshot(trays=trays, groups=tuple(groups), group_size=profile.parallel.nodes, now=now)
    return Observed(snapshot=snapshot, nodes=nodes, pods=pods, domains=domains)
