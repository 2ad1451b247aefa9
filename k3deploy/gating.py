"""The gates `up` runs, each through the group it judges: a new group's smoke through its leader (from here or by the
in-cluster Job), the leader marked for traffic when it passes (k3deploy/traffic_gate.py), every leader not yet in
traffic gated before the final smoke, and the verdict line of a smoke or why it failed. The pipeline (pipeline.py)
decides when; this module runs one gate.

A gate judges only the group it gates: its smoke reaches that leader by port-forward, pod address or the given
endpoint, never the API Service, and a figure it cannot attribute to its own requests is a WARN (smoke/verdict.py),
which never fails a gate nor rolls anything back.
"""

from __future__ import annotations

from k3deploy.errors import EXIT_ENVIRONMENT, K3DeployError
from k3deploy.lws import leader_name
from k3deploy.profile.model import Profile
from k3deploy.report.model import Status
from k3deploy.report.smoke import SmokeReport
from k3deploy.reporter import Reporter
from k3deploy.rollout.steps import SmokeGroup
from k3deploy.smoke.job_report import verdict as job_verdict
from k3deploy.smoke.reach import Reach, unreachable
from k3deploy.smoke.runner import run_smoke
from k3deploy.targets import IN_CLUSTER
from k3deploy.targets.base import Rendering, Target


def judged(report: SmokeReport, reach: Reach, gate_hint: str | None) -> str:
    """The verdict line of a smoke that passed; raise when it did not: SmokeUnreachable when it could not test the
    server at all (smoke/reach.py), else the report's exit code. `gate_hint`: a new group's gate (before the rest moves),
    with the hint of its failure (what still serves); None: the final smoke."""
    try:
        report.raise_for_status()
    except K3DeployError as exc:
        failed = [c for c in report.checks if c.status is Status.FAIL]
        why = report.blocked_by or "; ".join(f"{c.name}: {c.detail}" for c in failed) or report.status.value
        if gate_hint is not None:
            message = f"smoke of the new group {reach.describe()} failed: {why}"
            hint = gate_hint
            if exc.exit_code == EXIT_ENVIRONMENT:
                raise unreachable(message, reach, hint) from None
            raise K3DeployError(message, hint=hint, exit_code=exc.exit_code) from None
        message = f"smoke {reach.describe()} failed: {why}"
        if exc.exit_code == EXIT_ENVIRONMENT:
            raise unreachable(message, reach) from None
        raise K3DeployError(message, hint="`k3deploy smoke` re-runs it alone", exit_code=exc.exit_code) from None
    return f"{reach.describe()}: {len(report.checks)} checks, {report.status.value}"


def group_smoke(
    profile: Profile,
    target: Target,
    rendering: Rendering,
    step: SmokeGroup,
    reporter: Reporter,
    where: str,
    uid: str | None = None,
) -> None:
    """Smoke one new group through its leader, from here or from inside the cluster; raise when it fails. With
    `step.mark`, a pass lets the leader it judged (the pod `uid`, else the one there before the smoke) take traffic."""
    group = (step.lws, step.group)
    if step.mark and uid is None:
        uid = target.leader_uid(profile, group)
    reporter.note(step.heading)
    if where == IN_CLUSTER:
        report, reach = job_verdict(target.run_smoke_job(profile, rendering.objects, group))
    else:
        with target.reach(profile, group) as reach:
            report = run_smoke(profile, reach.url)
    reporter.note(f"    ok   {judged(report, reach, gate_hint=step.hint)}")
    if step.mark:
        target.mark_leader(profile, group, uid, "its gate passed")


def gate_leaders(
    profile: Profile, target: Target, rendering: Rendering, lws: str, reporter: Reporter, where: str
) -> None:
    """Gate every ready leader of `lws` that takes no traffic yet (a first install's, one LWS re-created), each
    through itself, never through the API Service; one that runs a template revision a gate already passed is
    marked without a smoke when smoke.gate_restarts is off."""
    for leader in target.unmarked_leaders(profile, lws):
        if leader.copy:
            target.mark_leader(profile, (lws, leader.group), leader.uid, "a restart of a template its gate passed on")
            continue
        heading = (
            f"  smoke of group {leader.group} through its leader {leader_name(lws, leader.group)} (not in traffic yet)"
        )
        # A first install's leader, or one LWS re-created: nothing of it served yet, and a failed gate leaves it so.
        kept_out = (
            f"{leader_name(lws, leader.group)} takes no traffic: the API Service selects only leaders a gate passed"
        )
        step = SmokeGroup(lws, leader.group, heading, mark=True, hint=kept_out)
        group_smoke(profile, target, rendering, step, reporter, where, leader.uid)
