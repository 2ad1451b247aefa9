"""Leader election of `k3deploy guard`: one guard acts for a release at a time, the one holding its Lease.

`<release>-k3deploy-guard` (coordination.k8s.io/v1) in the release's namespace, renewed from a thread and freed by
the same `ReleaseLease` as the release's command lock (targets/kubernetes/lease.py): every write carries the
resourceVersion it read, so of two candidates one gets 409. The in-cluster Deployment's pod (and its successor
during a rollout), a workstation's `guard` loop and `guard --once` all take it, so two guards never cordon or delete
for one release at once.

Who may take it is decided here, from one read, by client-go's rules (tools/leaderelection/leaderelection.go,
tryAcquireOrRenew and isLeaseValid), not by the command lock's wait: a lease that is absent, freed (no holder) or
ours is taken at once; another holder's is valid until its record (holder, acquireTime, renewTime,
leaseDurationSeconds, leaseTransitions) has stayed unchanged for leaseDurationSeconds on this machine's monotonic
clock since this guard first saw it (client-go's observedTime). The holder's renewTime, written by its own clock,
never decides alone, so a guard whose clock is ahead does not take a live lease; and a guard that does not hold the
lease never waits on it: `--once` decides on its one read (another holder's lease is never takeable on a first
sight, so it exits 3 naming it), the loop stands by and reads again, carrying its observation from read to read.

Why not a library: the official client's `kubernetes.leaderelection` runs the leader's work in a thread it cannot
stop when the lease is lost (it only calls `onstopped_leading`), talks through the client's global configuration
(none of k3deploy's request timeouts or deadline) and writes naive local times; kopf's peering needs its own
KopfPeering CRDs installed cluster-wide and brings an operator framework for one polling loop. The lease code
k3deploy already runs for every command is a few dozen lines on the bounded client.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TypeVar

from k3deploy.errors import EXIT_ENVIRONMENT, K3DeployError
from k3deploy.kobject import KubeObject
from k3deploy.kube.api import KubeApi
from k3deploy.profile.object_names import guard_lease_name
from k3deploy.targets.kubernetes.lease import DURATION_S, LEASE_API, ReleaseLease, holder_of

#: Seconds a guard standing by waits before it tries the lease again (less when the lease it watches lapses sooner).
RETRY_S = 15.0
T = TypeVar("T")
#: The fields of a Lease that make client-go's LeaderElectionRecord: a change in any of them is a renewal or a handover.
_RECORD = ("holderIdentity", "acquireTime", "renewTime", "leaseDurationSeconds", "leaseTransitions")


@dataclass(frozen=True)
class Observed:
    """Another holder's lease record as this guard first saw it unchanged, and when (this machine's monotonic clock):
    client-go's observedRecord and observedTime."""

    record: tuple[object, ...]
    since: float


@dataclass(frozen=True)
class Decision:
    """What one read of the guard lease allows: `take` it, or stand by for `leader` (its holder), whose lease this
    guard may take over after `left_s` more seconds if its record stays `observed`."""

    take: bool
    leader: str | None = None
    left_s: float = 0.0
    observed: Observed | None = None
    #: Whether the holder's own timestamps (renewTime + leaseDurationSeconds) call its lease lapsed: said, never acted on.
    looks_lapsed: bool = False


def decide(lease: KubeObject | None, who: str, observed: Observed | None, now: float, wall: datetime) -> Decision:
    """client-go's rule for a candidate (tryAcquireOrRenew): a lease that is absent, freed or `who`'s is taken;
    another holder's is valid until its record stays unchanged for its leaseDurationSeconds from when this guard
    first saw it (`observed`, carried from the previous read of the same record; `now`: monotonic seconds). `wall`:
    this machine's time, only to say whether the holder's timestamps look lapsed."""
    spec = (lease or {}).get("spec") or {}
    holder = spec.get("holderIdentity")
    if lease is None or not holder or holder == who:
        return Decision(take=True)
    record = tuple(spec.get(key) for key in _RECORD)
    if observed is None or observed.record != record:
        observed = Observed(record, now)
    left = observed.since + float(spec.get("leaseDurationSeconds") or DURATION_S) - now
    if left <= 0:
        return Decision(take=True, leader=str(holder), observed=observed)
    return Decision(
        take=False, leader=str(holder), left_s=left, observed=observed, looks_lapsed=holder_of(lease, wall) is None
    )


