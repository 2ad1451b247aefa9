"""The only module that knows the stage order: `up` = preflight -> render -> apply -> wait -> smoke -> report.

Works for any Target. The apply stage asks the target for the rollout's plan (rollout/plan.py, read from what is live)
and runs its apply steps; the wait stage runs the rest; every smoke, a new group's through its leader (gating.py) as
the final one, runs here. Each stage is shown as it runs; one summary closes the run; the exit code is the
first failing stage's. When wait or smoke fails (or the prefetch wait inside apply), the previous revision
is restored, or a first install removed, unless rollback is off; a smoke that could not test the server at all
(smoke/reach.py SmokeUnreachable, exit 3) undoes nothing. A stage that fails with an unexpected
exception (a bug, not a K3DeployError) fails like any other: summary, report and rollback, exit 3. Ctrl-C
stops without rolling back: the live state is where a re-run continues from. A target that can be driven by
one command at a time (`locked`) is held for the whole command. A command renders once (the caller's Rendering,
or the target's when it passes none): the lock, preflight, the render stage, the plan, the in-cluster smokes and the
rollback all work on that one set.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from k3deploy.errors import EXIT_ENVIRONMENT, CheckFailed, K3DeployError, RolloutFailed, RolloutTimeout
from k3deploy.gating import gate_leaders, group_smoke, judged
from k3deploy.kobject import JsonObject
from k3deploy.observe.allreduce_probe import summary as summary_of_backends
from k3deploy.profile.model import Profile
from k3deploy.profile.plan import plan
from k3deploy.redact import redact_url
from k3deploy.report.model import CheckResult, Status, worst
from k3deploy.reporter import Reporter
from k3deploy.rollout.plan import Plan, apply_summary
from k3deploy.rollout.steps import APPLY, WAIT, GateLeaders, SmokeGroup, Step, StepOutcome
from k3deploy.rollout.undo import Undo, began_writing
from k3deploy.rollout.undo import summary as undo_summary
from k3deploy.smoke.headline import headline
from k3deploy.smoke.job_report import verdict as job_verdict
from k3deploy.smoke.reach import SmokeUnreachable
from k3deploy.smoke.runner import run_smoke
from k3deploy.targets import IN_CLUSTER
from k3deploy.targets.base import Held, Rendering, Revision, Target, TargetStatus
from k3deploy.targets.rendering import Objects

#: The stages of `up`; the report is the summary the command prints at the end.
UP_STAGES = ("preflight", "render", "apply", "wait", "smoke")
APPLY_STAGES = ("render", "apply", "wait")
#: Where `up`'s smoke runs by default: from here (through --endpoint or a port-forward); IN_CLUSTER: the smoke Job.
CLIENT = "client"


@dataclass
class StageResult:
    """How one stage ended."""

    name: str
    status: Status
    detail: str = ""
    seconds: float = 0.0
    exit_code: int = 0


@dataclass
class RunSummary:
    """The outcome of a pipeline run: stages in order, what was rolled back, the exit code."""

    command: str
    profile: str
    target: str
    stages: list[StageResult] = field(default_factory=list)
    rollback: str | None = None
    endpoint: str | None = None
    error: str | None = None
    hint: str | None = None
    diagnosis: JsonObject | None = None
    exit_code: int = 0
    extra: JsonObject = field(default_factory=dict)
    #: What apply (and wait) applied, and a dry run's diffs: `apply -o json` shows them.
    applied: list[dict[str, str]] = field(default_factory=list)
    diffs: list[tuple[str, str]] = field(default_factory=list)

    def raise_for_status(self) -> None:
        """Raise the failing stage's error (its exit code) when the run failed; return when it passed."""
        if self.exit_code:
            raise K3DeployError(self.error or "failed", self.hint, exit_code=self.exit_code)

    def to_dict(self) -> JsonObject:
        """JSON-able form (`-o json`)."""
        return {
            "command": self.command,
            "profile": self.profile,
            "target": self.target,
            "exit_code": self.exit_code,
            "stages": [
                {"name": s.name, "status": s.status.value, "detail": s.detail, "seconds": round(s.seconds, 3)}
                for s in self.stages
            ],
            "rollback": self.rollback,
            "endpoint": self.endpoint,
            "error": self.error,
            "hint": self.hint,
            "diagnosis": self.diagnosis,
            **self.extra,
        }


