"""Commands of the rollout stage: apply, up, status, down (kubectl conventions for connecting)."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from k3deploy.cli.app import (
    FormatOpt,
    OutputFormat,
    ProfileOpt,
    SetOpt,
    app,
    checked_endpoint,
    get_profile,
)
from k3deploy.cli.confirm import confirm
from k3deploy.cli.output import print_data
from k3deploy.console import out
from k3deploy.duration import parse_duration
from k3deploy.errors import CheckFailed, ProfileError, UsageError
from k3deploy.kube.deadline import Deadline
from k3deploy.kube.options import KubeOptions
from k3deploy.reporter import Reporter
from k3deploy.targets import DeployOptions, render_for, target_for

if TYPE_CHECKING:
    from k3deploy.pipeline import RunSummary
    from k3deploy.profile.load import ProfileRefs
    from k3deploy.profile.model import Profile
    from k3deploy.targets.rendering import Rendering

KubeconfigOpt = Annotated[
    str | None,
    typer.Option("--kubeconfig", help="Path to a kubeconfig (default: KUBECONFIG, ~/.kube/config, in-cluster)."),
]
ContextOpt = Annotated[str | None, typer.Option("--context", help="kubeconfig context to use.")]
NamespaceOpt = Annotated[
    str | None, typer.Option("--namespace", "-n", help="Namespace to deploy to (overrides kubernetes.namespace).")
]
TimeoutOpt = Annotated[
    str | None,
    typer.Option(
        "--timeout",
        help=(
            "Deadline of the command, e.g. 90s, 15m, 3h: every Kubernetes API request and wait ends by then "
            "(default: the profile's rollout_timeout_s per phase; smoke has its own overall timeout, a rollback a budget of its own)."
        ),
    ),
]
StatusTimeoutOpt = Annotated[
    str | None, typer.Option("--timeout", help="Deadline of the command, e.g. 30s (default: 30s per API request).")
]
DetailsOpt = Annotated[
    bool, typer.Option("--details", help="List every pod and tray however many groups (more than 4 are summarised).")
]
EndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--endpoint",
        help="Base URL every smoke gate uses (default on a cluster: a port-forward through the API server to a leader).",
    ),
]


#: `apply --diff`'s exit code when the live state differs from the rendered set (`kubectl diff`'s).
EXIT_DIFFERENCES = 1


class SmokeWhere(str, Enum):
    """`up --smoke`: where the smoke gate runs."""

    client = "client"
    in_cluster = "in-cluster"


class Strategy(str, Enum):
    """`up --strategy`."""

    rolling = "rolling"
    blue_green = "blue-green"


ForceOpt = Annotated[bool, typer.Option("--force-conflicts", help="Take over fields another field manager owns.")]


def _load(profile: ProfileRefs, sets: list[str] | None, namespace: str | None) -> Profile:
    overrides = list(sets or [])
    if namespace:
        overrides.append(f"kubernetes.namespace={namespace}")
    return get_profile(profile, overrides)


def _settled(prof: Profile, options: DeployOptions, reporter: Reporter) -> Profile:
    """The profile with an `auto` gang admission decided against the cluster (targets/kubernetes/admission.py),
    once, before the command renders its set; any other profile as it is, without reading the cluster."""
    if not prof.on_kubernetes or prof.kubernetes.gang_admission != "auto":
        return prof
    from k3deploy.targets.kubernetes.admission import settle  # the cluster client loads only for `auto`

    return settle(prof, options.kube, reporter)


def _options(kubeconfig: str | None, context: str | None, namespace: str | None, **kwargs: Any) -> DeployOptions:
    """Deploy options; a --timeout starts counting here, so it bounds the whole command."""
    if kwargs.get("endpoint") is not None:
        kwargs["endpoint"] = checked_endpoint(kwargs["endpoint"])
    if kwargs.get("group_endpoint") is not None:
        kwargs["group_endpoint"] = checked_group_template(kwargs["group_endpoint"])
    deadline = Deadline(kwargs.get("timeout_s"), flag="--timeout")
    return DeployOptions(kube=KubeOptions(kubeconfig, context, namespace, deadline), **kwargs)


def checked_group_template(template: str) -> str:
    """A --group-endpoint template that fills in to a URL, checked before anything is applied (UsageError)."""
    # Loaded when a command checks the template: its pydantic validators stay out of `--help`.
    from k3deploy.rollout.groups import check_group_template

    try:
        _refuse_format_specs(template.strip())
        return check_group_template(template.strip())
    except ValueError as exc:
        raise UsageError(
            f"--group-endpoint {exc}", hint="for example --group-endpoint http://{pod}.{lws}.{namespace}.svc:8000"
        ) from None


def _refuse_format_specs(template: str) -> None:
    """ValueError for a field with a format spec or a conversion (`{group:>999999999}`, `{pod!r}`): the template
    names fields, nothing more, and a width spec alone would build a string of any size before any check."""
    # Only the parse, which is linear in the template: nothing is filled in before this passes.
    import string

    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise ValueError(f"{template[:200]!r} is not a valid template: {exc}") from None
    for name, spec, conv in fields:
        if spec or conv:
            extra = (f"!{conv}" if conv else "") + (f":{spec}" if spec else "")
            raise ValueError(
                f"field {{{name[:40]}{extra[:40]}}} has a format spec or conversion; a template names "
                "{pod}, {lws}, {group} and {namespace}, with nothing after the name"
            )


def _print_summary(summary: RunSummary, output: OutputFormat, reporter: Reporter) -> None:
    if output is not OutputFormat.table:
        print_data(summary.to_dict(), output)
    reporter.say(f"summary ({summary.command} {summary.profile} on {summary.target}):")
    for stage in summary.stages:
        detail = f" - {stage.detail}" if stage.detail else ""
        reporter.say(f"  {stage.name:<10} {stage.status.value:<5} {stage.seconds:6.1f}s{detail}")
    if summary.rollback:
        reporter.say(f"  rollback: {summary.rollback}")
    figures = (summary.extra.get("smoke") or {}).get("figures")
    if figures:
        # Loaded when there are figures to print: the report models stay out of `--help`.
        from k3deploy.smoke.headline import headline_lines

        for line in headline_lines(figures):
            reporter.say(line)
    summary.raise_for_status()


class DryRun(str, Enum):
    """`apply --dry-run`'s kinds, as kubectl names them."""

    none = "none"
    client = "client"
    server = "server"


