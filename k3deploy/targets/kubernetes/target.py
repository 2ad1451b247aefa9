"""The Kubernetes target: the rendered set on a cluster, rolled out with server-side apply and watched.

The target is the cluster's I/O port: it reads what is live, plans the command's steps from it (rollout/plan.py:
the node-preflight and prefetch Jobs waited to completion before what follows them, the smoke Job applied once the
LeaderWorkerSet is ready, a rolling walk or a blue-green switch) and runs one step at a time (targets/kubernetes/runner.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

from rich.console import RenderableType

from k3deploy.errors import UsageError
from k3deploy.kobject import JsonObject, KubeObject
from k3deploy.kube.api import KubeApi
from k3deploy.kube.deadline import Deadline
from k3deploy.observe import allreduce_probe
from k3deploy.preflight.run import run_preflight
from k3deploy.profile.model import Profile
from k3deploy.redact import redact_url
from k3deploy.render.manifests import rendered_objects, service_url
from k3deploy.report.model import CheckResult
from k3deploy.reporter import Reporter
from k3deploy.rollout import plan as rollout_plan
from k3deploy.rollout import undo
from k3deploy.rollout.access import command_access
from k3deploy.rollout.plan import Plan, Strategy
from k3deploy.rollout.steps import APPLY, DOWN, ROLLBACK, Begin, Step, StepOutcome
from k3deploy.rollout.undo import Undo
from k3deploy.smoke.job_report import JobRun
from k3deploy.smoke.reach import Reach, SmokeUnreachable
from k3deploy.targets import IN_CLUSTER, DeployOptions
from k3deploy.targets.base import Group, Held, Rendering, Revision, Target, TargetStatus
from k3deploy.targets.kubernetes import bluegreen, forward, history, in_cluster, marks
from k3deploy.targets.kubernetes.apply import apply_object
from k3deploy.targets.kubernetes.host_model import ensure_host_model
from k3deploy.targets.kubernetes.lease import LEASE_API, ReleaseLease, identity
from k3deploy.targets.kubernetes.made import remove_if_unused
from k3deploy.targets.kubernetes.observe import observe
from k3deploy.targets.kubernetes.prefetch_jobs import stale_prefetch_jobs
from k3deploy.targets.kubernetes.render import render as render_set
from k3deploy.targets.kubernetes.runner import Runner
from k3deploy.targets.kubernetes.status import describe
from k3deploy.targets.kubernetes.view import (
    kubernetes_down_question,
    kubernetes_status_view,
)
from k3deploy.targets.kubernetes.wait import Waiter
from k3deploy.targets.rendering import Objects
from k3deploy.traffic_gate import Unmarked

#: Seconds the smoke verdict's recording may take when smoke ran past the rollout's deadline.
_RECORD_BUDGET_S = 60.0


def _objects(profile: Profile) -> list[KubeObject]:
    """The profile's set, for what renders it afresh: `status`."""
    return rendered_objects(profile)


