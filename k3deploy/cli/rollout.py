"""Commands of the rollout stage: apply, up, status, down (kubectl conventions for connecting)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from k3deploy.cli.app import FormatOpt, OutputFormat, ProfileOpt, SetOpt, app, checked_endpoint, get_profile
from k3deploy.console import err, out
from k3deploy.duration import parse_duration
from k3deploy.errors import K3DeployError
from k3deploy.profile import DEFAULT_PROFILE, Profile

KubeconfigOpt = Annotated[str | None, typer.Option("--kubeconfig", help="Path to a kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster).")]
ContextOpt = Annotated[str | None, typer.Option("--context", help="kubeconfig context to use.")]
NamespaceOpt = Annotated[str | None, typer.Option("--namespace", "-n", help="Namespace to deploy to (overrides kubernetes.namespace).")]
TimeoutOpt = Annotated[str | None, typer.Option("--timeout", help=(
    "Deadline of the command, e.g. 90s, 15m, 3h: every Kubernetes API request and wait ends by then "
    "(default: the profile's rollout_timeout_s per phase; smoke has its own overall timeout, a rollback a budget of its own)."))]
StatusTimeoutOpt = Annotated[str | None, typer.Option("--timeout", help="Deadline of the command, e.g. 30s (default: 30s per API request).")]
EndpointOpt = Annotated[str | None, typer.Option("--endpoint", help="Base URL smoke uses instead of the Service's cluster DNS name.")]
ForceOpt = Annotated[bool, typer.Option("--force-conflicts", help="Take over fields another field manager owns.")]

def _load(profile: str, sets: list[str] | None, namespace: str | None) -> Profile:
    overrides = list(sets or [])
    if namespace:
        overrides.append(f"kubernetes.namespace={namespace}")
    return get_profile(profile, overrides)


def _options(kubeconfig: str | None, context: str | None, namespace: str | None, **kwargs: Any) -> Any:
    """Deploy options; a --timeout starts counting here, so it bounds the whole command."""
    from k3deploy.kube.client import KubeOptions
    from k3deploy.kube.deadline import Deadline
    from k3deploy.targets import DeployOptions

    if kwargs.get("endpoint") is not None:
        kwargs["endpoint"] = checked_endpoint(kwargs["endpoint"])
    deadline = Deadline(kwargs.get("timeout_s"))
    return DeployOptions(kube=KubeOptions(kubeconfig, context, namespace, deadline), **kwargs)


def _print_summary(summary: Any, output: OutputFormat) -> None:
    if output is OutputFormat.json:
        out.print_json(json.dumps(summary.to_dict()))
    err.print(f"summary ({summary.command} {summary.profile} on {summary.target}):", markup=False, highlight=False)
    for stage in summary.stages:
        detail = f" - {stage.detail}" if stage.detail else ""
        err.print(f"  {stage.name:<10} {stage.status.value:<5} {stage.seconds:6.1f}s{detail}", markup=False, highlight=False)
    if summary.rollback:
        err.print(f"  rollback: {summary.rollback}", markup=False, highlight=False)
    figures = (summary.extra.get("smoke") or {}).get("figures")
    if figures:
        from k3deploy.smoke.headline import headline_lines

        for line in headline_lines(figures):
            err.print(line, markup=False, highlight=False)
    if summary.exit_code:
        raise K3DeployError(summary.error or "failed", summary.hint, exit_code=summary.exit_code)


@app.command("apply")
def apply_cmd(
    profile: ProfileOpt = DEFAULT_PROFILE,
    set_: SetOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Server-side dry run: validate and report, change nothing.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Show what would change against the live objects (stdout), change nothing.")] = False,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until the set is ready (watching, with diagnosis on failure).")] = True,
    timeout: TimeoutOpt = None,
    force_conflicts: ForceOpt = False,
    output: FormatOpt = OutputFormat.table,
) -> None:
    """Server-side apply the rendered set in dependency order (field manager k3deploy), then wait for it."""
    from k3deploy import pipeline
    from k3deploy.rollout.progress import ProgressView
    from k3deploy.targets import target_for

    prof = _load(profile, set_, namespace)
    options = _options(kubeconfig, context, namespace, force_conflicts=force_conflicts, dry_run=dry_run or diff,
                       diff=diff, wait=wait and not (dry_run or diff), timeout_s=parse_duration(timeout))
    with ProgressView() as view:
        target = target_for(prof, options, view)
        summary = pipeline.apply(prof, target, view.note, wait=options.wait, timeout_s=options.timeout_s)
    if diff:
        diffs = getattr(target, "last_diffs", [])
        if output is OutputFormat.json:  # stdout must stay one JSON document: the diffs go inside it
            summary.extra["diff"] = [{"object": key, "diff": text} for key, text in diffs]
        else:
            for _, text in diffs:
                out.print(text, end="", markup=False, highlight=False)
    summary.extra["objects"] = getattr(target, "last_applied", [])
    _print_summary(summary, output)


@app.command()
def up(
    profile: ProfileOpt = DEFAULT_PROFILE,
    set_: SetOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    no_rollback: Annotated[bool, typer.Option("--no-rollback", help="Leave a failed revision live instead of restoring the previous one.")] = False,
    skip_preflight: Annotated[bool, typer.Option("--skip-preflight", help="Do not run the cluster preflight checks.")] = False,
    skip_smoke: Annotated[bool, typer.Option("--skip-smoke", help="Do not smoke-test the endpoint once ready.")] = False,
    timeout: TimeoutOpt = None,
    endpoint: EndpointOpt = None,
    force_conflicts: ForceOpt = False,
    output: FormatOpt = OutputFormat.table,
) -> None:
    """preflight -> render -> apply -> wait -> smoke -> report; roll back when wait or smoke fails."""
    from k3deploy import pipeline
    from k3deploy.rollout.progress import ProgressView
    from k3deploy.targets import target_for

    prof = _load(profile, set_, namespace)
    options = _options(kubeconfig, context, namespace, force_conflicts=force_conflicts,
                       timeout_s=parse_duration(timeout), endpoint=endpoint)
    with ProgressView() as view:
        target = target_for(prof, options, view)
        summary = pipeline.up(prof, target, view.note, timeout_s=options.timeout_s, preflight=not skip_preflight,
                              smoke=not skip_smoke, rollback=not no_rollback)
    _print_summary(summary, output)


@app.command()
def status(
    profile: ProfileOpt = DEFAULT_PROFILE,
    set_: SetOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    endpoint: EndpointOpt = None,
    timeout: StatusTimeoutOpt = None,
    output: FormatOpt = OutputFormat.table,
) -> None:
    """Objects, readiness, pods per group (node, clique), endpoint, revisions, last smoke verdict."""
    from k3deploy import pipeline
    from k3deploy.targets import target_for

    timeout_s = parse_duration(timeout)
    prof = _load(profile, set_, namespace)
    options = _options(kubeconfig, context, namespace, endpoint=endpoint, timeout_s=timeout_s)
    report = pipeline.status(prof, target_for(prof, options))
    if output is OutputFormat.json:
        out.print_json(json.dumps(report))
        return
    from k3deploy.cli.rollout_view import status_view

    out.print(status_view(report))


@app.command()
def down(
    profile: ProfileOpt = DEFAULT_PROFILE,
    set_: SetOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    purge: Annotated[bool, typer.Option("--purge", help="Also delete the weights: the cache PVC and namespace (kubernetes), the generated model and vLLM's cache (local).")] = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Remove the deployment: stop the local vLLM server, or delete the objects in reverse order and wait for the pods to go.

    The weights (cache PVC, generated model) are kept unless --purge.
    """
    from k3deploy import pipeline
    from k3deploy.rollout.progress import ProgressView
    from k3deploy.targets import target_for

    prof = _load(profile, set_, namespace)
    options = _options(kubeconfig, context, namespace, timeout_s=parse_duration(timeout))
    if not yes and sys.stdin.isatty():
        from k3deploy.cli.rollout_view import down_question

        local = pipeline.status(prof, target_for(prof, options)) if prof.target == "local" else None
        if not typer.confirm(down_question(prof, purge, local), err=True):
            raise typer.Abort()
    with ProgressView() as view:
        target = target_for(prof, options, view)
        result = pipeline.down(prof, target, purge=purge)
    err.print(f"down: {result}", markup=False, highlight=False)
