"""The `preflight` command: check a profile against this GPU node and/or a cluster before anything is applied."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from k3deploy.cli.app import OutputFormat, ProfileOpt, SetOpt, app, get_profile
from k3deploy.cli.measured import MeasuredOpt, measured_rate_of
from k3deploy.cli.output import print_data
from k3deploy.console import out
from k3deploy.errors import CheckFailed
from k3deploy.kube.options import KubeOptions
from k3deploy.reporter import Reporter
from k3deploy.targets import DeployOptions, target_for


class PreflightFormat(str, Enum):
    """preflight's -o: the table (narrow, or `wide` with the long columns), or the data as JSON or YAML."""

    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"


@app.command()
def preflight(
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    node: Annotated[
        bool, typer.Option("--node", help="Check this machine's GPUs (NVML, else nvidia-smi) and host.")
    ] = False,
    cluster: Annotated[bool, typer.Option("--cluster", help="Check the cluster through the Kubernetes API.")] = False,
    gpus_optional: Annotated[
        bool,
        typer.Option(
            "--gpus-optional",
            help="With --node: a machine that shows no GPU is a WARN and the GPU checks SKIP (exit 0), not a failure "
            "(the node-preflight Job, whose pods a hardened runtime shows no GPU).",
        ),
    ] = False,
    kubeconfig: Annotated[
        str | None, typer.Option("--kubeconfig", help="Path to a kubeconfig (default: KUBECONFIG, ~/.kube/config).")
    ] = None,
    context: Annotated[str | None, typer.Option("--context", help="kubeconfig context to use.")] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace to deploy to (overrides kubernetes.namespace).")
    ] = None,
    measured: MeasuredOpt = None,
    output: Annotated[
        PreflightFormat,
        typer.Option(
            "--output", "-o", help="table, wide (adds FOUND and EXPECTED, as kubectl get -o wide), json or yaml."
        ),
    ] = PreflightFormat.table,
) -> None:
    """Check GPU node and cluster prerequisites; exit 0 (no FAIL), 1 (a FAIL), 3 (could not look).

    Without --node or --cluster: the checks `up` runs on the profile's target (the cluster for a kubernetes
    profile; this host for a local one).
    """
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.preflight.run import rendered_or_empty, run_preflight
    from k3deploy.preflight.view import preflight_table
    from k3deploy.report.model import Status, worst
    from k3deploy.rollout.access import command_access

    sets = list(set_ or [])
    if namespace:
        sets.append(f"kubernetes.namespace={namespace}")
    prof = get_profile(profile, sets)
    kube = KubeOptions(kubeconfig, context, namespace)
    if not node and not cluster:
        # As `up` would run them: with its smoke gates on (so a port-forward's access is reviewed).
        results = target_for(prof, DeployOptions(kube=kube, group_smoke=True)).preflight(prof, rendered_or_empty(prof))
    else:
        objects = rendered_or_empty(prof) if cluster else None
        forwards = prof.on_kubernetes and not prof.kubernetes.endpoint_override
        needs = command_access(objects, port_forward=forwards) if objects is not None else ()
        results = run_preflight(prof, node, cluster, kube, gpus_optional=gpus_optional, objects=objects, needs=needs)
    rate = measured_rate_of(measured)
    if rate is not None and prof.on_kubernetes:
        # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
        from k3deploy.preflight.load_time import measured_budget_check

        results = [*results, measured_budget_check(prof, rate)]
    overall = worst(results)
    if output not in (PreflightFormat.table, PreflightFormat.wide):
        payload = {
            "profile": prof.name,
            "status": overall.value,
            "checks": [r.model_dump(mode="json") for r in results],
        }
        print_data(payload, OutputFormat(output.value))
    else:
        out.print(preflight_table(prof.name, results, wide=output is PreflightFormat.wide))
    counts = {s: sum(r.status is s for r in results) for s in Status}
    Reporter().say(", ".join(f"{counts[s]} {s.value}" for s in Status if counts[s]))
    failed = [r.name for r in results if r.status is Status.FAIL]
    if failed:
        raise CheckFailed(
            f"preflight failed {len(failed)} check(s): {', '.join(failed)}",
            hint="fix the FAIL rows (see each row's fix) and run preflight again",
        )
