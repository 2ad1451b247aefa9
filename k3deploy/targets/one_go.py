"""A target that applies, waits, rolls back and tears down each in one go (the local target's way).

Such a target implements `apply`, `wait_ready`, `rollback` and `down`; `OneGoTarget` makes each of its plans one step
of each (rollout/plan.py `WHOLE`, rollout/undo.py `whole` and `whole_down`) and runs those steps through them, so the
pipeline drives it exactly as it drives a target that plans every step itself.
"""

from __future__ import annotations

import abc

from pydantic import BaseModel

from k3deploy.profile.model import Profile
from k3deploy.rollout.plan import WHOLE, Plan
from k3deploy.rollout.steps import ApplyAll, DownAll, RollbackAll, Step, StepOutcome, WaitAll
from k3deploy.rollout.undo import Undo, whole, whole_down
from k3deploy.targets.base import Held, Revision, Target
from k3deploy.targets.rendering import Objects


class ApplyOutcome(BaseModel):
    """What an apply did: changed is False when the live state already matched."""

    changed: bool
    summary: str
    created: list[str] = []
    #: Each object or process applied and how (`-o json` of `apply`).
    applied: list[dict[str, str]] = []
    #: (what, unified diff) for a dry run with diff.
    diffs: list[tuple[str, str]] = []


class WaitOutcome(BaseModel):
    """How a wait ended: the stage's detail, and anything applied once the set was ready."""

    detail: str = "ready"
    applied: list[dict[str, str]] = []


class OneGoTarget(Target):
    """A Target whose rollout is `apply` then `wait_ready`, whose rollback is `rollback` and whose teardown is
    `down`, each done in one go."""

    def plan(self, profile: Profile, objects: Objects) -> Plan:
        """`apply`, then `wait_ready`."""
        return WHOLE

    def undo_plan(
        self,
        profile: Profile,
        previous: Revision | None,
        plan: Plan | None,
        begun: list[Step],
        objects: Objects,
    ) -> Undo:
        """`rollback` to `previous`, whatever the plan had begun."""
        return whole(previous)

    def down_plan(self, profile: Profile, purge: bool, objects: Objects) -> Undo:
        """`down`."""
        return whole_down(list(objects), purge)

    def run_step(self, profile: Profile, step: Step, timeout_s: float, held: Held | None = None) -> StepOutcome:
        """Run one of the one-go steps of the plans above through the method that does it."""
        if isinstance(step, ApplyAll):
            outcome = self.apply(profile)
            return StepOutcome(list(outcome.applied), outcome.changed, list(outcome.diffs), outcome.summary)
        if isinstance(step, WaitAll):
            waited = self.wait_ready(profile, timeout_s)
            return StepOutcome(list(waited.applied), summary=waited.detail)
        if isinstance(step, RollbackAll):
            return StepOutcome(summary=self.rollback(profile, step.previous))
        if isinstance(step, DownAll):
            return StepOutcome(summary=self.down(profile, step.purge, step.objects))
        raise TypeError(f"target {self.name!r} runs no {type(step).__name__} step")

    @abc.abstractmethod
    def apply(self, profile: Profile) -> ApplyOutcome:
        """Make the live state match the profile (or, for a dry run, say how it would change); idempotent."""

    @abc.abstractmethod
    def wait_ready(self, profile: Profile, timeout_s: float) -> WaitOutcome:
        """Block until serving; raise a K3DeployError carrying a diagnosis on failure or timeout."""

    @abc.abstractmethod
    def rollback(self, profile: Profile, previous: Revision | None) -> str:
        """Restore `previous` (or remove what a first install created); return what was done."""

    @abc.abstractmethod
    def down(self, profile: Profile, purge: bool, objects: Objects) -> str:
        """Remove the deployment of `objects` (keeping cached weights unless purge); a no-op when nothing is there."""