def _read(api: KubeApi, namespace: str, release: str) -> KubeObject | None:
    return api.get(LEASE_API, "Lease", guard_lease_name(release), namespace)


def _lease(api: KubeApi, namespace: str, release: str, who: str, say: Callable[[str], None]) -> ReleaseLease:
    return ReleaseLease(api, namespace, release, who, note=say, name=guard_lease_name(release))


def led_error(release: str, namespace: str, decision: Decision) -> K3DeployError:
    """Exit 3 of `guard --once`: another guard holds the lease, so this one does not act."""
    lease = guard_lease_name(release)
    if decision.looks_lapsed:
        hint = (
            f"Lease/{lease} looks lapsed by its holder's renewTime, but one read cannot tell a stopped guard from "
            f"clocks that differ: the loop (`k3deploy guard` without --once) takes it over once it stays unchanged "
            f"for {decision.left_s:.0f} s"
        )
    else:
        hint = (
            f"look with --dry-run, or stop that guard: a guard loop takes Lease/{lease} over once it stays unchanged "
            f"for {decision.left_s:.0f} s"
        )
    return K3DeployError(
        f"guard of release {release!r} in {namespace} is led by {decision.leader}: only the leader acts",
        hint=hint,
        exit_code=EXIT_ENVIRONMENT,
    )


def once(api: KubeApi, namespace: str, release: str, who: str, work: Callable[[], T], say: Callable[[str], None]) -> T:
    """`work()` while holding the guard lease, decided on one read; exit 3 naming the leader when another guard
    holds it (never a wait on it)."""
    live = _read(api, namespace, release)
    decision = decide(live, who, None, time.monotonic(), datetime.now(UTC))
    if not decision.take:
        raise led_error(release, namespace, decision)
    lease = _lease(api, namespace, release, who, say)
    with lease.hold(partial(lease.take, live)):
        return work()


def _lost_of(lease: ReleaseLease) -> Callable[[], bool]:
    """Whether another guard took `lease` over since it was taken."""
    return lambda: lease.lost is not None


def lead(
    api: KubeApi,
    namespace: str,
    release: str,
    who: str,
    work: Callable[[Callable[[], bool]], None],
    *,
    say: Callable[[str], None],
    sleep: Callable[[float], None],
    done: Callable[[], bool],
    retry_s: float = RETRY_S,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Stand by until this guard holds the lease, then `work(lost)` while it does (`lost()` turns True once another
    guard took it over, and `work` returns then); stand by again after, until `done()`. Standing by reads the lease
    every `retry_s` (sooner when the observed lease may be taken over sooner) and takes it as `decide` allows; a failed
    try (the API unreachable, another guard won the race) is said and tried again after `retry_s`."""
    observed: Observed | None = None
    said: str | None = None
    while not done():
        try:
            live = _read(api, namespace, release)
        except K3DeployError as exc:
            say(f"standing by: reading Lease/{guard_lease_name(release)} failed: {exc.message}")
            sleep(retry_s)
            continue
        decision = decide(live, who, observed, clock(), datetime.now(UTC))
        observed = decision.observed
        if not decision.take:
            if decision.leader != said:  # said once per leader, not at every read
                say(f"standing by: {decision.leader} leads")
                said = decision.leader
            sleep(min(retry_s, decision.left_s))
            continue
        lease = _lease(api, namespace, release, who, say)
        leading = False
        try:
            with lease.hold(partial(lease.take, live)):
                leading, observed, said = True, None, None
                if decision.leader is not None:
                    say(f"took over the lease of {decision.leader}: unchanged for its whole duration")
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