class _Stages:
    """Runs stages in order, showing each, stopping at the first failure."""

    def __init__(self, summary: RunSummary, names: tuple[str, ...], reporter: Reporter) -> None:
        self.summary, self.names, self.reporter = summary, names, reporter
        self.failed: StageResult | None = None
        self.error: K3DeployError | None = None
        #: The failure was an unexpected exception: what the stage left behind is unknown.
        self.unexpected = False

    def run(self, name: str, action: Callable[[], str]) -> bool:
        """Run one stage; False (and nothing more runs) when it failed."""
        if self.failed is not None:
            return False
        self.reporter.note(f"==> [{self.names.index(name) + 1}/{len(self.names)}] {name}")
        started = time.monotonic()
        try:
            try:
                detail = action()
            except K3DeployError:
                raise
            except Exception as exc:  # a bug must not skip the summary, the report and the rollback
                self.unexpected = True
                raise unexpected(exc, name) from exc
        except K3DeployError as exc:
            result = StageResult(name, Status.FAIL, exc.message, time.monotonic() - started, exc.exit_code)
            self.summary.stages.append(result)
            self.failed, self.error = result, exc
            self.reporter.note(f"    FAIL {name}: {exc.message} ({result.seconds:.1f}s)")
            return False
        except KeyboardInterrupt:
            self.summary.stages.append(StageResult(name, Status.FAIL, "interrupted", time.monotonic() - started, 130))
            raise
        result = StageResult(name, Status.PASS, detail, time.monotonic() - started)
        self.summary.stages.append(result)
        self.reporter.note(f"    ok   {name}: {detail} ({result.seconds:.1f}s)")
        return True

    def skip(self, name: str, why: str) -> None:
        """Record a stage as skipped."""
        if self.failed is None:
            self.summary.stages.append(StageResult(name, Status.SKIP, why))
            self.reporter.note(f"==> [{self.names.index(name) + 1}/{len(self.names)}] {name}: skipped ({why})")


def unexpected(exc: BaseException, where: str) -> K3DeployError:
    """A K3DeployError (exit 3) standing for an exception k3deploy did not expect; the original is its cause."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return K3DeployError(
        f"unexpected {type(exc).__name__} in {where}" + (f": {text}" if text else ""),
        hint="re-run with --debug for the traceback and report it",
        exit_code=EXIT_ENVIRONMENT,
    )


def _checks_detail(results: list[CheckResult], reporter: Reporter) -> str:
    for check in results:
        reporter.note(f"    {check.status.value:<4} {check.name}" + (f": {check.detail}" if check.detail else ""))
    failed = [c for c in results if c.status is Status.FAIL]
    if failed:
        first = failed[0]
        raise CheckFailed(
            f"{len(failed)} preflight check(s) failed, first: {first.name}: {first.detail}",
            hint=first.hint or "fix the failing checks, or --skip-preflight to go on regardless",
        )
    return f"{len(results)} checks, {worst(results).value}"


def _render(profile: Profile, rendering: Rendering) -> str:
    capacity = plan(profile)
    if not capacity.fits:
        raise CheckFailed(f"capacity plan does not fit: {capacity.reason}", hint="`k3deploy plan` shows the numbers")
    summary = rendering.summary
    return "capacity plan fits" + (f"; {summary}" if summary else "")


@dataclass
class _Rollout:
    """One command's rollout as the stages run it: the set it rendered, the plan (once the apply stage made it) and
    the steps begun."""

    rendering: Rendering
    #: What the command's lock made to hold itself.
    held: Held | None = None
    plan: Plan | None = None
    begun: list[Step] = field(default_factory=list)
    previous: Revision | None = None


def _run_steps(
    profile: Profile,
    target: Target,
    rollout: _Rollout,
    stage: str,
    timeout_s: float,
    reporter: Reporter,
    smoke_where: str,
) -> list[StepOutcome]:
    """Run the plan's steps of one stage in order; the per-group smokes run here, every other step on the target."""
    assert rollout.plan is not None
    outcomes = []
    for step in rollout.plan.stage(stage):
        rollout.begun.append(step)
        if isinstance(step, SmokeGroup):
            group_smoke(profile, target, rollout.rendering, step, reporter, smoke_where)
        elif isinstance(step, GateLeaders) and step.smoke:
            gate_leaders(profile, target, rollout.rendering, step.lws, reporter, smoke_where)
        else:
            outcomes.append(target.run_step(profile, step, timeout_s, rollout.held))
    return outcomes


def _wait(
    target: Target,
    profile: Profile,
    rollout: _Rollout,
    timeout_s: float | None,
    summary: RunSummary,
    reporter: Reporter,
    smoke_where: str,
) -> str:
    limit = timeout_s or target.default_timeout_s(profile)
    outcomes = _run_steps(profile, target, rollout, WAIT, limit, reporter, smoke_where)
    for outcome in outcomes:
        summary.applied += outcome.applied
    decided = [o.summary for o in outcomes if o.summary is not None]
    return decided[-1] if decided else "ready"


