"""The whole contract of a deployment target: what the pipeline and the CLI may ask of one, and nothing else.

A target renders a profile, checks its environment, plans a rollout, its rollback and its teardown as steps
(rollout/plan.py, rollout/undo.py) and runs one step at a time, reports its status as a typed object, names the
endpoint smoke tests (the whole deployment's or one group's) or runs the smoke Job inside it to its end (the pipeline
judges either) and keeps the smoke verdict. Nothing a rollout decides is kept on the target between two calls: what a
later step or a rollback needs travels in the plan, what a command's lock made is yielded by the lock (`Held`) and
passed to each step, and what outlives the process is the target's own state (the cluster's objects, the local state
directory). A command renders once: the set (`Rendering.objects`, a list of objects) is passed to every method that
works on it, and no method renders it again. A target that applies and waits in one go implements `apply` and
`wait_ready` and keeps the default one-step-each plan; one that rolls back and tears down in one go implements
`rollback` and `down` and keeps the default one-step undo and teardown. Callers never ask which target they hold:
everything that differs between targets is behind these methods. A new target is a package with a subclass of
`Target`, one line in the registry (k3deploy/targets/__init__.py) and a built-in profile.
"""

from __future__ import annotations

import abc
import contextlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from rich.console import RenderableType
from rich.table import Table

from k3deploy.errors import UsageError
from k3deploy.profile.model import Profile
from k3deploy.report.model import CheckResult
from k3deploy.rollout.plan import WHOLE, Plan
from k3deploy.rollout.steps import ApplyAll, DownAll, RollbackAll, Step, StepOutcome, WaitAll
from k3deploy.rollout.undo import Undo, whole, whole_down
from k3deploy.smoke.job_report import JobRun
from k3deploy.smoke.reach import Reach
from k3deploy.targets.rendering import Objects, Rendering


class Revision(BaseModel):
    """What was live before an apply (opaque to the pipeline), so a failed `up` can restore it."""

    target: str
    number: int | None = None
    data: dict[str, Any] = {}


class ApplyOutcome(BaseModel):
    """What an apply did: changed is False when the live state already matched."""

    changed: bool
    summary: str
    created: list[str] = []
    #: Each object or process applied and how (`-o json` of `apply`).
    applied: list[dict[str, str]] = []
    #: (what, unified diff) for a dry run with diff.
    diffs: list[tuple[str, str]] = []


@dataclass(frozen=True)
class Held:
    """What a command's lock made to hold itself (the Namespace its Lease lives in), as `Kind/name` keys: the apply
    that follows reports them created. The lock yields it, the pipeline passes it to each step."""

    made: tuple[str, ...] = ()


class WaitOutcome(BaseModel):
    """How a wait ended: the stage's detail, and anything applied once the set was ready."""

    detail: str = "ready"
    applied: list[dict[str, str]] = []


