"""Leader election of `k3deploy guard`: one guard acts for a release at a time, the one holding its Lease.

`<release>-k3deploy-guard` (coordination.k8s.io/v1) in the release's namespace, taken, renewed from a thread and
freed by the same `ReleaseLease` as the release's command lock (targets/kubernetes/lease.py): every write carries
the resourceVersion it read, so of two candidates one gets 409; a holder that dies leaves a lease that lapses 60 s
after its last renewal. The in-cluster Deployment's pod (and its successor during a rollout), a workstation's
`guard` loop and `guard --once` all take it, so two guards never cordon or delete for one release at once.

Why not a library: the official client's `kubernetes.leaderelection` runs the leader's work in a thread it cannot
stop when the lease is lost (it only calls `onstopped_leading`), talks through the client's global configuration
(none of k3deploy's request timeouts or deadline) and writes naive local times; kopf's peering needs its own
KopfPeering CRDs installed cluster-wide and brings an operator framework for one polling loop. The lease code
k3deploy already runs for every command is a few dozen lines on the bounded client.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from k3deploy.errors import EXIT_ENVIRONMENT, K3DeployError
from k3deploy.kube.port import KubePort
from k3deploy.targets.kubernetes.lease import LEASE_API, ReleaseLease, holder_of

#: Seconds a guard standing by waits before it tries the lease again.
RETRY_S = 15.0
T = TypeVar("T")


def guard_lease_name(release: str) -> str:
    """Name of the Lease the guards of a release elect their leader on."""
    return f"{release}-k3deploy-guard"


def _lease(api: KubePort, namespace: str, release: str, who: str, say: Callable[[str], None]) -> ReleaseLease:
    return ReleaseLease(api, namespace, release, who, note=say, name=guard_lease_name(release))


def _holder(api: KubePort, namespace: str, release: str, who: str) -> str | None:
    """Who else holds the guard lease now (None: it is free, lapsed or ours)."""
    live = api.get(LEASE_API, "Lease", guard_lease_name(release), namespace)
    holder = holder_of(live, datetime.now(UTC))
    return holder.identity if holder is not None and holder.identity != who else None


def once(api: KubePort, namespace: str, release: str, who: str, work: Callable[[], T], say: Callable[[str], None]) -> T:
    """`work()` while holding the guard lease; exit 3 naming the leader when another guard holds it."""
    other = _holder(api, namespace, release, who)
    if other is not None:
        raise K3DeployError(
            f"guard of release {release!r} in {namespace} is led by {other}: only the leader acts",
            hint=f"look with --dry-run, or stop that guard; Lease/{guard_lease_name(release)} lapses 60 s after it stops",
            exit_code=EXIT_ENVIRONMENT,
        )
    with _lease(api, namespace, release, who, say).hold():
        return work()


def _lost_of(lease: ReleaseLease) -> Callable[[], bool]:
    """Whether another guard took `lease` over since it was taken."""
    return lambda: lease.lost is not None


def lead(
    api: KubePort,
    namespace: str,
    release: str,
    who: str,
    work: Callable[[Callable[[], bool]], None],
    *,
    say: Callable[[str], None],
    sleep: Callable[[float], None],
    done: Callable[[], bool],
    retry_s: float = RETRY_S,
) -> None:
    """Stand by until this guard holds the lease, then `work(lost)` while it does (`lost()` turns True once another
    guard took it over, and `work` returns then); stand by again after, until `done()`. A failed try (the API
    unreachable, another guard won the race) is said and tried again after `retry_s`."""
    while not done():
        try:
            other = _holder(api, namespace, release, who)
        except K3DeployError as exc:
            say(f"standing by: reading Lease/{guard_lease_name(release)} failed: {exc.message}")
            sleep(retry_s)
            continue
        if other is not None:
            say(f"standing by: {other} leads")
            sleep(retry_s)
            continue
        lease = _lease(api, namespace, release, who, say)
        leading = False
        try:
            with lease.hold():
                leading = True
                say(f"leading: holds Lease/{guard_lease_name(release)}")
                work(_lost_of(lease))
        except K3DeployError as exc:
            if leading:
                raise
            say(f"standing by: {exc.message}")
            sleep(retry_s)
            continue
        if lease.lost is not None:
            say(f"lost the lease ({lease.lost}): standing by")
