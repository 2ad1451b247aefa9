"""The `guard` command: one release's NVL72 fault guard, a pass (`--once`) or the loop, from a workstation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from k3deploy.cli.app import FormatOpt, OutputFormat, ProfileOpt, SetOpt, app
from k3deploy.cli.output import print_data
from k3deploy.cli.rollout import (
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    StatusTimeoutOpt,
    _load,
    checked_group_template,
)
from k3deploy.console import out
from k3deploy.duration import parse_duration
from k3deploy.errors import UsageError
from k3deploy.kube.deadline import Deadline
from k3deploy.kube.options import KubeOptions
from k3deploy.reporter import Reporter

if TYPE_CHECKING:
    from k3deploy.kube.api import KubeApi
    from k3deploy.profile.model import Profile
    from k3deploy.targets.kubernetes.regate import Regate


@app.command()
def guard(
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    once: Annotated[bool, typer.Option("--once", help="One pass, then exit (1 when a fault is held).")] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what it would do; change nothing, write no evidence.")
    ] = False,
    evidence_dir: Annotated[
        Path, typer.Option("--evidence-dir", help="Folder of the evidence bundles (made when missing).")
    ] = Path("k3deploy-evidence"),
    evidence_configmap: Annotated[
        bool,
        typer.Option(
            "--evidence-configmap", help="Keep each bundle in a new ConfigMap of the namespace (the in-cluster guard)."
        ),
    ] = False,
    interval: Annotated[str, typer.Option("--interval", help="Time between passes of the loop, e.g. 30s.")] = "30s",
    metrics_port: Annotated[
        int | None, typer.Option("--metrics-port", help="Serve the guard's metrics on this port (the loop only).")
    ] = None,
    group_endpoint: Annotated[
        str | None,
        typer.Option(
            "--group-endpoint",
            help="Where the re-gate smokes a leader out of traffic: a URL template ({pod}, {lws}, {group}, "
            "{namespace}); default its cluster DNS name (the in-cluster guard).",
        ),
    ] = None,
    timeout: StatusTimeoutOpt = None,
    output: FormatOpt = OutputFormat.table,
) -> None:
    """Move a serving group off a sick NVL72 tray: keep the evidence, cordon the tray, delete the group's pods.

    A controller: it acts without asking, so look first with --dry-run. It never uncordons. Only the guard holding
    the release's guard Lease acts (the in-cluster Deployment, this loop or a --once): the others stand by.
    With smoke.gate_traffic it also gates every Ready leader out of traffic (one LeaderWorkerSet re-created) through
    the leader itself and labels it when it passes; it never takes a leader out of traffic.
    """
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.fault_guard.loop import Guard, run_forever
    from k3deploy.kube.api import KubeApi
    from k3deploy.targets.kubernetes.election import lead
    from k3deploy.targets.kubernetes.election import once as election_once
    from k3deploy.targets.kubernetes.lease import identity

    interval_s = parse_duration(interval, "--interval") or 30.0
    if metrics_port is not None and (once or not 0 < metrics_port < 65536):
        raise UsageError("--metrics-port is a port (1-65535) of the loop", hint="drop --once to run the loop")
    if group_endpoint is not None:
        group_endpoint = checked_group_template(group_endpoint)
    prof = _load(profile, set_, namespace)
    if not prof.on_kubernetes:
        raise UsageError(
            f"profile {prof.name} does not run on Kubernetes: guard watches a release's serving groups on a cluster",
            hint="pass a Kubernetes profile, e.g. -p kimi-k3-gb300-tp16",
        )
    ns = prof.kubernetes.namespace
    deadline = Deadline(parse_duration(timeout), flag="--timeout")
    api = KubeApi(KubeOptions(kubeconfig, context, namespace, deadline))

    reporter = Reporter()

    def say(line: str) -> None:
        reporter.say(f"guard: {line}")

    g = Guard(
        api=api,
        profile=prof,
        namespace=ns,
        evidence_dir=evidence_dir,
        dry_run=dry_run,
        say=say,
        evidence_configmap=evidence_configmap,
        regate=_regate(api, prof, group_endpoint, say) if prof.smoke.gate_traffic else None,
    )
    who = identity("guard")
    if not once:
        if metrics_port is not None:
            # Loaded for the loop's metrics endpoint only.
            from prometheus_client import start_http_server

            start_http_server(metrics_port, registry=g.metrics.registry)

        def work(lost: Callable[[], bool]) -> None:
            g.leading = lambda: not lost()
            run_forever(g, interval_s, lambda: deadline.expired() or lost())

        def standby(seconds: float) -> None:
            """A wait for the lease, cut at --timeout (which bounds every wait of the command)."""
            left = deadline.remaining()
            g.sleep(seconds if left is None else max(0.0, min(seconds, left)))

        if dry_run:  # looks only: no lease, so it runs beside the leader
            run_forever(g, interval_s, deadline.expired)
        else:
            lead(api, ns, prof.name, who, work, say=say, sleep=standby, done=deadline.expired)
        return
    report = g.run_pass() if dry_run else election_once(api, ns, prof.name, who, g.run_pass, say)
    if output is not OutputFormat.table:
        print_data(report.to_dict(), output)
    else:
        lines = [d.describe() for d in report.decided] or ["no sick tray under a serving group"]
        lines += [gate.describe() for gate in report.gates]
        for line in lines:
            out.print(("dry run: " if dry_run else "") + line, markup=False, highlight=False)
    report.raise_for_status()


def _regate(api: KubeApi, profile: Profile, template: str | None, say: Callable[[str], None]) -> Regate:
    """The re-gate duty of the loop: each leader out of traffic smoked at its own address, judged as a gate is."""
    # Loaded only for a guard that gates (smoke.gate_traffic): the smoke stage stays out of the others.
    from k3deploy.smoke.runner import SmokeOptions, run_smoke
    from k3deploy.targets.kubernetes.regate import Regate

    options = SmokeOptions(notice=say)
    return Regate(api, profile, lambda p, url: run_smoke(p, url, options).failure(), say, template)
