"""Runs one step of a rollout plan (rollout/plan.py) against a cluster; keeps nothing between steps.

Everything a step needs comes in with the runner (the API, the namespace, a way to make a Waiter, the deadline) or
with the step itself. The steps the pipeline runs itself (a group's smoke, gating leaders by smoke) and those of a target that applies in
one go are not this module's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from k3deploy.errors import K3DeployError
from k3deploy.kube.port import KubePort
from k3deploy.reporter import Reporter
from k3deploy.rollout.colours import selected
from k3deploy.rollout.ownership import owned_by
from k3deploy.rollout.steps import (
    APPLY,
    SERVER_DRY_RUN,
    Apply,
    Delete,
    Diff,
    GateLeaders,
    Guard,
    Note,
    RecordGate,
    RecordRevision,
    Remove,
    RemoveLeftovers,
    Restore,
    Step,
    StepOutcome,
    Switch,
    Wait,
    WaitGone,
    WaitGroup,
)
from k3deploy.rollout.surge import in_place_note
from k3deploy.targets.kubernetes import bluegreen, gates, history, marks
from k3deploy.targets.kubernetes import bluegreen_repair as repair
from k3deploy.targets.kubernetes.apply import KEPT, Applied, apply_objects, diff_objects
from k3deploy.targets.kubernetes.guard import foreign_change
from k3deploy.targets.kubernetes.upgrade import GroupRoll
from k3deploy.targets.kubernetes.wait import Waiter


@dataclass(frozen=True)
class Runner:
    """Executes the cluster steps of a plan, one per `run` call."""

    api: KubePort
    namespace: str
    release: str
    reporter: Reporter
    #: A Waiter bounded by the command's deadline as it stands when the step runs.
    waiter: Callable[[], Waiter]
    remaining: Callable[[], float | None]
    force: bool = False
    #: What this command's lock created to hold itself (the Namespace of its Lease): its apply reports it created.
    made: tuple[str, ...] = ()

    def run(self, step: Step) -> StepOutcome:
        """Do `step`; raise a K3DeployError (with a diagnosis where there is one) when it fails."""
        if isinstance(step, Note):
            self.reporter.note(step.text)
        elif isinstance(step, Apply):
            return self._apply(step)
        elif isinstance(step, Diff):
            return self._diff(step)
        elif isinstance(step, Wait):
            self.waiter().wait(step.objects)
        elif isinstance(step, WaitGroup):
            GroupRoll(self.api, self.namespace, self.reporter, remaining=self.remaining).wait_group(
                step.lws, step.group
            )
        elif isinstance(step, RecordGate):
            gates.record(self.api, self.namespace, step.lws["metadata"]["name"], step.lws, step.group)
        elif isinstance(step, GateLeaders) and not step.smoke:
            for leader in marks.unmarked(self.api, self.namespace, step.lws, gate_restarts=True):
                why = "no gate was asked for (apply, up --skip-smoke)"
                marks.mark(
                    self.api,
                    self.namespace,
                    step.lws,
                    leader.group,
                    leader.uid,
                    self.reporter,
                    record_revision=False,
                    why=why,
                )
        elif isinstance(step, Switch):
            self._switch(step)
        elif isinstance(step, Delete):
            return self._delete(step)
        elif isinstance(step, WaitGone):
            self._wait_gone(step)
        elif isinstance(step, RemoveLeftovers):
            repair.clear_leftovers(self.api, step.objects, step.serving, self.reporter, self.waiter)
        elif isinstance(step, RecordRevision):
            return StepOutcome(revision=history.record_revision(self.api, self.namespace, self.release, step.objects))
        elif isinstance(step, Restore):
            return self._restore(step)
        elif isinstance(step, Remove):
            removal = history.remove(self.api, step.objects, self.reporter, keep=step.keep, label=step.label)
            return StepOutcome(removed=removal.deleted, kept=removal.kept)
        elif isinstance(step, Guard):
            foreign = foreign_change(self.api, step.applied, step.previous)
            return StepOutcome(summary=foreign, stop=foreign is not None)
        else:
            raise TypeError(f"a cluster runs no {type(step).__name__} step")
        return StepOutcome()

    def _apply(self, step: Apply) -> StepOutcome:
        suffix = SERVER_DRY_RUN if step.dry_run else ""

        def said(applied: Applied) -> None:
            if not step.echo:
                return
            if step.stage != APPLY:
                self.reporter.note(f"  {applied.key} {applied.action}")
                return
            self._noted(self._made(applied), suffix, in_place_note(applied.obj, applied.action))

        try:
            results = apply_objects(self.api, step.objects, force=self.force, dry_run=step.dry_run, on_applied=said)
        except K3DeployError as exc:
            if step.failure_of is None:
                raise
            raise repair.as_rollout_failure(exc, step.failure_of) from exc
        if step.waited:
            self.waiter().wait(step.objects)
        if not step.report:
            return StepOutcome()
        made = [self._made(a) for a in results]
        return StepOutcome(
            applied=[{"object": a.key, "action": a.action} for a in made], changed=any(a.changed for a in made)
        )

    def _delete(self, step: Delete) -> StepOutcome:
        key = f"{self.namespace}/{step.kind}/{step.name}"
        live = self.api.get(step.api_version, step.kind, step.name, self.namespace)
        if live is None:
            return StepOutcome()
        if not owned_by(live, self.release, self.namespace):
            # Its name is k3deploy's, the object is not (a user's ConfigMap made before the first `up`).
            self.reporter.note(f"  kept {key}: k3deploy did not create it")
            return StepOutcome(kept=[f"{key} (k3deploy did not create it)"])
        if step.unless_selected_by is not None:
            service = self.api.get("v1", "Service", step.unless_selected_by, self.namespace)
            if selected(service) == step.name:
                why = f"Service/{step.unless_selected_by} still selects it"
                self.reporter.note(f"  kept {key}: {why}")
                return StepOutcome(kept=[f"{key} ({why})"])
        if not self.api.delete(step.api_version, step.kind, step.name, self.namespace):
            return StepOutcome()
        if step.note:
            self.reporter.note(step.note)
        return StepOutcome(removed=[f"{step.kind}/{step.name}"])

    def _wait_gone(self, step: WaitGone) -> None:
        try:
            self.waiter().wait_pods_gone(step.name)
        except K3DeployError:
            if not step.best_effort:
                raise

    def _restore(self, step: Restore) -> StepOutcome:
        changed = []
        for applied in apply_objects(self.api, step.objects, force=True):
            if applied.changed:
                changed.append({"object": applied.key, "action": applied.action})
                self.reporter.note(f"  rollback: {applied.action} {applied.key}")
        return StepOutcome(applied=changed, changed=bool(changed))

    def _diff(self, step: Diff) -> StepOutcome:
        diffs = diff_objects(self.api, step.objects, force=self.force)
        changed = [key for key, _ in diffs]
        total = len(step.objects)
        summary = (
            f"{len(changed)} of {total} objects would change"
            if changed
            else f"no changes: all {total} objects match the live state"
        )
        return StepOutcome(changed=bool(changed), diffs=diffs, summary=summary)

    def _switch(self, step: Switch) -> None:
        if step.service is None:
            return
        apply_objects(self.api, [step.service], force=self.force)
        name = step.service["metadata"]["name"]
        self.reporter.note(f"  switched Service {name} to {step.group}")
        bluegreen.wait_endpoint(self.api, self.namespace, name, step.leader, self.remaining)

    def _made(self, applied: Applied) -> Applied:
        """`applied`, as created when it is the Namespace this command made for its lease."""
        if applied.key in self.made and applied.action == "unchanged":
            return dataclasses.replace(applied, action="created")
        return applied

    def _noted(self, applied: Applied, suffix: str, warning: str | None) -> None:
        if applied.action == KEPT:
            self.reporter.note(f"  {applied.key} exists and k3deploy did not create it: kept as it is")
            return
        self.reporter.note(f"  {applied.key} {applied.action}{suffix}")
        if warning is not None:
            self.reporter.note(f"  {warning}")
