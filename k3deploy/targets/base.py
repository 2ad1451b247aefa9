"""The whole contract of a deployment target: what the pipeline and the CLI may ask of one, and nothing else.

A target renders a profile, checks its environment, plans a rollout, its rollback and its teardown as steps
(rollout/plan.py, rollout/undo.py) and runs one step at a time, reports its status as a typed object, names the
endpoint smoke tests (the whole deployment's or one group's) or runs the smoke Job inside it to its end (the pipeline
judges either) and keeps the smoke verdict. Nothing a rollout decides is kept on the target between two calls: what a
later step or a rollback needs travels in the plan, what a command's lock made is yielded by the lock (`Held`) and
passed to each step, and what outlives the process is the target's own state (the cluster's objects, the local state
directory). A command renders once: the set (`Rendering.objects`, a list of objects) is passed to every method that
works on it, and no method renders it again. A target that applies, waits, rolls back and tears down each in one go
subclasses `OneGoTarget` (targets/one_go.py), which plans and runs those one-step plans. Callers never ask which
target they hold:
everything that differs between targets is behind these methods. A new target is a package with a subclass of
`Target` (or of `OneGoTarget`), one line in the registry (k3deploy/targets/__init__.py) and a built-in profile.
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
from k3deploy.kobject import JsonObject
from k3deploy.profile.model import Profile
from k3deploy.report.model import CheckResult
from k3deploy.reporter import Reporter
from k3deploy.rollout.plan import Plan
from k3deploy.rollout.steps import Step, StepOutcome
from k3deploy.rollout.undo import Undo
from k3deploy.smoke.job_report import JobRun
from k3deploy.smoke.reach import Reach
from k3deploy.targets.rendering import Objects as Objects  # re-exported: the targets import both from here
from k3deploy.targets.rendering import Rendering as Rendering
from k3deploy.traffic_gate import Unmarked


class Revision(BaseModel):
    """What was live before an apply (opaque to the pipeline), so a failed `up` can restore it."""

    target: str
    number: int | None = None
    data: JsonObject = {}


#: One group of a LeaderWorkerSet: (its name, the group's index), as a plan's per-group smoke names it.
Group = tuple[str, int]


@dataclass(frozen=True)
class Held:
    """What a command's lock made to hold itself (the Namespace its Lease lives in), as `Kind/name` keys: the apply
    that follows reports them created. The lock yields it, the pipeline passes it to each step."""

    made: tuple[str, ...] = ()


class TargetStatus(BaseModel):
    """What is live for a profile: the fields every target has, and the target's own report (`-o json`)."""

    target: str
    deployed: bool
    ready: bool
    endpoint: str | None = None
    #: The JSON report `status -o json` prints (target specific; always holds "target").
    report: JsonObject

    def to_dict(self) -> JsonObject:
        """The JSON-able report."""
        return dict(self.report)


class Target(abc.ABC):
    """A place a profile is deployed to."""

    name: str
    #: `apply` replaces the running server quickly, so `bench --ab/--sweep` may serve variants in turn.
    serves_variants: bool = False

    def __init__(self, options: Any = None, reporter: Reporter | None = None) -> None:
        self.options = options
        self.reporter = reporter

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

    @abc.abstractmethod
    def plan(self, profile: Profile, objects: Objects) -> Plan:
        """The steps of this command's rollout of `objects`, read from what is live now."""

    @abc.abstractmethod
    def run_step(self, profile: Profile, step: Step, timeout_s: float, held: Held | None = None) -> StepOutcome:
        """Do one step of `plan`, `undo_plan` or `down_plan` (`timeout_s`: the wait stage's; `held`: what the
        command's lock made); a K3DeployError carrying a diagnosis on failure."""

    @abc.abstractmethod
    def endpoint(self, profile: Profile) -> str:
        """Base URL of the OpenAI-compatible server, e.g. http://127.0.0.1:8000."""

    def reach(self, profile: Profile, group: Group | None = None) -> contextlib.AbstractContextManager[Reach]:
        """The way `up`'s smoke reaches the server, held open for the run: the whole deployment's (by default the
        target's endpoint) or, for a plan's per-group smoke, one group's leader (UsageError where the target has no
        groups)."""
        if group is not None:
            raise UsageError(f"target {self.name!r} has no groups to smoke one by one")
        url = self.endpoint(profile)
        return contextlib.nullcontext(Reach(url, "direct", url))

    def run_smoke_job(self, profile: Profile, objects: Objects, group: Group | None = None) -> JobRun:
        """Run the set's smoke Job from inside the target (`up --smoke in-cluster`), against the whole deployment or
        one group, to its end; the pipeline judges it. UsageError where the target has no inside."""
        if group is not None:
            raise UsageError(f"target {self.name!r} has no groups to smoke one by one")
        raise UsageError(
            f"--smoke in-cluster needs a cluster; profile {profile.name!r} runs on target {self.name!r}",
            hint="drop --smoke: the local target's smoke already runs where the server does",
        )

    def unmarked_leaders(self, profile: Profile, lws: str) -> list[Unmarked]:
        """The ready leaders of group set `lws` that take no traffic yet (k3deploy/traffic_gate.py); none where the
        target gates no traffic."""
        return []

    def leader_uid(self, profile: Profile, group: Group) -> str | None:
        """The identity of a group's leader before its gate, so the pod judged is the pod marked; None where none."""
        return None

    def mark_leader(self, profile: Profile, group: Group, uid: str | None, why: str) -> None:
        """Let a group's leader (still the pod `uid`) take traffic, `why` said; SmokeUnreachable when it was
        re-created since. Nothing where the target gates no traffic."""
        return None

    def leader_backends(self, profile: Profile) -> dict[str, str]:
        """Leader pod -> the all-reduce backend its log names (observe/allreduce_probe.py); none where no leader pods
        run."""
        return {}

    @abc.abstractmethod
    def record_smoke(self, profile: Profile, verdict: JsonObject) -> None:
        """Keep the smoke verdict beside what it judged (shown by `status`)."""

    @abc.abstractmethod
    def undo_plan(
        self,
        profile: Profile,
        previous: Revision | None,
        plan: Plan | None,
        begun: list[Step],
        objects: Objects,
    ) -> Undo:
        """The steps that roll back a rollout of `objects` that failed part way through `plan` (`begun`: its steps
        that started; no plan: restore `previous` in place of what is live), read from what is live now."""

    @abc.abstractmethod
    def status(self, profile: Profile) -> TargetStatus:
        """What is live."""

    def status_view(self, status: TargetStatus, details: bool = False) -> RenderableType:
        """The table `status` prints; by default one row per field of the report (`details`: every row where the
        target would summarise many)."""
        table = Table("FIELD", "VALUE", box=None)
        for key, value in status.report.items():
            table.add_row(key, value if isinstance(value, str) else json.dumps(value))
        return table

    def down_question(self, profile: Profile, purge: bool) -> str:
        """What `down` asks on a terminal before it removes anything."""
        deleted = "everything, including the weights" if purge else "the deployment (weights kept)"
        return f"Delete {deleted} of {profile.name!r} on target {self.name!r}?"

    @abc.abstractmethod
    def down_plan(self, profile: Profile, purge: bool, objects: Objects) -> Undo:
        """The steps that remove the deployment of `objects` (keeping cached weights unless purge), read from what is
        live now."""
