"""What `k3deploy bench` does once its flags are parsed: build the plan, run it (once, A/B or a sweep), write files.

The progress bar lives here (rich, on stderr, transient); it stays off under -o json.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from k3deploy.bench.datasets import load_dataset, select
from k3deploy.bench.runner import BenchOptions, BenchPlan, run_bench
from k3deploy.console import err
from k3deploy.errors import UsageError
from k3deploy.profile import Profile, load_profile
from k3deploy.profile.load import ProfileRefs
from k3deploy.report.bench import BenchReport


@dataclass
class Request:
    """The parsed command line."""

    endpoint: str | None
    profile: ProfileRefs
    sets: list[str] = field(default_factory=list)
    api_key: str | None = None
    dataset: str = "builtin"
    subset: str | None = None
    categories: list[str] | None = None
    concurrency: list[int] = field(default_factory=lambda: [1])
    num_prompts: int | None = None
    output_tokens: int | None = None
    temperature: float | None = None
    label: str | None = None
    ab: bool = False
    sweep: str | None = None
    quiet: bool = False


def profile_sets(request: Request) -> list[str]:
    """--set overrides, then the flags that live in the profile (a flag wins)."""
    sets = list(request.sets)
    if request.temperature is not None:
        sets.append(f"smoke.temperature={request.temperature}")
    return sets


def make_plan(request: Request, profile: Profile, label: str) -> BenchPlan:
    """Load the dataset and choose the prompts per category."""
    dataset = load_dataset(request.dataset, request.subset)
    prompts = select(dataset, request.categories, request.num_prompts)
    output_tokens = request.output_tokens or profile.smoke.output_tokens
    return BenchPlan(dataset, prompts, request.concurrency, output_tokens, request.num_prompts, label)


@contextlib.contextmanager
def progress_bar(quiet: bool, title: str) -> Iterator[BenchOptions]:
    """Options whose progress callback drives a transient bar on stderr (none when quiet)."""
    if quiet:
        yield BenchOptions()
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(title, total=None, rate="")

        def update(done: int, total: int, tok_s: float | None) -> None:
            bar.update(task, completed=done, total=total, rate=f"{tok_s:,.1f} tok/s" if tok_s else "")

        yield BenchOptions(progress=update, note=lambda msg: bar.console.print(f"[dim]{msg}[/]", markup=True))


def bench_endpoint(request: Request, profile: Profile, endpoint: str, label: str) -> BenchReport:
    """One run against a running endpoint."""
    plan = make_plan(request, profile, label)
    with progress_bar(request.quiet, f"bench {label}") as options:
        options.api_key = request.api_key
        return run_bench(profile, endpoint, plan, options)


def run(request: Request) -> list[BenchReport]:
    """One report against --endpoint (bench/ab.py serves and benches the variants of --ab / --sweep)."""
    if not request.endpoint:
        raise UsageError(
            "bench needs --endpoint (or --ab / --sweep on a local profile)",
            hint="k3deploy bench --endpoint http://10.0.0.5:8000",
        )
    profile = load_profile(request.profile, profile_sets(request))
    return [bench_endpoint(request, profile, request.endpoint, request.label or "run")]


def report_paths(path: Path, labels: list[str]) -> list[Path]:
    """`path` for one run; `stem-LABEL.suffix` beside it per run for several (each one `bench compare` reads)."""
    if len(labels) == 1:
        return [path]
    return [path.with_name(f"{path.stem}-{label}{path.suffix or '.json'}") for label in labels]