class TargetStatus(BaseModel):
    """What is live for a profile: the fields every target has, and the target's own report (`-o json`)."""

    target: str
    deployed: bool
    ready: bool
    endpoint: str | None = None
    #: The JSON report `status -o json` prints (target specific; always holds "target").
    report: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able report."""
        return dict(self.report)


class Target(abc.ABC):
    """A place a profile is deployed to."""

    name: str
    #: `apply` replaces the running server quickly, so `bench --ab/--sweep` may serve variants in turn.
    serves_variants: bool = False

    def __init__(self, options: Any = None, view: Any = None) -> None:
        self.options = options
        self.view = view

    @abc.abstractmethod
    def render(self, profile: Profile) -> Rendering:
        """What this target would deploy, computed without touching anything."""

    @abc.abstractmethod
    def preflight(self, profile: Profile, objects: Objects) -> list[CheckResult]:
        """Checks that need this target's environment (cluster or host); `objects`: the set the command rendered."""

    def default_timeout_s(self, profile: Profile) -> float:
        """The rollout deadline the profile asks for on this target."""
        return float(profile.kubernetes.rollout_timeout_s)

    def locked(self, profile: Profile, what: str, objects: Objects) -> contextlib.AbstractContextManager[Held | None]:
        """Held for a whole command (`what`, on the set it rendered); a target driven by one command at a time locks
        here. It yields what it made to hold itself (None: nothing)."""
        return contextlib.nullcontext()

    def outage_question(self, profile: Profile, objects: Objects) -> str | None:
        """The question to ask before this command's rollout would leave the endpoint serving nothing for a while
        (the only group replaced in place); None when it would not."""
        return None

    @abc.abstractmethod
    def current_revision(self, profile: Profile) -> Revision | None:
        """What is live now, or None when nothing is deployed."""

    def plan(self, profile: Profile, objects: Objects) -> Plan:
        """The steps of this command's rollout of `objects`, read from what is live now; by default `apply`, then
        `wait_ready`."""
        return WHOLE

    def run_step(self, profile: Profile, step: Step, timeout_s: float, held: Held | None = None) -> StepOutcome:
        """Do one step of `plan` (`timeout_s`: the wait stage's; `held`: what the command's lock made); a
        K3DeployError carrying a diagnosis on failure."""
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

    def apply(self, profile: Profile) -> ApplyOutcome:
        """Make the live state match the profile (or, for a dry run, say how it would change); idempotent."""
        raise NotImplementedError(f"target {self.name!r} plans its own steps")

    def wait_ready(self, profile: Profile, timeout_s: float) -> WaitOutcome:
        """Block until serving; raise a K3DeployError carrying a diagnosis on failure or timeout."""
        raise NotImplementedError(f"target {self.name!r} plans its own steps")

    @abc.abstractmethod
    def endpoint(self, profile: Profile) -> str:
        """Base URL of the OpenAI-compatible server, e.g. http://127.0.0.1:8000."""

    def reach(self, profile: Profile) -> contextlib.AbstractContextManager[Reach]:
        """The way `up`'s smoke reaches the server, held open for the run: by default the target's endpoint."""
        url = self.endpoint(profile)
        return contextlib.nullcontext(Reach(url, "direct", url))

    def group_reach(self, profile: Profile, lws: str, group: int) -> contextlib.AbstractContextManager[Reach]:
        """The way to one group's leader, for a plan's per-group smoke; UsageError where the target has no groups."""
        raise UsageError(f"target {self.name!r} has no groups to smoke one by one")

    def run_group_smoke_job(self, profile: Profile, objects: Objects, lws: str, group: int) -> JobRun:
        """Run the set's smoke Job against one group from inside the target (`up --smoke in-cluster`) to its end;
        the pipeline judges it. UsageError where the target has no inside."""
        raise UsageError(f"target {self.name!r} has no groups to smoke one by one")

    def run_smoke_job(self, profile: Profile, objects: Objects) -> JobRun:
        """Run the set's smoke Job from inside the target (`up --smoke in-cluster`) to its end; the pipeline judges
        it. UsageError where the target has no inside."""
        raise UsageError(
            f"--smoke in-cluster needs a cluster; profile {profile.name!r} runs on target {self.name!r}",
            hint="drop --smoke: the local target's smoke already runs where the server does",
        )

    def leader_backends(self, profile: Profile) -> dict[str, str]:
        """Leader pod -> the all-reduce backend its log names (observe/allreduce_probe.py); none where no leader pods
        run."""
        return {}

    @abc.abstractmethod
    def record_smoke(self, profile: Profile, verdict: dict[str, Any]) -> None:
        """Keep the smoke verdict beside what it judged (shown by `status`)."""

    def rollback(self, profile: Profile, previous: Revision | None) -> str:
        """Restore `previous` (or remove what a first install created) in one go; return what was done."""
        raise NotImplementedError(f"target {self.name!r} plans its own steps")

    def undo_plan(
        self,
        profile: Profile,
        previous: Revision | None,
        plan: Plan | None,
        begun: list[Step],
        objects: Objects,
    ) -> Undo:
        """The steps that roll back a rollout of `objects` that failed part way through `plan` (`begun`: its steps
        that started; no plan: restore `previous` in place of what is live), read from what is live now; by default
        `rollback` in one go."""
        return whole(previous)

    @abc.abstractmethod
    def status(self, profile: Profile) -> TargetStatus:
        """What is live."""

    def status_view(self, status: TargetStatus) -> RenderableType:
        """The table `status` prints; by default one row per field of the report."""
        table = Table("FIELD", "VALUE", box=None)
        for key, value in status.report.items():
            table.add_row(key, value if isinstance(value, str) else json.dumps(value))
        return table

    def down_question(self, profile: Profile, purge: bool) -> str:
        """What `down` asks on a terminal before it removes anything."""
        deleted = "everything, including the weights" if purge else "the deployment (weights kept)"
        return f"Delete {deleted} of {profile.name!r} on target {self.name!r}?"

    def down(self, profile: Profile, purge: bool, objects: Objects) -> str:
        """Remove the deployment of `objects` in one go (keeping cached weights unless purge); a no-op when nothing is
        there."""
        raise NotImplementedError(f"target {self.name!r} plans its own steps")

    def down_plan(self, profile: Profile, purge: bool, objects: Objects) -> Undo:
        """The steps that remove the deployment of `objects` (keeping cached weights unless purge), read from what is
        live now; by default `down` in one go."""
        return whole_down(list(objects), purge)