def _client_dry_run(prof: Profile, output: OutputFormat, reporter: Reporter) -> None:
    """`apply --dry-run=client`: the objects apply would send, rendered here; no call reaches the API server."""
    # Loaded when the objects are read back: `k3deploy --help` stays light.
    import yaml

    docs = [doc for doc in yaml.safe_load_all(render_for(prof).stream) if doc]
    if output is not OutputFormat.table:
        print_data(docs, output)
    for doc in docs:
        reporter.say(f"  {doc['kind']}/{doc['metadata']['name']} (dry run: client)")
    reporter.say(
        f"dry run (client): {len(docs)} objects rendered, nothing sent to the API server; "
        "--dry-run=server has the server validate and admit them"
    )


@app.command("apply")
def apply_cmd(
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    dry_run: Annotated[
        DryRun,
        typer.Option(
            "--dry-run",
            help="As kubectl: 'server' (a bare --dry-run) has the API server validate and admit each object and "
            "persist nothing; 'client' renders the objects and sends nothing; 'none' applies.",
        ),
    ] = DryRun.none,
    diff: Annotated[
        bool, typer.Option("--diff", help="Show what would change against the live objects (stdout), change nothing.")
    ] = False,
    wait: Annotated[
        bool,
        typer.Option("--wait/--no-wait", help="Wait until the set is ready (watching, with diagnosis on failure)."),
    ] = True,
    timeout: TimeoutOpt = None,
    force_conflicts: ForceOpt = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Accept a change that replaces the only group in place (an outage).")
    ] = False,
    output: FormatOpt = OutputFormat.table,
) -> None:
    """Server-side apply the rendered set in dependency order (field manager k3deploy), then wait for it."""
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy import pipeline

    reporter = Reporter()
    prof = _load(profile, set_, namespace)
    if dry_run is DryRun.client and prof.on_kubernetes and not diff:
        _client_dry_run(prof, output, reporter)
        return
    # On the local target no server takes part: a dry run of either kind says what it would launch.
    dry = dry_run is not DryRun.none
    options = _options(
        kubeconfig,
        context,
        namespace,
        force_conflicts=force_conflicts,
        dry_run=dry or diff,
        diff=diff,
        wait=wait and not (dry or diff),
        timeout_s=parse_duration(timeout),
    )
    prof = _settled(prof, options, reporter)
    rendering = render_for(prof)  # once: the question, the lock, the render stage and the plan all take this set
    _confirm_in_place(prof, options, rendering, yes, "or `up --strategy blue-green` with a second free clique")
    with reporter:
        target = target_for(prof, options, reporter)
        summary = pipeline.apply(
            prof, target, reporter, wait=options.wait, timeout_s=options.timeout_s, rendering=rendering
        )
    if diff:
        if output is not OutputFormat.table:  # stdout must stay one document: the diffs go inside it
            summary.extra["diff"] = [{"object": key, "diff": text} for key, text in summary.diffs]
        else:
            for _, text in summary.diffs:
                out.print(text, end="", markup=False, highlight=False)
    summary.extra["objects"] = summary.applied
    _print_summary(summary, output, reporter)
    if diff and summary.diffs:
        raise typer.Exit(EXIT_DIFFERENCES)  # as `kubectl diff`: 1 when the live state differs, 0 when it matches


