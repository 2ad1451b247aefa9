"""Commands of the render stage: render, plan, profiles, schema."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from k3deploy.cli.app import FormatOpt, OutputFormat, ProfileOpt, SetOpt, app, get_profile
from k3deploy.cli.measured import MeasuredOpt, measured_rate_of
from k3deploy.cli.output import print_data
from k3deploy.console import out
from k3deploy.errors import CheckFailed
from k3deploy.reporter import Reporter
from k3deploy.targets import render_for

if TYPE_CHECKING:
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.preflight.placement import Placement
    from k3deploy.profile import Profile


@app.command()
def plan(
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    output: FormatOpt = OutputFormat.table,
    measured: MeasuredOpt = None,
    cluster: Annotated[
        bool,
        typer.Option(
            "--cluster",
            help="Also read the cluster's GPU nodes and show where the "
            "parallel.replicas groups land, clique by clique.",
        ),
    ] = False,
    kubeconfig: Annotated[
        str | None, typer.Option("--kubeconfig", help="Path to a kubeconfig (with --cluster).")
    ] = None,
    context: Annotated[
        str | None, typer.Option("--context", help="kubeconfig context to use (with --cluster).")
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace of the deployment (with --cluster).")
    ] = None,
) -> None:
    """Print the capacity plan: weights, draft and KV cache per GPU, the weight cache, and with --cluster the
    placement of the groups on the cliques; exit 1 when the model or (with --cluster) the groups do not fit."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.cli.plan_view import plan_table
    from k3deploy.preflight.load_time import load_note, load_time
    from k3deploy.preflight.weight_cache import cache_note, weight_cache
    from k3deploy.profile.plan import plan as make_plan
    from k3deploy.smoke.headline import REHEARSAL_LABEL

    reporter = Reporter()
    prof = get_profile(
        profile, set_, check_fit=False
    )  # not fitting is this command's verdict (exit 1), not a bad profile
    result = make_plan(prof)
    cache = weight_cache(prof)
    rate = measured_rate_of(measured)
    loading = load_time(prof, rate)
    budget = prof.startup_budget if rate is None else prof.startup_budget.measured(rate.mb_s, rate.source)
    placement, trapped = None, []
    if cluster:
        # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
        from k3deploy.preflight.placement import TRAP_CONSEQUENCE, trap_hint, traps

        placement = _placement(prof, kubeconfig, context, namespace)
        trapped = traps(prof, placement)
    if output is not OutputFormat.table:
        payload = json.loads(result.model_dump_json())
        if prof.on_kubernetes:
            payload["startup_budget"] = {
                "total_s": budget.total_s,
                "read_s": budget.read_s,
                "weight_bytes": budget.weight_bytes,
                "read_mb_s": budget.read_mb_s,
                "compile_allowance_s": budget.compile_allowance_s,
                "override_s": budget.override_s,
                "read_source": budget.read_source,
                "parts": budget.parts(),
            }
        if cache is not None:
            payload["weight_cache"] = {
                **cache.model_dump(),
                "snapshots": cache.snapshots,
                "upgrade_fits": cache.upgrade_fits,
            }
        if loading is not None:
            payload["load_time"] = loading.model_dump()
        if placement is not None:
            payload["placement"] = placement.as_dict() | {"traps": trapped}
        print_data(payload, output)
    else:
        out.print(plan_table(result))
        if cache is not None:
            reporter.say(f"weight cache: {cache_note(cache)}")
        if loading is not None:
            reporter.say(load_note(loading))
        if prof.on_kubernetes:
            for line in budget.parts():
                reporter.say(f"start-up budget: {line}")
            if rate is not None and budget.total_s != prof.startup_budget.total_s:
                reporter.say(
                    f"note: the rendered pods get {prof.startup_budget.total_s:,} s (storage.read_mb_s); render with "
                    f"--set storage.read_mb_s={rate.mb_s:g} to give them this budget"
                )
        if placement is not None:
            # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
            from k3deploy.cli.placement_view import placement_table

            out.print(placement_table(placement))
            if trapped and placement.fits:  # what preflight's k8s.placement WARNs of, where `plan` shows the cliques
                reporter.warn(f"{'; '.join(trapped)}: {TRAP_CONSEQUENCE}")
                reporter.say(f"hint: {trap_hint(placement)}")
        if prof.model.rehearsal:
            reporter.say(f"note: {prof.model.id} is a {REHEARSAL_LABEL}")
    if not result.fits:
        raise CheckFailed(
            f"plan for {prof.name!r} does not fit: {result.reason}", hint="add GPUs or lower max_model_len"
        )
    if placement is not None and not placement.fits:
        raise CheckFailed(
            f"only {placement.placed} of {placement.replicas} groups fit on the cluster's cliques",
            hint="free trays in a clique, add nodes, or lower parallel.replicas (see the placement table)",
        )


