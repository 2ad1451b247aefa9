"""Commands of the render stage: render, plan, profiles, schema."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from k3deploy.cli.app import FormatOpt, OutputFormat, ProfileOpt, SetOpt, app, get_profile
from k3deploy.cli.plan_view import plan_table
from k3deploy.console import err, out
from k3deploy.errors import CheckFailed
from k3deploy.profile import DEFAULT_PROFILE, builtin_names, load_profile, profile_schema
from k3deploy.profile.plan import plan as make_plan
from k3deploy.smoke.headline import REHEARSAL_LABEL
from k3deploy.targets import target_for


@app.command()
def plan(
    profile: ProfileOpt = DEFAULT_PROFILE,
    set_: SetOpt = None,
    output: FormatOpt = OutputFormat.table,
) -> None:
    """Print the capacity plan: weights, draft and KV cache per GPU; exit 1 when it does not fit."""
    prof = get_profile(profile, set_, check_fit=False)  # not fitting is this command's verdict (exit 1), not a bad profile
    result = make_plan(prof)
    if output is OutputFormat.json:
        out.print_json(result.model_dump_json())
    else:
        out.print(plan_table(result))
        if prof.model.rehearsal:
            err.print(f"note: {prof.model.id} is a {REHEARSAL_LABEL}", markup=False, highlight=False)
    if not result.fits:
        raise CheckFailed(f"plan for {prof.name!r} does not fit: {result.reason}", hint="add GPUs or lower max_model_len")


@app.command()
def profiles(output: FormatOpt = OutputFormat.table) -> None:
    """List the built-in profiles."""
    rows = []
    for name in builtin_names():
        prof = load_profile(name, check_fit=False)
        rows.append({"name": name, "target": prof.target, "model": prof.model.id, "description": prof.description})
    if output is OutputFormat.json:
        out.print_json(json.dumps(rows))
        return

    table = Table("NAME", "TARGET", "MODEL", "DESCRIPTION", box=None)
    for row in rows:
        table.add_row(row["name"], row["target"], row["model"], row["description"])
    out.print(table)


@app.command()
def schema() -> None:
    """Print the profile's JSON Schema (for editors)."""
    typer.echo(profile_schema(), nl=False)


@app.command()
def render(
    profile: ProfileOpt = DEFAULT_PROFILE,
    set_: SetOpt = None,
    output_dir: Annotated[str, typer.Option("--output", "-o", help="Directory to write, or '-' for a YAML stream on stdout.")] = "-",
    force: Annotated[bool, typer.Option("--force", help="Overwrite files in the directory that k3deploy did not write, or that changed since.")] = False,
) -> None:
    """Write the deployment for a profile: Kubernetes manifests, or the vLLM argv/env for a local target.

    In a directory, k3deploy replaces and removes only files it wrote itself (recorded in .k3deploy-render.json).
    """
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.render.write import render_to

    prof = get_profile(profile, set_)
    rendering = target_for(prof).render(prof)
    render_to(rendering.files, rendering.stream, rendering.what, output_dir, force=force)