@app.command()
def up(
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    no_rollback: Annotated[
        bool, typer.Option("--no-rollback", help="Leave a failed revision live instead of restoring the previous one.")
    ] = False,
    skip_preflight: Annotated[
        bool, typer.Option("--skip-preflight", help="Do not run the cluster preflight checks.")
    ] = False,
    skip_smoke: Annotated[
        bool, typer.Option("--skip-smoke", help="Do not smoke-test the endpoint once ready.")
    ] = False,
    timeout: TimeoutOpt = None,
    endpoint: EndpointOpt = None,
    smoke_where: Annotated[
        SmokeWhere,
        typer.Option(
            "--smoke",
            help=(
                "Where the smoke gate runs: client (from here, through --endpoint or a port-forward to the leader) or "
                "in-cluster (the rendered smoke Job; its log's report is the verdict)."
            ),
        ),
    ] = SmokeWhere.client,
    force_conflicts: ForceOpt = False,
    strategy: Annotated[
        Strategy,
        typer.Option(
            "--strategy",
            help=(
                "How a changed template replaces live groups: rolling (N >= 2: one group at a time, each new group smoke-tested "
                "by its leader first) or blue-green (N = 1: a second group beside the live one, switched to once it passes)."
            ),
        ),
    ] = Strategy.rolling,
    group_endpoint: Annotated[
        str | None,
        typer.Option(
            "--group-endpoint",
            help=(
                "URL of a group leader for the per-group smoke, with {pod}, {lws}, {group}, {namespace} filled in "
                "(default: --endpoint when given, else a port-forward through the API server to that leader)."
            ),
        ),
    ] = None,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            "-y",
            help="Accept an upgrade that replaces the only group in place (an outage), e.g. blue-green without room.",
        ),
    ] = False,
    output: FormatOpt = OutputFormat.table,
) -> None:
    """preflight -> render -> apply -> wait -> smoke -> report; roll back when wait or smoke fails."""
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy import pipeline

    reporter = Reporter()
    prof = _load(profile, set_, namespace)
    options = _options(
        kubeconfig,
        context,
        namespace,
        force_conflicts=force_conflicts,
        timeout_s=parse_duration(timeout),
        endpoint=endpoint,
        strategy=strategy.value,
        group_smoke=not skip_smoke,
        group_endpoint=group_endpoint,
        smoke_where=smoke_where.value if not skip_smoke else SmokeWhere.client.value,
    )
    prof = _settled(prof, options, reporter)
    rendering = render_for(prof)  # once: the question, the lock, preflight, the plan and the smokes all take this set
    if strategy is Strategy.blue_green:
        options = _blue_green_or_in_place(prof, options, rendering, yes, reporter)
    else:
        _confirm_in_place(prof, options, rendering, yes, "or --strategy blue-green with a second free clique")
    with reporter:
        target = target_for(prof, options, reporter)
        summary = pipeline.up(
            prof,
            target,
            reporter,
            timeout_s=options.timeout_s,
            preflight=not skip_preflight,
            smoke=not skip_smoke,
            rollback=not no_rollback,
            smoke_where=options.smoke_where,
            rendering=rendering,
        )
    _print_summary(summary, output, reporter)