def _placement(prof: Profile, kubeconfig: str | None, context: str | None, namespace: str | None) -> Placement:
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.errors import UsageError
    from k3deploy.kube.options import KubeOptions
    from k3deploy.preflight.cluster import placement_nodes
    from k3deploy.preflight.placement import place

    if not prof.on_kubernetes:
        raise UsageError(
            f"--cluster needs a kubernetes profile; {prof.name!r} has target {prof.target!r}",
            hint="use -p kimi-k3-gb300-tp16 (or another kubernetes profile)",
        )
    return place(prof, placement_nodes(prof, KubeOptions(kubeconfig, context, namespace)))


@app.command()
def profiles(output: FormatOpt = OutputFormat.table) -> None:
    """List the built-in profiles."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from rich.table import Table

    # The profile models are built by the first command that loads a profile.
    from k3deploy.profile.load import builtin_names, load_profile

    rows = []
    for name in builtin_names():
        prof = load_profile(name, check_fit=False)
        rows.append({"name": name, "target": prof.target, "model": prof.model.id, "description": prof.description})
    if output is not OutputFormat.table:
        print_data(rows, output)
        return

    table = Table("NAME", "TARGET", "MODEL", "DESCRIPTION", box=None)
    for row in rows:
        table.add_row(row["name"], row["target"], row["model"], row["description"])
    out.print(table)


@app.command()
def schema() -> None:
    """Print the profile's JSON Schema (for editors)."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.profile.load import profile_schema

    typer.echo(profile_schema(), nl=False)


@app.command()
def render(
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    output_dir: Annotated[
        str,
        typer.Option(
            "--output-dir",
            "--output",
            "-o",
            help="Directory to write, or '-' for a YAML stream on stdout. --output/-o is kept as an alias; unlike "
            "other commands' -o it names a place, not a format.",
        ),
    ] = "-",
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Overwrite files in the directory that k3deploy did not write, or that changed since."
        ),
    ] = False,
) -> None:
    """Write the deployment for a profile: Kubernetes manifests, or the vLLM argv/env for a local target.

    In a directory, k3deploy replaces and removes only files it wrote itself (recorded in .k3deploy-render.json).
    """
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.pin.floating import refuse_floating
    from k3deploy.render.write import render_to

    reporter = Reporter()
    prof = get_profile(profile, set_)
    refuse_floating(prof)
    rendering = render_for(prof)
    render_to(rendering.files, rendering.stream, rendering.what, output_dir, force=force)
    if prof.on_kubernetes:
        for line in render_warnings(prof):
            reporter.warn(line)


def render_warnings(prof: Profile) -> list[str]:
    """What a rendered set still leaves open: one line per floating version field (the workloads carry them in an
    annotation too), and settings whose default cannot be right everywhere."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.render.manifests import floating_fields

    lines = [
        f"{field.field} {field.value} floats until pinned: `k3deploy pin` resolves it"
        for field in floating_fields(prof)
    ]
    kube = prof.kubernetes
    if kube.node_preflight_job and kube.clique is None and not kube.node_preflight_hosts:
        anyway = " (the serving pods' gpu-check init container checks their own GPUs anyway)" if kube.gpu_check else ""
        lines.append(
            "the node-preflight Job checks any parallel.nodes GPU nodes, not the clique the group lands in: set "
            f"kubernetes.clique to pin both{anyway}"
        )
    return lines
