"""Read Kueue's setup for the profile's gang admission: the LocalQueue, its ClusterQueue, the flavors' GPU quota and
Topology levels, and whether Kueue's LeaderWorkerSet integration takes the set's LeaderWorkerSet.

Kueue v0.17's objects (kueue.x-k8s.io/v1beta2): LocalQueue.spec.clusterQueue, ClusterQueue.spec.resourceGroups[].
flavors[].resources[].nominalQuota, ResourceFlavor.spec.topologyName, Topology.spec.levels[].nodeLabel. The integration
is seen the way Kueue shows it: its LeaderWorkerSet webhook (pkg/controller/jobs/leaderworkerset/
leaderworkerset_webhook.go `Default`) marks the templates of a queued LeaderWorkerSet as suspended by their parent,
which a server-side dry run returns without creating anything.
"""

from __future__ import annotations

from k3deploy.errors import K3DeployError
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.kueue import API_VERSION, QUEUE_LABEL, SUSPENDED_BY_PARENT, WORKLOAD_KIND
from k3deploy.preflight.facts import GPU_RESOURCE, KueueFacts
from k3deploy.profile.model import Profile


def _quantity(value: object) -> int:
    text = str(value)
    return int(text) if text.isdigit() else 0


def lws_taken(dry_run: KubeObject) -> bool:
    """Whether the LeaderWorkerSet a server-side dry run returned was taken by Kueue's webhook."""
    template = ((dry_run.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("workerTemplate") or {}
    return SUSPENDED_BY_PARENT in ((template.get("metadata") or {}).get("annotations") or {})


def kueue_facts(api: KubePort, profile: Profile, namespace: str, lws: KubeObject | None) -> KueueFacts:
    """Kueue's setup as `profile` would use it, in `namespace`; `lws`: the set's LeaderWorkerSet (tried with the queue
    label by a server-side dry run when the LocalQueue exists, so also for a set rendered without it), or None."""
    if not api.served(API_VERSION, WORKLOAD_KIND):
        return KueueFacts(served=False)
    queue = profile.kubernetes.kueue_queue
    local = api.get(API_VERSION, "LocalQueue", queue, namespace) if queue else None
    cluster_name = str(((local or {}).get("spec") or {}).get("clusterQueue") or "") or None
    cluster = api.get(API_VERSION, "ClusterQueue", cluster_name) if cluster_name else None
    quota: dict[str, int] = {}
    levels: dict[str, list[str]] = {}
    for group in ((cluster or {}).get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            name = str(flavor.get("name"))
            gpus = [r for r in flavor.get("resources") or [] if r.get("name") == GPU_RESOURCE]
            if not gpus:
                continue
            quota[name] = _quantity(gpus[0].get("nominalQuota"))
            found = api.get(API_VERSION, "ResourceFlavor", name)
            topology = str(((found or {}).get("spec") or {}).get("topologyName") or "")
            spec = ((api.get(API_VERSION, "Topology", topology) or {}).get("spec") or {}) if topology else {}
            levels[name] = [str(level.get("nodeLabel")) for level in spec.get("levels") or []]
    taken: bool | None = None
    detail = ""
    if lws is not None and local is not None and queue:
        queued = {
            **lws,
            "metadata": {**lws["metadata"], "labels": {**(lws["metadata"].get("labels") or {}), QUEUE_LABEL: queue}},
        }
        try:
            taken = lws_taken(api.apply(queued, force=True, dry_run=True))
            detail = "" if taken else "a dry run of the LeaderWorkerSet came back without Kueue's suspension"
        except K3DeployError as exc:
            detail = f"a dry run of the LeaderWorkerSet was refused: {exc.message}"
    return KueueFacts(
        served=True,
        local_queue=queue,
        local_queue_found=local is not None,
        cluster_queue=cluster_name,
        cluster_queue_found=cluster is not None,
        gpu_quota=quota,
        flavor_levels=levels,
        lws_integration=taken,
        lws_integration_detail=detail,
    )
