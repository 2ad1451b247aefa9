"""The all-reduce backend of each serving group, from its leader's log on the cluster (observe/allreduce.py reads
the lines). Every failure to read is an "unknown", never an error: this is a report, not a check."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from k3deploy.errors import K3DeployError
from k3deploy.kube.port import KubePort
from k3deploy.lws import WORKER_INDEX_LABEL
from k3deploy.observe.allreduce import UNKNOWN, backend_from_log
from k3deploy.profile import Profile

#: How much of the start of a leader's log is read: the start-up lines (the all-reduce workspace comes up during the
#: first compile) come long before any request log, and a day of request logs is never read.
LEADER_LOG_BYTES = 8 * 1024 * 1024
#: Leader logs read at once (as preflight's access reviews: preflight/cluster.py).
_LOG_WORKERS = 8


def leader_selector(profile: Profile) -> str:
    """The label selector of the set's group leaders (worker index 0), every colour of a blue-green set included."""
    return f"app.kubernetes.io/instance={profile.name},app.kubernetes.io/component=server,{WORKER_INDEX_LABEL}=0"


def leader_backends(api: KubePort, profile: Profile) -> dict[str, str]:
    """Leader pod name -> the backend its vllm container's log reports (UNKNOWN when it cannot be read)."""
    namespace = profile.kubernetes.namespace
    try:
        pods, _ = api.list("v1", "Pod", namespace, label_selector=leader_selector(profile))
    except K3DeployError:  # a report: an unreadable API leaves it unknown
        return {}
    names = sorted(pod["metadata"]["name"] for pod in pods)

    def backend(name: str) -> str:
        try:
            return backend_from_log(api.read_log(name, namespace, "vllm", limit_bytes=LEADER_LOG_BYTES))
        except K3DeployError:
            return UNKNOWN

    # One log per group and no list of logs: read in parallel, so 64 groups cost a few round trips, not 64.
    with ThreadPoolExecutor(max_workers=_LOG_WORKERS) as pool:
        return dict(zip(names, pool.map(backend, names), strict=True))


def summary(backends: dict[str, str]) -> str:
    """One value for a report: the backend every leader reports, else each leader's, else UNKNOWN."""
    values = set(backends.values())
    if not values:
        return UNKNOWN
    if len(values) == 1:
        return values.pop()
    return ", ".join(f"{pod}: {backend}" for pod, backend in sorted(backends.items()))
