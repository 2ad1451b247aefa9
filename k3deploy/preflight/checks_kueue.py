"""Checks of Kueue's setup against a profile whose groups it admits (`kubernetes.gang_admission: kueue`). Pure.

A usable setup (what `gang_admission: auto` picks kueue on): Kueue serves its Workload kind, the profile's LocalQueue
exists in the namespace and points at a ClusterQueue that exists, one of that ClusterQueue's flavors carries a
Topology with the clique label and enough `nvidia.com/gpu` quota for one whole group, and Kueue's LeaderWorkerSet
integration takes the set's LeaderWorkerSet.
"""

from __future__ import annotations

from k3deploy.preflight.facts import ClusterFacts, KueueFacts
from k3deploy.profile.model import Profile
from k3deploy.report.model import CheckResult, Status, judged

_INSTALL = (
    "install Kueue v0.17+ with the leaderworkerset.x-k8s.io/leaderworkerset integration and create the Topology, "
    "ResourceFlavor, ClusterQueue and LocalQueue of the Kueue guide (docs/guide/kueue.md), or set "
    "kubernetes.gang_admission none"
)


def group_gpus(profile: Profile) -> int:
    """GPUs one serving group requests: trays per group times GPUs per tray."""
    return profile.parallel.nodes * profile.parallel.gpus_per_node


def _flavors_for(profile: Profile, facts: KueueFacts) -> list[str]:
    """The ClusterQueue's flavors with the clique level in their Topology and room for one group in their quota."""
    need = group_gpus(profile)
    label = profile.kubernetes.clique_label
    return [f for f, levels in facts.flavor_levels.items() if label in levels and facts.gpu_quota.get(f, 0) >= need]


def unusable(profile: Profile, facts: KueueFacts | None) -> str:
    """Why Kueue cannot admit this profile's groups whole, or "" when it can."""
    if facts is None or not facts.served:
        return "Kueue's Workload kind is not served"
    if not facts.local_queue_found:
        return f"no LocalQueue {facts.local_queue}"
    if not facts.cluster_queue_found:
        return f"LocalQueue {facts.local_queue} points at no ClusterQueue ({facts.cluster_queue or 'unset'})"
    if not _flavors_for(profile, facts):
        return (
            f"no flavor of ClusterQueue {facts.cluster_queue} has a Topology with {profile.kubernetes.clique_label} "
            f"and {group_gpus(profile)} nvidia.com/gpu of quota"
        )
    if facts.lws_integration is False:
        return "Kueue's LeaderWorkerSet integration did not take the LeaderWorkerSet"
    return ""


def kueue_checks(profile: Profile, facts: ClusterFacts) -> list[CheckResult]:
    """Kueue's kind, queues, topology, quota and LeaderWorkerSet integration, when the profile's groups go through
    Kueue; nothing otherwise."""
    kube = profile.kubernetes
    found = facts.kueue
    if kube.gang_admission != "kueue" or found is None:
        return []
    served = judged(
        "k8s.kueue.served",
        found.served,
        "served" if found.served else "missing",
        "workloads.kueue.x-k8s.io",
        "" if found.served else "kubernetes.gang_admission kueue queues each group to Kueue",
        _INSTALL,
    )
    if not found.served:
        return [served]
    namespace = facts.namespace
    queues_ok = found.local_queue_found and found.cluster_queue_found
    need = group_gpus(profile)
    usable_flavors = _flavors_for(profile, found)
    quotas = ", ".join(f"{f}: {q}" for f, q in sorted(found.gpu_quota.items())) or "none"
    integration = found.lws_integration
    return [
        served,
        judged(
            "k8s.kueue.queue",
            queues_ok,
            f"LocalQueue {found.local_queue} -> ClusterQueue {found.cluster_queue or '-'}",
            "a LocalQueue and its ClusterQueue",
            "" if queues_ok else unusable(profile, found),
            f"create LocalQueue {found.local_queue} in namespace {namespace} on a ClusterQueue with GPU quota "
            "(docs/guide/kueue.md), or set kubernetes.kueue_queue to the one that exists",
        ),
        judged(
            "k8s.kueue.topology",
            bool(usable_flavors) or not queues_ok,
            f"flavors with GPU quota: {quotas}",
            f"a flavor on a Topology with {kube.clique_label}, quota >= {need} nvidia.com/gpu (one group)",
            "" if usable_flavors or not queues_ok else unusable(profile, found),
            "give the ClusterQueue a ResourceFlavor with topologyName set to a Topology whose levels include "
            f"{kube.clique_label}, and nominalQuota of nvidia.com/gpu >= {need}",
        ),
        judged(
            "k8s.kueue.leaderworkerset",
            integration is True,
            {True: "taken by Kueue", False: "not taken", None: "not tried"}[integration],
            "the LeaderWorkerSet integration",
            found.lws_integration_detail
            or ("the namespace or its LocalQueue does not exist yet" if integration is None else ""),
            "enable leaderworkerset.x-k8s.io/leaderworkerset in Kueue's Configuration integrations.frameworks"
            if integration is False
            else "create the namespace and its LocalQueue, then run preflight again",
            Status.FAIL if integration is False else Status.WARN,
        ),
    ]