def _apply(
    target: Target,
    profile: Profile,
    rollout: _Rollout,
    summary: RunSummary,
    reporter: Reporter,
    smoke_where: str,
) -> str:
    """Plan the rollout from what is live, then run the apply stage's steps."""
    rollout.plan = target.plan(profile, rollout.rendering.objects)
    outcomes = _run_steps(profile, target, rollout, APPLY, target.default_timeout_s(profile), reporter, smoke_where)
    summary.applied = [a for o in outcomes for a in o.applied]
    summary.diffs = [d for o in outcomes for d in o.diffs]
    return apply_summary(outcomes, rollout.plan.suffix)


def _smoke(
    profile: Profile,
    target: Target,
    rendering: Rendering,
    summary: RunSummary,
    reporter: Reporter,
    where: str,
) -> str:
    if where == IN_CLUSTER:
        report, reach = job_verdict(target.run_smoke_job(profile, rendering.objects))
    else:
        with target.reach(profile) as reach:
            reporter.note(f"    smoke {reach.describe()}")
            report = run_smoke(profile, reach.url)
    report.allreduce_backend = summary_of_backends(target.leader_backends(profile))
    verdict = {
        "status": report.status.value,
        "allreduce_backend": report.allreduce_backend,
        "blocked_by": report.blocked_by,
        "checks": [{"name": c.name, "status": c.status.value, "detail": c.detail} for c in report.checks],
        "figures": headline(report, model=profile.model.id, rehearsal=profile.model.rehearsal),
        "via": reach.to_dict(),
    }
    summary.extra["smoke"] = verdict
    target.record_smoke(profile, verdict)
    return judged(report, reach, gate_hint=None)


def _run_undo(profile: Profile, target: Target, undo: Undo, held: Held | None = None) -> str:
    """Run a rollback's or teardown's steps in order, part by part (a part whose Guard stops it ends there, as does
    one whose step fails: the next part still runs); the line that says what they did (rollout/undo.py)."""
    done: list[list[StepOutcome]] = []
    failures: list[tuple[int, K3DeployError]] = []
    for part in undo.parts:
        outcomes: list[StepOutcome] = []
        try:
            for step in part.steps:
                outcomes.append(target.run_step(profile, step, target.default_timeout_s(profile), held))
                if outcomes[-1].stop:
                    break
        except K3DeployError as exc:
            failures.append((len(done), exc))
        done.append(outcomes)
    return undo_summary(undo, done, failures)


def _roll_back(target: Target, profile: Profile, rollout: _Rollout, summary: RunSummary, reporter: Reporter) -> None:
    previous = rollout.previous
    what = f"revision {previous.number}" if previous is not None else "first install"
    reporter.note(f"==> rollback ({what}) because {summary.stages[-1].name} failed")
    try:
        undo = target.undo_plan(profile, previous, rollout.plan, rollout.begun, rollout.rendering.objects)
        summary.rollback = _run_undo(profile, target, undo, rollout.held)
        reporter.note(f"    ok   rollback: {summary.rollback}")
    except Exception as exc:  # the summary must say the rollback failed, whatever the reason
        message = exc.message if isinstance(exc, K3DeployError) else unexpected(exc, "rollback").message
        summary.rollback = f"rollback failed: {message}"
        reporter.note(f"    FAIL rollback: {message}")


def up(
    profile: Profile,
    target: Target,
    reporter: Reporter,
    *,
    timeout_s: float | None = None,
    preflight: bool = True,
    smoke: bool = True,
    rollback: bool = True,
    smoke_where: str = CLIENT,
    rendering: Rendering | None = None,
) -> RunSummary:
    """preflight -> render -> apply -> wait -> smoke -> report; rollback on a failed wait or a smoke that failed its
    checks (`smoke_where`: from here, CLIENT, or by the in-cluster Job, IN_CLUSTER). `rendering`: the set the
    command rendered (the target renders it here when there is none)."""
    rendering = target.render(profile) if rendering is None else rendering
    with target.locked(profile, "up", rendering.objects) as held:
        return _up(
            profile,
            target,
            _Rollout(rendering, held),
            reporter,
            timeout_s=timeout_s,
            preflight=preflight,
            smoke=smoke,
            rollback=rollback,
            smoke_where=smoke_where,
        )


