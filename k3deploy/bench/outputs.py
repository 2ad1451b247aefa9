"""The files `bench` writes (--report per run, --csv, --html, --png): named and checked before the run, written after it.

Every write goes through fileio/write.py: never through a symlink, never over a file k3deploy did not write
(without --force), never two outputs on one file, a temporary file renamed into place. The charts (--html, --png) are drawn by matplotlib, the
optional `bench` extra: found before the run, loaded only when a chart is drawn.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from k3deploy.bench import csv_out
from k3deploy.bench.ab import variants
from k3deploy.bench.cli_run import Request, report_paths
from k3deploy.errors import EnvironmentProblem
from k3deploy.fileio.write import OutputFile, check_output, distinct, write_output
from k3deploy.report.bench import BenchReport


@dataclass(frozen=True)
class Outputs:
    """The checked --report (one per run), --csv, --html and --png files."""

    reports: list[OutputFile]
    csv: OutputFile | None
    html: OutputFile | None
    png: OutputFile | None


def require_charts(html_file: Path | None, png_file: Path | None) -> None:
    """Refuse --html/--png up front when matplotlib, which draws them, is not installed (a run takes minutes)."""
    flags = [flag for flag, path in (("--html", html_file), ("--png", png_file)) if path is not None]
    if flags and importlib.util.find_spec("matplotlib") is None:
        raise EnvironmentProblem(
            f"{'/'.join(flags)} needs matplotlib, which is not installed",
            hint="pip install 'k3deploy[bench]' (the bench extra), or drop " + " and ".join(flags),
        )


def outputs_of(
    request: Request,
    report_file: Path | None,
    html_file: Path | None,
    png_file: Path | None,
    csv_file: Path | None = None,
    *,
    force: bool = False,
) -> Outputs:
    """Every file the run will write, checked before the run (fileio/write.py's rules): a bench takes minutes."""
    if request.ab or request.sweep:
        labels = [label for label, _ in variants(request.ab, request.sweep)]
    else:
        labels = [request.label or "run"]
    paths = report_paths(report_file, labels) if report_file is not None else []
    require_charts(html_file, png_file)
    outputs = Outputs(
        reports=[check_output(path, "--report", force=force) for path in paths],
        csv=check_output(csv_file, "--csv", force=force) if csv_file is not None else None,
        html=check_output(html_file, "--html", force=force) if html_file is not None else None,
        png=check_output(png_file, "--png", force=force) if png_file is not None else None,
    )
    distinct([*outputs.reports, *(out for out in (outputs.csv, outputs.html, outputs.png) if out is not None)])
    return outputs


def write_outputs(reports: list[BenchReport], outputs: Outputs) -> None:
    """--report (one file per run with --ab/--sweep: NAME-LABEL.json), --csv (one row per request), --html, --png."""
    for report, out in zip(reports, outputs.reports, strict=False):
        write_output(out, report.to_json())
    if outputs.csv is not None:
        write_output(outputs.csv, csv_out.text(reports))
    write_charts(reports, outputs.html, outputs.png)


def write_charts(reports: Sequence[BenchReport], html_out: OutputFile | None, png_out: OutputFile | None) -> None:
    """--html and --png of `reports` (a run's, or the runs `bench compare` reads), each where it was checked."""
    if html_out is None and png_out is None:
        return
    # matplotlib (the bench extra) is slow to import: only a command that draws a chart loads it.
    from k3deploy.bench.charts import html, png

    if html_out is not None:
        write_output(html_out, html(reports))
    if png_out is not None:
        write_output(png_out, png(reports))
