"""A write command's API requests split by what decides their number (the fleet bounds of
tests/realk8s/test_fleet_cost.py), from the audit log's count by (verb, resource):

- run-time: what a longer run makes more of, whatever the fleet. `update leases`: taking the release's lock Lease when
  it exists (every command after the first install), then one renewal every `RENEW_S` while the command runs
  (k3deploy/targets/kubernetes/lease.py). `watch` of any resource: each stream of a wait lists its kind once, then
  watches it, and re-opens the watch when the server ends it (`WATCH_TIMEOUT_S`) or drops it
  (k3deploy/targets/kubernetes/streams.py).
- structural: everything else, fixed by the release and the fleet: discovery, the reads and applies of the rendered
  objects, the lists the waits start from, the lock's create, read and free, one traffic mark per leader.

`up --skip-smoke`, a roll without the group walk (no smoke to gate on) and `down` wait by watches only, so none
of them polls with gets; a gated walk would (targets/kubernetes/upgrade.py) and is not bounded here.
"""

from __future__ import annotations

import math
from collections import Counter

from k3deploy.targets.kubernetes.lease import RENEW_S
from k3deploy.targets.kubernetes.streams import WATCH_TIMEOUT_S

Requests = Counter[tuple[str, str]]

#: `update leases` beyond the renewals: taking a lease that exists, and one renewal the client retried.
LEASE_SLACK = 2


def is_run_time(verb: str, resource: str) -> bool:
    """Whether a request of `verb` on `resource` is one a longer run makes more of (a lease renewal, a watch)."""
    return verb == "watch" or (verb, resource) == ("update", "leases")


def split(requests: Requests) -> tuple[Requests, Requests]:
    """`requests` as (structural, run-time)."""
    structural: Requests = Counter()
    run_time: Requests = Counter()
    for (verb, resource), n in requests.items():
        (run_time if is_run_time(verb, resource) else structural)[(verb, resource)] += n
    return structural, run_time


def over_run_time(requests: Requests, wall_s: float) -> list[str]:
    """Each run-time count of `requests` past what a command that ran `wall_s` seconds may make; [] when none is.

    Renewals: at most one per whole `RENEW_S` held, plus `LEASE_SLACK`. Watches of a resource: each of its streams
    started from a list of it, so there are at most as many streams as lists; each stream re-opens its watch at most
    once per started `WATCH_TIMEOUT_S` (the server's end of it, or a drop of a slow watcher).
    """
    over: list[str] = []
    renewals = requests[("update", "leases")]
    if renewals > wall_s // RENEW_S + LEASE_SLACK:
        over.append(f"update leases: {renewals} in {wall_s:.1f}s (renewal every {RENEW_S:g}s, +{LEASE_SLACK})")
    opens = 1 + math.ceil(wall_s / WATCH_TIMEOUT_S)
    for (verb, resource), n in sorted(requests.items()):
        if verb != "watch":
            continue
        streams = requests[("list", resource)]
        if n > streams * opens:
            over.append(f"watch {resource}: {n} in {wall_s:.1f}s from {streams} lists ({opens} opens each)")
    return over