def _up(
    profile: Profile,
    target: Target,
    rollout: _Rollout,
    reporter: Reporter,
    *,
    timeout_s: float | None,
    preflight: bool,
    smoke: bool,
    rollback: bool,
    smoke_where: str,
) -> RunSummary:
    summary = RunSummary("up", profile.name, target.name)
    rendering = rollout.rendering
    stages = _Stages(summary, UP_STAGES, reporter)
    if preflight:
        stages.run("preflight", lambda: _checks_detail(target.preflight(profile, rendering.objects), reporter))
    else:
        stages.skip("preflight", "--skip-preflight")
    stages.run("render", lambda: _render(profile, rendering))

    def apply() -> str:
        """Remember what is live (for a rollback), then plan and apply."""
        rollout.previous = target.current_revision(profile)
        return _apply(target, profile, rollout, summary, reporter, smoke_where)

    stages.run("apply", apply)
    stages.run("wait", lambda: _wait(target, profile, rollout, timeout_s, summary, reporter, smoke_where))
    if stages.failed is None:
        with contextlib.suppress(Exception):  # the smoke stage reports an endpoint that cannot be named
            summary.endpoint = redact_url(target.endpoint(profile))
    if smoke:
        stages.run("smoke", lambda: _smoke(profile, target, rendering, summary, reporter, smoke_where))
    else:
        stages.skip("smoke", "--skip-smoke")
    _finish(summary, stages)
    in_apply = stages.failed is not None and stages.failed.name == "apply"
    rollout_failed = stages.failed is not None and (
        stages.failed.name in ("wait", "smoke")
        or (in_apply and (stages.unexpected or isinstance(stages.error, RolloutFailed | RolloutTimeout)))
        or (in_apply and rollout.previous is None and began_writing(rollout.begun))  # a first install's, half-made
    )
    if rollout_failed and isinstance(stages.error, SmokeUnreachable):
        # A smoke that never reached the server's checks says nothing against the new install (smoke/reach.py).
        summary.rollback = "not rolled back: the smoke could not test the server; the install is kept"
        reporter.note(f"==> no rollback: {summary.rollback}")
    elif rollout_failed and rollback:
        _roll_back(target, profile, rollout, summary, reporter)
    elif rollout_failed:
        summary.rollback = "skipped (--no-rollback): the failed revision is still live"
    return summary


def apply(
    profile: Profile,
    target: Target,
    reporter: Reporter,
    *,
    wait: bool = True,
    timeout_s: float | None = None,
    rendering: Rendering | None = None,
) -> RunSummary:
    """render -> apply (-> wait): what `k3deploy apply` does; no preflight, smoke or rollback. `rendering`: the set
    the command rendered (the target renders it here when there is none)."""
    rendering = target.render(profile) if rendering is None else rendering
    with target.locked(profile, "apply", rendering.objects) as held:
        return _apply_stages(profile, target, _Rollout(rendering, held), reporter, wait=wait, timeout_s=timeout_s)


def _apply_stages(
    profile: Profile,
    target: Target,
    rollout: _Rollout,
    reporter: Reporter,
    *,
    wait: bool,
    timeout_s: float | None,
) -> RunSummary:
    summary = RunSummary("apply", profile.name, target.name)
    stages = _Stages(summary, APPLY_STAGES, reporter)
    stages.run("render", lambda: _render(profile, rollout.rendering))
    stages.run("apply", lambda: _apply(target, profile, rollout, summary, reporter, CLIENT))
    if wait:
        stages.run("wait", lambda: _wait(target, profile, rollout, timeout_s, summary, reporter, CLIENT))
    else:
        stages.skip("wait", "--no-wait")
    _finish(summary, stages)
    return summary


def _finish(summary: RunSummary, stages: _Stages) -> None:
    if stages.failed is not None and stages.error is not None:
        summary.exit_code = stages.failed.exit_code
        summary.error, summary.hint = stages.error.message, stages.error.hint
        diagnosis = stages.error.diagnosis
        summary.diagnosis = diagnosis.to_dict() if diagnosis is not None else None


def status(profile: Profile, target: Target) -> TargetStatus:
    """What is live for the profile on its target (on a cluster, with the all-reduce backend each group's leader
    log reports: targets/kubernetes/target.py `status`)."""
    return target.status(profile)


def _undo_locked(profile: Profile, target: Target, what: str, undo_of: Callable[[Objects], Undo]) -> str:
    """Render the set once, hold the command lock (`what`) on it, and run the undo `undo_of` plans from what is live
    once the lock is held."""
    objects = target.render(profile).objects
    with target.locked(profile, what, objects) as held:
        return _run_undo(profile, target, undo_of(objects), held)


def restore(profile: Profile, target: Target, previous: Revision | None) -> str:
    """Put `previous` back in place of what is live (or remove what is live when nothing was), as the target plans its
    rollback, under the command lock: what `bench --ab/--sweep` does when it ends. Returns what was done."""
    return _undo_locked(
        profile, target, "rollback", lambda objects: target.undo_plan(profile, previous, None, [], objects)
    )


def down(profile: Profile, target: Target, *, purge: bool) -> str:
    """Remove the deployment (weights kept unless purge): the set rendered once, for the lock and the removal."""
    return _undo_locked(profile, target, "down", lambda objects: target.down_plan(profile, purge, objects))