class KubernetesTarget(Target):
    """A profile deployed as a LeaderWorkerSet (plus its namespace, cache, Jobs, Service...) on a cluster."""

    name = "kubernetes"

    def __init__(self, options: DeployOptions | None = None, reporter: Reporter | None = None) -> None:
        self.options: DeployOptions = options or DeployOptions()
        self.reporter: Reporter = reporter or Reporter(interactive=False)
        self._api: KubeApi | None = None
        if self.options.timeout_s is not None and not self.deadline.bounded:
            self.deadline.restart(self.options.timeout_s)

    @property
    def deadline(self) -> Deadline:
        """The command's deadline: the connection's (kube/options.py), which every API request reads
        (kube/deadline.py). --timeout bounds the whole command; without it each phase (a Begin step) gets the
        profile's rollout_timeout_s when it starts, and a smoke Job or the verdict's recording a budget of its own."""
        return self.options.kube.deadline

    @property
    def api(self) -> KubeApi:
        """The cluster connection (made on first use, so `status` of a bad kubeconfig fails where it should)."""
        if self._api is None:
            self._api = KubeApi(self.options.kube)
        return self._api

    def _timeout_s(self, profile: Profile) -> float:
        return float(self.options.timeout_s or profile.kubernetes.rollout_timeout_s)

    def _start_phase(self, profile: Profile) -> None:
        """Without --timeout, a phase (apply, rollback, down) gets the profile's rollout timeout from now."""
        if self.options.timeout_s is None:
            self.deadline.restart(self._timeout_s(profile))

    def _waiter(self, profile: Profile) -> Waiter:
        if not self.deadline.bounded:
            self._start_phase(profile)
        return Waiter(
            self.api,
            profile.kubernetes.namespace,
            self.reporter,
            deadline=float(self.deadline.at or 0.0),
            unschedulable_grace_s=profile.kubernetes.unschedulable_grace_s,
            timeout_label=f" ({self._timeout_s(profile):g}s)",
        )

    # -- the Target contract ------------------------------------------------------------------------------

    def locked(self, profile: Profile, what: str, objects: Objects) -> contextlib.AbstractContextManager[Held | None]:
        """The release's Lease for the whole command (targets/kubernetes/lease.py); none for a dry run or a diff. It yields the
        Namespace it made to hold the Lease in, if it did."""
        if self.options.dry_run or self.options.diff:
            return contextlib.nullcontext()
        return self._leased(profile, what, objects)

    @contextlib.contextmanager
    def _leased(self, profile: Profile, what: str, objects: Objects) -> Iterator[Held]:
        namespace = profile.kubernetes.namespace
        # Taking, renewing and freeing the lease count against --timeout and its grace as every request does: with
        # the API out of reach the command still ends by then (the lease then lapses by itself).
        api = self.api
        made = Held()
        rendered = next((o for o in objects if o["kind"] == "Namespace"), None)
        if api.get("v1", "Namespace", namespace) is None:
            if what == "down" or rendered is None:
                yield made  # nothing there to change, or no namespace of k3deploy's to hold the lease in
                return
            # The Namespace the apply makes anyway (it holds the lease): the apply still reports it created.
            made = Held((apply_object(api, rendered).key,))
        if not api.served(LEASE_API, "Lease"):
            self.reporter.note(f"  lock: the cluster serves no {LEASE_API} Lease; {what} runs unlocked")
            yield made
        else:
            with ReleaseLease(api, namespace, profile.name, identity(what), note=self.reporter.note).hold():
                yield made
        if made.made and rendered is not None:
            # A command that ended before it put anything there (preflight failed) leaves no namespace behind.
            remove_if_unused(api, rendered, self.reporter)

    def render(self, profile: Profile) -> Rendering:
        """The manifests, one file per object in apply order, plus kustomization.yaml (targets/kubernetes/render.py)."""
        return render_set(profile)

    def preflight(self, profile: Profile, objects: Objects) -> list[CheckResult]:
        """Cluster checks of the preflight stage (node checks need the GPU host and run there); the access review
        covers every step this command's plan may run, and `pods/portforward` when `up`'s smoke will reach the leader
        through a port-forward."""
        options = self.options
        forwards = (
            options.group_smoke
            and options.smoke_where != IN_CLUSTER
            and not (options.endpoint or profile.kubernetes.endpoint_override)
        )
        needs = command_access(objects, self._strategy(), port_forward=bool(forwards))
        return run_preflight(profile, node=False, cluster=True, kube=options.kube, objects=objects, needs=needs)

    def outage_question(self, profile: Profile, objects: Objects) -> str | None:
        """Blue-green without a second free clique, or a rolling apply of the only group (targets/kubernetes/bluegreen.py); a
        UsageError for blue-green of N >= 2 groups."""
        if self.options.strategy == "blue-green":
            return bluegreen.outage_question(self.api, profile, list(objects))
        return bluegreen.in_place_question(self.api, profile, list(objects))

    def current_revision(self, profile: Profile) -> Revision | None:
        """The last recorded revision of the set, or None on a first install; a UsageError, before anything is
        applied, when a ConfigMap k3deploy did not create holds the history's name."""
        history.refuse_foreign_history(self.api, profile.kubernetes.namespace, profile.name)
        entries = history.read_history(self.api, profile.kubernetes.namespace, profile.name)
        if not entries:
            return None
        last = entries[-1]
        return Revision(target=self.name, number=int(last["revision"]), data={"objects": last["objects"]})

    def _strategy(self) -> Strategy:
        """What the command asked for, as the plan builders read it."""
        options = self.options
        return Strategy(
            name=options.strategy,
            group_smoke=options.group_smoke,
            dry_run=options.dry_run,
            diff=options.diff,
            wait=options.wait,
            in_cluster_smoke=options.smoke_where == IN_CLUSTER,
        )

    def plan(self, profile: Profile, objects: Objects) -> Plan:
        """Read what is live once (targets/kubernetes/observe.py: the serving colour, the eligible hosts, the
        LeaderWorkerSet, a cut-short blue-green's leftovers) and plan the command's steps for `objects` from it
        (rollout/plan.py)."""
        strategy = self._strategy()
        seen = observe(self.api, profile, list(objects), strategy, self.reporter)
        live = dataclasses.replace(
            seen.live,
            ungated_service=not (strategy.dry_run or strategy.diff) and marks.service_ungated(self.api, seen.objects),
        )
        return rollout_plan.build(seen.objects, live, strategy, profile.name)

    def run_step(self, profile: Profile, step: Step, timeout_s: float, held: Held | None = None) -> StepOutcome:
        """Do one step: a stage's start sets the deadline, the rest is the runner's (targets/kubernetes/runner.py)."""
        if isinstance(step, Begin):
            if step.stage in (APPLY, DOWN):
                self._start_phase(profile)
                if step.stage == APPLY and not (self.options.dry_run or self.options.diff):
                    ensure_host_model(profile, self.reporter)
            elif step.stage == ROLLBACK:
                # A rollback after a timed-out rollout gets a budget of its own: the failed revision must not stay
                # live.
                self.deadline.restart(self._timeout_s(profile))
            else:
                remaining = self.deadline.remaining()
                if remaining is None or timeout_s < remaining:
                    self.deadline.restart(timeout_s)
            return StepOutcome()
        return self._runner(profile, held or Held()).run(step)

    def _runner(self, profile: Profile, held: Held) -> Runner:
        return Runner(
            self.api,
            profile.kubernetes.namespace,
            profile.name,
            self.reporter,
            waiter=lambda: self._waiter(profile),
            remaining=self.deadline.remaining,
            force=self.options.force_conflicts,
            made=held.made,
        )

    def reach(self, profile: Profile, group: Group | None = None) -> contextlib.AbstractContextManager[Reach]:
        """The override when given (--group-endpoint for a group, --endpoint), else a port-forward through the API
        server to the group's leader or to a ready leader the API Service selects (targets/kubernetes/forward.py)."""
        if group is not None:
            return forward.reach(self.api, self.options, profile, *group)
        if self.deadline.expired():
            # The rollout spent --timeout; finding the leader takes a few requests (smoke has its own bound).
            self.deadline.restart(_RECORD_BUDGET_S)
        return forward.reach(self.api, self.options, profile)

    def run_smoke_job(self, profile: Profile, objects: Objects, group: Group | None = None) -> JobRun:
        """Run the rendered smoke Job afresh to its end, against the API Service or one group's leader, and read its
        log (targets/kubernetes/in_cluster.py)."""
        job = in_cluster.smoke_job(list(objects))
        if job is None:
            message, hint = "--smoke in-cluster: the rendered set has no smoke Job", "drop --smoke in-cluster"
            # A group's gate that cannot run is an unreachable smoke (nothing rolled back); the final one, bad usage.
            raise SmokeUnreachable(message, hint=hint) if group is not None else UsageError(message, hint=hint)
        # Bounded by the Job's own deadline (and a grace), and by what is left of --timeout when the command has one:
        # --timeout bounds every wait of the command.
        limit = in_cluster.job_bound_s(job)
        if self.options.timeout_s is None:
            self.deadline.restart(limit)
        else:
            limit = max(0.0, min(limit, self.deadline.remaining() or 0.0))
        force = self.options.force_conflicts
        if group is not None:
            return in_cluster.gate(self.api, job, *group, profile.vllm.port, self.reporter, force=force, limit=limit)
        return in_cluster.run(self.api, job, self.reporter, force=force, limit=limit)

    def endpoint(self, profile: Profile) -> str:
        """The override when given, else the Service's cluster DNS name (reachable from inside the cluster)."""
        override = self.options.endpoint or profile.kubernetes.endpoint_override
        if override:
            return override.rstrip("/")

        return service_url(profile)

    def undo_plan(
        self,
        profile: Profile,
        previous: Revision | None,
        plan: Plan | None,
        begun: list[Step],
        objects: Objects,
    ) -> Undo:
        """The rollback of what `plan` left (rollout/undo.py): a blue-green cut short before its switch is abandoned
        (the old group kept serving); after it, the previous revision comes back first, then the new group goes;
        otherwise the previous revision is restored, or a first install removed (weights kept). Without a plan (a
        standalone rollback), what is restored over is the set read under the colour that serves."""
        planned = plan is not None and (plan.blue_green is not None or plan.objects)
        live = [] if planned else bluegreen.as_live(self.api, profile, list(objects))
        old = list(previous.data.get("objects") or []) if previous is not None else None
        number = previous.number if previous is not None else None
        return undo.undo(old, number, plan, begun, live, profile.name)

    def status(self, profile: Profile) -> TargetStatus:
        """Objects, readiness, pods per group (node, clique), endpoint, revisions, the last smoke verdict and, once
        deployed, each leader's all-reduce backend."""
        objects = bluegreen.as_live(self.api, profile, _objects(profile))
        report = describe(
            self.api,
            profile,
            objects + bluegreen.other_group(self.api, profile, objects),
            redact_url(self.endpoint(profile)),
        )
        report["blue_green"] = bluegreen.describe(self.api, profile, objects)
        if report["deployed"]:
            # Leader pod -> the all-reduce backend its log names ("unknown" where the log does not say).
            report["allreduce_backend"] = self.leader_backends(profile)
        return TargetStatus(
            target=self.name,
            deployed=report["deployed"],
            ready=report["ready"],
            endpoint=report["endpoint"],
            report=report,
        )

    def status_view(self, status: TargetStatus, details: bool = False) -> RenderableType:
        """The objects' and pods' tables, endpoint, revisions and last smoke verdict; many groups summarised by state
        unless `details`."""
        return kubernetes_status_view(status.report, details)

    def down_question(self, profile: Profile, purge: bool) -> str:
        """The namespace `down` empties."""
        return kubernetes_down_question(profile, purge)

    def down_plan(self, profile: Profile, purge: bool, objects: Objects) -> Undo:
        """Delete in reverse order what k3deploy created of the set under the colour that serves (and a half-done
        blue-green's other group and previews), then wait for the pods to go (rollout/undo.py `teardown`); the weight
        PVC and the namespace stay unless `purge`; what k3deploy did not create always stays, and is named."""
        live = bluegreen.as_live(self.api, profile, list(objects))
        stale = stale_prefetch_jobs(self.api, profile.name, profile.kubernetes.namespace, live)
        return undo.teardown(live, [*bluegreen.leftovers(self.api, profile, live), *stale], purge, profile.name)

    def unmarked_leaders(self, profile: Profile, lws: str) -> list[Unmarked]:
        """The ready leaders of `lws` the API Service does not select yet (targets/kubernetes/marks.py)."""
        return marks.unmarked(self.api, profile.kubernetes.namespace, lws, profile.smoke.gate_restarts)

    def leader_uid(self, profile: Profile, group: Group) -> str | None:
        """The uid of the group's leader pod before its gate."""
        return marks.leader_uid(self.api, profile.kubernetes.namespace, *group)

    def mark_leader(self, profile: Profile, group: Group, uid: str | None, why: str) -> None:
        """Label the group's leader for the API Service (targets/kubernetes/marks.py)."""
        marks.mark(
            self.api,
            profile.kubernetes.namespace,
            *group,
            uid,
            self.reporter,
            record_revision=not profile.smoke.gate_restarts,
            why=why,
        )

    def leader_backends(self, profile: Profile) -> dict[str, str]:
        """Leader pod -> the all-reduce backend its log names (observe/allreduce_probe.py)."""
        return allreduce_probe.leader_backends(self.api, profile)

    def record_smoke(self, profile: Profile, verdict: JsonObject) -> None:
        """Keep the smoke verdict beside the revision it judged (shown by `status`)."""
        if self.deadline.expired():
            # Smoke is bounded by its own overall timeout; keeping its verdict needs only a few requests.
            self.deadline.restart(_RECORD_BUDGET_S)
        history.record_smoke(self.api, profile.kubernetes.namespace, profile.name, verdict)