def _blue_green_or_in_place(prof: Profile, options: Any, rendering: Rendering, yes: bool, reporter: Reporter) -> Any:
    """Blue-green when a second group fits; else the in-place outage, accepted by --yes or at the prompt."""
    if not prof.on_kubernetes:
        raise UsageError(
            f"--strategy blue-green needs a cluster; profile {prof.name!r} runs on target {prof.target!r}",
            hint="drop --strategy: the local target runs one server",
        )
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.lws import name_length_reason

    reason = name_length_reason(prof.name, prof.parallel.replicas, blue_green=True)
    if reason is not None:
        raise ProfileError(
            f"--strategy blue-green: name {reason}",
            hint="shorten the profile's name, or upgrade without --strategy blue-green",
        )
    question = target_for(prof, options).outage_question(prof, rendering.objects)
    if question is None:
        return options
    confirm(question, yes=yes, hint="re-run with --yes to accept the outage, or free a clique for the new group")
    reporter.say("blue-green: no room for a second group; replacing the only group in place")
    return dataclasses.replace(options, strategy="rolling")


def _confirm_in_place(prof: Profile, options: DeployOptions, rendering: Rendering, yes: bool, alternative: str) -> None:
    """A rolling apply that replaces the only group in place (an outage) goes ahead with --yes or at the prompt (a
    target with no such outage asks nothing: targets/base.py `outage_question`)."""
    if yes or options.dry_run or options.diff:
        return
    question = target_for(prof, options).outage_question(prof, rendering.objects)
    if question is not None:
        confirm(question, yes=yes, hint=f"re-run with --yes to accept the outage, {alternative}")


@app.command()
def status(
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    endpoint: EndpointOpt = None,
    timeout: StatusTimeoutOpt = None,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code", help="Exit 1 when the deployment is not deployed or not ready (0 when it is ready)."
        ),
    ] = False,
    details: DetailsOpt = False,
    output: FormatOpt = OutputFormat.table,
) -> None:
    """Objects, readiness, pods per group (node, clique), endpoint, revisions, last smoke verdict.

    More than 4 groups are summarised by state (a fleet's 64 groups are a few rows; a group with a sick or cordoned
    tray keeps its own); --details lists every pod and tray, and -o json always carries them all.

    With --exit-code a script can gate on it: `until k3deploy status --exit-code -o json >/dev/null; do sleep 10; done`.
    """
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy import pipeline
    from k3deploy.targets.kubernetes.summary import backend_lines

    timeout_s = parse_duration(timeout)
    prof = _load(profile, set_, namespace)
    options = _options(kubeconfig, context, namespace, endpoint=endpoint, timeout_s=timeout_s)
    target = target_for(prof, options)
    report = pipeline.status(prof, target)
    if output is not OutputFormat.table:
        print_data(report.to_dict(), output)
    else:
        out.print(target.status_view(report, details))
        for line in backend_lines(report.report.get("allreduce_backend") or {}, details):
            out.print(line, markup=False, highlight=False)
    if exit_code and not (report.deployed and report.ready):
        raise CheckFailed(
            f"{prof.name!r} is {'not ready' if report.deployed else 'not deployed'} on {report.target}",
            hint="`k3deploy up` deploys it; `k3deploy apply --wait` waits until it is ready",
        )


@app.command()
def down(
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="Also delete the weights: the cache PVC and namespace (kubernetes), the generated model and vLLM's cache (local).",
        ),
    ] = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Remove the deployment: stop the local vLLM server, or delete the objects in reverse order and wait for the pods to go.

    The weights (cache PVC, generated model) are kept unless --purge.
    """
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy import pipeline

    reporter = Reporter()
    prof = _load(profile, set_, namespace)
    options = _options(kubeconfig, context, namespace, timeout_s=parse_duration(timeout))
    if not yes:
        confirm(
            target_for(prof, options).down_question(prof, purge),
            yes=yes,
            hint="re-run with --yes to go ahead (k3deploy deletes only what it created)",
        )
    with reporter:
        target = target_for(prof, options, reporter)
        result = pipeline.down(prof, target, purge=purge)
    reporter.say(f"down: {result}")
