"""What `k3deploy bench` does once its flags are parsed: build the plan, run it (once, A/B or a sweep), write files.

The progress bar lives here (rich, on stderr, transient); it stays off under -o json.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from k3deploy.bench.bounds import check_lengths, check_rates
from k3deploy.bench.datasets import load_dataset, select
from k3deploy.bench.latency import parse_goodput, parse_percentiles
from k3deploy.bench.load import load_model
from k3deploy.bench.push import gateway_url, push
from k3deploy.bench.random_dataset import CATEGORY, random_dataset
from k3deploy.bench.runner import BenchOptions, BenchPlan, run_bench
from k3deploy.console import err
from k3deploy.errors import UsageError
from k3deploy.kube.port import KubePort
from k3deploy.observe.canary_report import keep, parse_ref
from k3deploy.observe.canary_series import grouping_key, samples
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
    top_p: float | None = None
    label: str | None = None
    ab: bool = False
    sweep: str | None = None
    quiet: bool = False
    request_rates: list[float] = field(default_factory=list)
    burstiness: float = 1.0
    max_concurrency: int | None = None
    duration_s: float | None = None
    repeat: int = 1
    percentiles: str | None = None
    goodput: list[str] = field(default_factory=list)
    random_input_len: int = 1024
    random_output_len: int = 128
    random_range_ratio: float = 0.0
    seed: int = 0
    tokenizer: str | None = None
    push: str | None = None
    report_configmap: str | None = None
    group: int = 0
    #: A rehearsal profile's tokenizer folder (the command layer passes the local target's, cli/bench_serving.py).
    rehearsal_tokenizer: Callable[[Profile], str] | None = None


def profile_sets(request: Request) -> list[str]:
    """--set overrides, then the flags that live in the profile (a flag wins)."""
    sets = list(request.sets)
    if request.temperature is not None:
        sets.append(f"smoke.temperature={request.temperature}")
    if request.top_p is not None:
        sets.append(f"smoke.top_p={request.top_p}")
    return sets


#: Prompts of `--dataset random` without --num-prompts (vLLM's default is 1000, too many for a CPU rehearsal).
RANDOM_DEFAULT_PROMPTS = 32


def tokenizer_for(request: Request, profile: Profile) -> str:
    """--tokenizer, else the rehearsal model's folder for a rehearsal profile, else the profile's model id."""
    if request.tokenizer:
        return request.tokenizer
    if profile.model.rehearsal:
        if request.rehearsal_tokenizer is None:
            raise UsageError(
                "--dataset random on a rehearsal profile needs its tokenizer", hint="pass --tokenizer PATH"
            )
        return request.rehearsal_tokenizer(profile)
    return profile.model.id


def make_plan(request: Request, profile: Profile, label: str) -> BenchPlan:
    """Load the dataset, choose the prompts per category, and fix the load model."""
    model = load_model(
        request.request_rates, request.burstiness, request.max_concurrency, request.duration_s, request.seed
    )
    random_settings = None
    bound_s = profile.smoke.overall_timeout_s
    if request.dataset == "random":
        if request.subset or request.categories:
            raise UsageError("--subset and --category do not apply to --dataset random", hint="drop them")
        # Before a prompt is tokenized: a 10-million-token prompt is gigabytes of tokenizer work.
        check_lengths(
            profile.vllm.max_model_len,
            request.random_output_len,
            random_input_len=request.random_input_len,
            range_ratio=request.random_range_ratio,
        )
        check_rates(request.request_rates, request.num_prompts or RANDOM_DEFAULT_PROMPTS, request.duration_s, bound_s)
        dataset, random_settings = random_dataset(
            tokenizer_for(request, profile),
            request.num_prompts or RANDOM_DEFAULT_PROMPTS,
            request.random_input_len,
            request.random_output_len,
            request.random_range_ratio,
            request.seed,
        )
        prompts = {CATEGORY: list(dataset.prompts)}
        output_tokens = request.random_output_len
    else:
        dataset = load_dataset(request.dataset, request.subset)
        prompts = select(dataset, request.categories, request.num_prompts)
        output_tokens = request.output_tokens or profile.smoke.output_tokens
        check_lengths(profile.vllm.max_model_len, output_tokens)
        check_rates(request.request_rates, max(map(len, prompts.values()), default=0), request.duration_s, bound_s)
    if request.repeat < 1:
        raise UsageError(f"--repeat {request.repeat} must be at least 1", hint="e.g. --repeat 3")
    return BenchPlan(
        dataset,
        prompts,
        request.concurrency,
        output_tokens,
        request.num_prompts,
        label,
        load=model,
        repeat=request.repeat,
        percentiles=parse_percentiles(request.percentiles),
        slo=parse_goodput(request.goodput),
        random=random_settings,
    )


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

        def update(done: int, total: int | None, tok_s: float | None) -> None:
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
    if request.push is not None:
        gateway_url(request.push, profile)  # a bad --push is refused before the run, not after it
    if request.report_configmap is not None:
        parse_ref(request.report_configmap)
    return [bench_endpoint(request, profile, request.endpoint, request.label or "run")]


def keep_run(request: Request, report: BenchReport, api: KubePort) -> None:
    """Keep the run's report in --report-configmap (in-cluster: the pod's own service account)."""
    assert request.report_configmap is not None
    profile = load_profile(request.profile, profile_sets(request))
    keep(api, request.report_configmap, report, profile.observe.canary.report_max_bytes)


def push_run(request: Request, report: BenchReport) -> str:
    """Push the run's canary series to --push's Pushgateway; the gateway's URL."""
    assert request.push is not None
    profile = load_profile(request.profile, profile_sets(request))
    url = gateway_url(request.push, profile)
    finished = report.finished_at or report.started_at
    push(url, samples(report, finished.timestamp()), grouping_key(profile, request.group))
    return url


def report_paths(path: Path, labels: list[str]) -> list[Path]:
    """`path` for one run; `stem-LABEL.suffix` beside it per run for several (each one `bench compare` reads)."""
    if len(labels) == 1:
        return [path]
    return [path.with_name(f"{path.stem}-{label}{path.suffix or '.json'}") for label in labels]
