"""The `stage` command: copy a pinned snapshot onto this node's local disk, verified and resumable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from k3deploy.cli.app import FormatOpt, OutputFormat, app
from k3deploy.cli.output import print_data
from k3deploy.console import plain


@app.command()
def stage(
    source: Annotated[
        Path,
        typer.Argument(
            help="The snapshot's folder (the weight volume's copy of one revision), or org/name@<commit> to fetch "
            "from the Hub through huggingface_hub (into its cache) and stage that."
        ),
    ],
    dest: Annotated[Path, typer.Argument(help="The folder on the node's local disk that holds staged snapshots.")],
    name: Annotated[
        str | None, typer.Option("--name", help="The staged folder's name in DEST (default: the revision).")
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record", help="The sha256 record to check against (default: the prefetch's, found above SOURCE)."
        ),
    ] = None,
    revision: Annotated[
        str | None, typer.Option("--revision", help="The revision SOURCE holds (picks its record; names the copy).")
    ] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="Files copied at once (default 8).")] = None,
    max_mb_s: Annotated[
        float | None,
        typer.Option("--max-mb-s", help="Bandwidth cap in MB/s over all copiers (spare the shared volume)."),
    ] = None,
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify", help="Hash every byte against the record while copying.")
    ] = True,
    recheck: Annotated[
        bool, typer.Option("--recheck", help="Hash what DEST already holds again; re-copy any file that differs.")
    ] = False,
    prune: Annotated[
        bool,
        typer.Option("--prune/--no-prune", help="Remove k3deploy's older snapshots in DEST once this one is done."),
    ] = True,
    in_use: Annotated[
        list[str] | None, typer.Option("--in-use", help="A staged folder's name never to remove (repeatable).")
    ] = None,
    interval: Annotated[
        str, typer.Option("--progress-interval", help="How often a progress line is printed off a terminal.")
    ] = "10s",
    output: FormatOpt = OutputFormat.table,
) -> None:
    """Stage SOURCE (a folder, or org/name@<commit> from the Hub) into DEST/<revision>: parallel, capped, resumable,
    each file checked against its sha256.

    The marker (DEST/<name>.k3deploy-staged.json) is written last: a folder without it is never complete. Exit 1
    when a file does not match its record, 2 on bad usage, 3 when DEST lacks the space or another stage holds it.
    """
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.console import is_interactive
    from k3deploy.duration import parse_duration
    from k3deploy.stage.run import StageOptions
    from k3deploy.stage.run import stage as run_stage

    options = StageOptions(
        source=source,
        dest=dest,
        name=name,
        record=record,
        revision=revision,
        jobs=jobs,
        max_mb_s=max_mb_s,
        verify=verify,
        recheck=recheck,
        prune=prune,
        in_use=tuple(in_use or ()),
        progress_interval_s=parse_duration(interval, "--progress-interval") or 10.0,
        live=is_interactive(),
    )
    result = run_stage(options)
    if output is not OutputFormat.table:
        print_data(result.data(), output)
        return
    if result.already_staged:
        plain(f"{result.folder} already holds {result.repo}@{result.revision} (marker present)")
    else:
        plain(
            f"staged {result.repo}@{result.revision} into {result.folder}: {result.files} files, "
            f"{result.bytes / 1e6:,.0f} MB ({result.files_copied} copied, {result.files_resumed} resumed) "
            f"in {result.seconds:.1f} s, {result.mb_s} MB/s"
        )
    for pruned in result.pruned:
        plain(f"removed the old snapshot {dest / pruned}")
