"""The in-cluster guard's re-gate duty: a leader LeaderWorkerSet re-created between two `up`s (a restart, an
eviction, a GitOps sync that rolled the template) takes traffic again only once it is gated again.

Each pass of `k3deploy guard` (fault_guard/loop.py), when smoke.gate_traffic is on: every Ready leader of the
release (either colour) without the gate's label is smoked by its own address (the LWS headless Service name, or a
`--group-endpoint` template), never through the API Service, which does not select it, and labelled when it passes,
its pod's uid a precondition (marks.py); with smoke.gate_restarts off, one running the template revision a gate
already passed on is labelled without a smoke. It only ever adds the label: a healthy leader is never taken out of
traffic and nothing is rolled back. A failed one stays out and is smoked again `retry_s` later, not every pass.

It stands aside while another gate judges the same leaders: a k3deploy command holding the release's lock (`up`
gates the groups it rolls) or the release's smoke Job running (its PostSync `--gate-leaders`); two smokes at once
on one server would each see the other's tokens. What it may read and write: templates/guard-role.yaml.j2.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from k3deploy.errors import K3DeployError
from k3deploy.kube.port import KubePort
from k3deploy.lws import colours
from k3deploy.profile.model import Profile
from k3deploy.profile.object_names import lock_lease_name, smoke_job_name
from k3deploy.reporter import Reporter
from k3deploy.rollout.groups import group_endpoint
from k3deploy.targets.kubernetes import marks
from k3deploy.targets.kubernetes.job_gates import Smoke
from k3deploy.targets.kubernetes.lease import LEASE_API, holder_of
from k3deploy.traffic_gate import (
    COPIED,
    DEFERRED,
    FAILED,
    LABELLED,
    REGATE_RETRY_S,
    REGATE_SMOKE_S,
    WOULD,
    Regated,
    Unmarked,
    is_marked,
    retry_due,
)

#: Why a restart is labelled without a smoke.
COPY_WHY = "a restart of a template its gate passed on"


def bounded(profile: Profile) -> Profile:
    """The profile a re-gate smokes with: no wait for /health (the leader is Ready already) and at most
    REGATE_SMOKE_S in all, since the guard's fault passes wait while it runs."""
    smoke = profile.smoke.model_copy(
        update={"ready_timeout_s": None, "overall_timeout_s": min(profile.smoke.overall_timeout_s, REGATE_SMOKE_S)}
    )
    return profile.model_copy(update={"smoke": smoke})


def other_gate(api: KubePort, profile: Profile, now: datetime) -> str | None:
    """Who else is gating the release's leaders now, said as a reason to stand aside; None when nobody is."""
    namespace = profile.kubernetes.namespace
    holder = holder_of(api.get(LEASE_API, "Lease", lock_lease_name(profile.name), namespace), now)
    if holder is not None:
        return f"{holder.identity} holds the release and gates the groups it rolls"
    job_name = smoke_job_name(profile)
    job = api.get("batch/v1", "Job", job_name, namespace)
    if job is not None and int((job.get("status") or {}).get("active") or 0) > 0:
        return f"the smoke Job {job_name} is gating the leaders"
    return None


@dataclass
class Regate:
    """One release's re-gate duty; called once per guard pass (`dry_run`: say what it would do, smoke nothing;
    `leading`: whether this guard still holds the guard lease, asked again before each label)."""

    api: KubePort
    profile: Profile
    smoke: Smoke
    say: Callable[[str], None]
    #: Where a leader is smoked ({pod}, {lws}, {group}, {namespace}); None: its cluster DNS name.
    template: str | None = None
    retry_s: float = REGATE_RETRY_S
    clock: Callable[[], float] = time.monotonic
    #: Pod uid -> when its last re-gate failed (this guard's clock); forgotten once the pod is labelled or gone.
    failed_at: dict[str, float] = field(default_factory=dict)
    #: The last reason it said for standing aside (said once, not every pass).
    aside: str | None = None

    def __call__(self, dry_run: bool, leading: Callable[[], bool]) -> list[Regated]:
        if not self.profile.smoke.gate_traffic:
            return []
        namespace, release = self.profile.kubernetes.namespace, self.profile.name
        out = {
            name: marks.unmarked(self.api, namespace, name, self.profile.smoke.gate_restarts)
            for name in colours(release)
        }
        waiting = {leader.uid for found in out.values() for leader in found}
        self.failed_at = {uid: t for uid, t in self.failed_at.items() if uid in waiting}
        if not waiting:
            self.aside = None
            return []
        busy = other_gate(self.api, self.profile, datetime.now(UTC))
        if busy is not None:
            if busy != self.aside:
                self.say(f"re-gate: standing aside: {busy}")
            self.aside = busy
            return []
        self.aside = None
        done: list[Regated] = []
        for name, found in out.items():
            for leader in found:
                if not dry_run and not leading():
                    self.say("re-gate: no label: another guard took the lease over meanwhile")
                    return done
                done.append(self._one(name, leader, dry_run, leading))
                self.say(f"re-gate: {done[-1].describe()}")
        return done

    def _one(self, name: str, leader: Unmarked, dry_run: bool, leading: Callable[[], bool]) -> Regated:
        namespace = self.profile.kubernetes.namespace
        if leader.copy:
            if dry_run:
                return Regated(name, leader.pod, WOULD, f"would label it without a smoke: {COPY_WHY}")
            return self._mark(name, leader, COPIED, f"labelled without a smoke: {COPY_WHY}", record=False)
        url = group_endpoint(self.template, name, namespace, leader.group, self.profile.vllm.port)
        if dry_run:
            return Regated(name, leader.pod, WOULD, f"would smoke it at {url} and label it when it passes")
        now = self.clock()
        if not retry_due(self.failed_at.get(leader.uid), now, self.retry_s):
            due = self.failed_at[leader.uid] + self.retry_s - now
            return Regated(name, leader.pod, DEFERRED, f"out of traffic: its gate failed; smoked again in {due:.0f}s")
        try:
            failed = self.smoke(bounded(self.profile), url)
        except K3DeployError as exc:
            failed = exc.message
        if failed is not None:
            self.failed_at[leader.uid] = self.clock()
            return Regated(name, leader.pod, FAILED, f"smoke at {url} failed: {failed}; it stays out of traffic")
        if not leading():
            return Regated(name, leader.pod, DEFERRED, "passed, not labelled: another guard took the lease over")
        record = not self.profile.smoke.gate_restarts
        return self._mark(name, leader, LABELLED, f"smoke at {url} passed: labelled, it takes traffic", record=record)

    def _mark(self, name: str, leader: Unmarked, outcome: str, detail: str, *, record: bool) -> Regated:
        namespace = self.profile.kubernetes.namespace
        try:
            marks.mark(
                self.api,
                namespace,
                name,
                leader.group,
                leader.uid,
                Reporter(quiet=True),
                record_revision=record,
                why=detail,
            )
        except K3DeployError as exc:
            live = self.api.get("v1", "Pod", leader.pod, namespace)
            if live is None or live["metadata"].get("uid") != leader.uid or not is_marked(live):
                return Regated(name, leader.pod, FAILED, f"not labelled: {exc.message}")
            # The label landed; what failed is the record of its revision (a later restart is smoked, not copied).
            detail = f"{detail}; its revision not recorded: {exc.message}"
        self.failed_at.pop(leader.uid, None)
        return Regated(name, leader.pod, outcome, detail)
