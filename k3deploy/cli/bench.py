"""The `bench` command: measure an endpoint on a prompt set; `bench compare` sets runs side by side."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from k3deploy.cli.app import FormatOpt, OutputFormat, ProfileOpt, SetOpt, app
from k3deploy.cli.output import print_json_text
from k3deploy.cli.rollout import ContextOpt, KubeconfigOpt, NamespaceOpt
from k3deploy.cli.smoke import parse_levels
from k3deploy.console import err
from k3deploy.errors import CheckFailed, UsageError
from k3deploy.redact import redact_url
from k3deploy.reporter import Reporter

if TYPE_CHECKING:
    from k3deploy.bench.cli_run import Request

bench_app = typer.Typer(
    help="Measure an endpoint like the published benchmarks; `bench compare` sets runs side by side.",
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode=None,
)
app.add_typer(bench_app, name="bench")


#: --html and --png, the same on `bench` and `bench compare`.
HtmlOpt = Annotated[
    Path | None,
    typer.Option("--html", help="Write a self-contained HTML report (needs the 'bench' extra: matplotlib)."),
]
PngOpt = Annotated[
    Path | None, typer.Option("--png", help="Write the charts as PNG (needs the 'bench' extra: matplotlib).")
]


def _kubernetes_endpoint(
    request: Request, stack: contextlib.ExitStack, kubeconfig: str | None, context: str | None
) -> str | None:
    """Where to bench without --endpoint: a Kubernetes profile's endpoint_override, else its serving leader through
    a port-forward held open by `stack` (targets/kubernetes/forward.py); None for any other profile."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.bench.cli_run import profile_sets
    from k3deploy.profile import load_profile

    profile = load_profile(request.profile, profile_sets(request))
    if not profile.on_kubernetes:
        return None
    if profile.kubernetes.endpoint_override is not None:
        return str(profile.kubernetes.endpoint_override)
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.kube.options import KubeOptions
    from k3deploy.targets.kubernetes.forward import to_leader

    options = KubeOptions(kubeconfig, context, profile.kubernetes.namespace)
    return stack.enter_context(to_leader(options, profile, "bench")).url


@bench_app.callback()
def bench(
    ctx: typer.Context,
    endpoint: Annotated[
        str | None, typer.Option("--endpoint", help="Base URL of the vLLM OpenAI server (not with --ab).")
    ] = None,
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Environment variable holding the API key.")
    ] = None,
    dataset: Annotated[
        str, typer.Option("--dataset", help="builtin | random | speed-bench:DIR | spec-bench:FILE | jsonl:FILE.")
    ] = "builtin",
    subset: Annotated[
        str | None,
        typer.Option(
            "--subset", help="qualitative | throughput_1k..throughput_32k (builtin: qualitative | throughput)."
        ),
    ] = None,
    category: Annotated[str | None, typer.Option("--category", help="Only these categories (comma-separated).")] = None,
    concurrency: Annotated[str, typer.Option("--concurrency", help="Concurrency levels, e.g. 1,2,4.")] = "1",
    num_prompts: Annotated[
        int | None, typer.Option("--num-prompts", min=1, help="First N prompts of each category (default: all).")
    ] = None,
    output_tokens: Annotated[
        int | None, typer.Option("--output-tokens", min=2, help="Tokens per request (default smoke.output_tokens).")
    ] = None,
    temperature: Annotated[
        float | None,
        typer.Option("--temperature", min=0.0, help="Sampling temperature (default smoke.temperature, 0)."),
    ] = None,
    top_p: Annotated[
        float | None,
        typer.Option("--top-p", min=0.0, max=1.0, help="top_p of the requests (default smoke.top_p: the server's)."),
    ] = None,
    label: Annotated[str | None, typer.Option("--label", help="Name of this run in reports and comparisons.")] = None,
    ab: Annotated[
        bool, typer.Option("--ab", help="Local target: serve without speculation, then with it; print the speedup.")
    ] = False,
    sweep: Annotated[
        str | None,
        typer.Option("--sweep", help="Local target: restart per value, e.g. speculative.num_speculative_tokens=1,2,3."),
    ] = None,
    request_rate: Annotated[
        str | None,
        typer.Option(
            "--request-rate",
            help="Open loop: requests/s, Poisson arrivals as vllm bench serve (a list sweeps: 1,2,4; inf = all at once).",
        ),
    ] = None,
    burstiness: Annotated[
        float, typer.Option("--burstiness", help="Gamma shape of arrival gaps with --request-rate (1 = Poisson).")
    ] = 1.0,
    max_concurrency: Annotated[
        int | None, typer.Option("--max-concurrency", min=1, help="Cap on requests in flight with --request-rate.")
    ] = None,
    duration: Annotated[
        float | None,
        typer.Option("--duration", min=0.1, help="Seconds per cell to keep offering requests (cycling the prompts)."),
    ] = None,
    repeat: Annotated[
        int, typer.Option("--repeat", min=1, help="Run each cell N times; the report has the spread.")
    ] = 1,
    percentiles: Annotated[
        str | None, typer.Option("--percentiles", help="Percentiles beside p50,p90,p95,p99, e.g. 25,75,99.9.")
    ] = None,
    goodput: Annotated[
        list[str] | None,
        typer.Option("--goodput", help="SLOs in ms, as vllm bench serve: --goodput ttft:500 tpot:20 (e2el too)."),
    ] = None,
    random_input_len: Annotated[
        int, typer.Option("--random-input-len", min=1, help="--dataset random: prompt tokens (vLLM's default).")
    ] = 1024,
    random_output_len: Annotated[
        int, typer.Option("--random-output-len", min=1, help="--dataset random: output tokens (vLLM's default).")
    ] = 128,
    random_range_ratio: Annotated[
        float, typer.Option("--random-range-ratio", min=0.0, help="--dataset random: lengths vary +-this fraction.")
    ] = 0.0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --dataset random and of open-loop arrivals.")] = 0,
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="--dataset random: tokenizer folder or Hub id (default: the model's)."),
    ] = None,
    output: FormatOpt = OutputFormat.table,
    report_file: Annotated[
        Path | None,
        typer.Option("--report", help="Write the JSON report here (--ab/--sweep: NAME-LABEL.json per run)."),
    ] = None,
    csv_file: Annotated[Path | None, typer.Option("--csv", help="Write one CSV row per request here.")] = None,
    html_file: HtmlOpt = None,
    png_file: PngOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Let --report/--html/--png replace files k3deploy did not write.")
    ] = False,
    push: Annotated[
        str | None,
        typer.Option(
            "--push",
            metavar="URL|profile",
            help="Push the run's canary series to this Prometheus Pushgateway (`profile`: observe.pushgateway_url).",
        ),
    ] = None,
    report_configmap: Annotated[
        str | None,
        typer.Option(
            "--report-configmap",
            metavar="NAMESPACE/NAME",
            help="Keep the JSON report in this existing ConfigMap (key report.json; the canary's last report).",
        ),
    ] = None,
    group: Annotated[
        int, typer.Option("--group", min=0, help="The serving group benched: a grouping key of --push.")
    ] = 0,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Bench an endpoint per category, tier and concurrency. Exit 0 all requests ok, 1 a request failed or tokens
    disagree with the server's counters, 3 the endpoint cannot be reached.

    A Kubernetes profile without --endpoint is benched on its serving leader through a port-forward, as `up` smokes
    it (or on kubernetes.endpoint_override)."""
    if ctx.invoked_subcommand is not None:
        return
    # The bench stage (aiohttp, the datasets, charts) loads when the command runs: `k3deploy --help` stays light.
    from k3deploy.bench import cli_run
    from k3deploy.bench.ab import run_variants
    from k3deploy.bench.compare import compare, headline
    from k3deploy.bench.load import parse_rates
    from k3deploy.bench.outputs import outputs_of, write_outputs
    from k3deploy.cli.bench_serving import rehearsal_tokenizer, serving_for
    from k3deploy.report.bench_view import bench_view, compare_view

    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise UsageError(
                f"--api-key-env {api_key_env}: that environment variable is not set", hint=f"export {api_key_env}=..."
            )
    request = cli_run.Request(
        endpoint=endpoint,
        profile=profile,
        sets=[*(set_ or []), *([f"kubernetes.namespace={namespace}"] if namespace else [])],
        api_key=api_key,
        dataset=dataset,
        subset=subset,
        categories=[c.strip() for c in category.split(",") if c.strip()] if category else None,
        concurrency=parse_levels(concurrency),
        num_prompts=num_prompts,
        output_tokens=output_tokens,
        temperature=temperature,
        top_p=top_p,
        label=label,
        ab=ab,
        sweep=sweep,
        quiet=output is not OutputFormat.table,
        request_rates=parse_rates(request_rate),
        burstiness=burstiness,
        max_concurrency=max_concurrency,
        duration_s=duration,
        repeat=repeat,
        percentiles=percentiles,
        goodput=goodput or [],
        random_input_len=random_input_len,
        random_output_len=random_output_len,
        random_range_ratio=random_range_ratio,
        seed=seed,
        tokenizer=tokenizer,
        push=push,
        group=group,
        report_configmap=report_configmap,
        rehearsal_tokenizer=rehearsal_tokenizer,
    )
    if push is not None and (request.ab or request.sweep):
        raise UsageError("--push pushes one run, not --ab or --sweep", hint="drop --push, or bench one --endpoint")
    outputs = outputs_of(
        request, report_file, html_file, png_file, csv_file, force=force
    )  # before the run: it takes minutes
    with contextlib.ExitStack() as stack:
        if not (request.endpoint or request.ab or request.sweep):
            request.endpoint = _kubernetes_endpoint(request, stack, kubeconfig, context)
        reports = run_variants(request, serving_for) if request.ab or request.sweep else cli_run.run(request)
    reporter = Reporter()
    for report in reports:
        err.print(bench_view(report))
    if len(reports) > 1:
        comparison = compare(reports, [r.label for r in reports])
        err.print(compare_view(comparison))
        for line in headline(reports):
            reporter.say(line)
        if comparison.verdict:  # recorded where the numbers are
            for report in reports:
                report.notes.append(comparison.verdict)
    write_outputs(reports, outputs)
    if output is not OutputFormat.table:
        print_json_text(
            reports[0].model_dump_json(indent=1)
            if len(reports) == 1
            else "[" + ",\n".join(r.model_dump_json(indent=1) for r in reports) + "]",
            output,
        )
    if report_configmap is not None and len(reports) == 1:
        # The cluster client loads only for this flag (kubeconfig, else the pod's service account).
        from k3deploy.kube.api import KubeApi
        from k3deploy.kube.options import KubeOptions

        api = KubeApi(KubeOptions())
        try:
            cli_run.keep_run(request, reports[0], api)
        finally:
            api.close()
    if push is not None:  # after the report is written: a gateway that is down loses no figures
        url = cli_run.push_run(request, reports[0])
        reporter.say(f"pushed to {redact_url(url)}")
    problems = [w for r in reports for w in r.warnings]
    if problems:
        raise CheckFailed(
            f"bench: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
            hint="the report holds every request's error",
        )


@bench_app.command("compare")
def compare_cmd(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Bench reports (JSON); the first's label is the base of every speedup; reports sharing a label are "
            "rounds of one variant (A B A B ...)."
        ),
    ],
    output: FormatOpt = OutputFormat.table,
    html_file: HtmlOpt = None,
    png_file: PngOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --html/--png files k3deploy did not write (or that were edited).")
    ] = False,
) -> None:
    """Speedup per category, tier and overall between bench runs, beside the published figures.

    Refuses (exit 2) runs whose dataset, prompt set, output length or temperature differ."""
    # Loaded when the command runs: `k3deploy --help` stays light.
    from k3deploy.bench.compare import compare, differences
    from k3deploy.bench.outputs import require_charts, write_charts
    from k3deploy.fileio.write import check_output, distinct
    from k3deploy.report.bench import BenchReport
    from k3deploy.report.bench_view import compare_view

    # Checked before the reports are read; written after (fileio/write.py's rules: --force, symlinks, rename).
    html_out = check_output(html_file, "--html", force=force) if html_file is not None else None
    png_out = check_output(png_file, "--png", force=force) if png_file is not None else None
    distinct([out for out in (html_out, png_out) if out is not None], tuple(("report", path) for path in files))
    require_charts(html_file, png_file)
    if len(files) < 2:
        raise UsageError(
            "bench compare needs at least two reports", hint="k3deploy bench compare base.json dspark.json"
        )
    reports = []
    for path in files:
        try:
            reports.append(BenchReport.load(path))
        except FileNotFoundError:
            raise UsageError(f"{path} does not exist", hint="pass files written by `k3deploy bench --report`") from None
        except ValueError as exc:
            raise UsageError(
                f"{path} is not a bench report this k3deploy reads: {str(exc).splitlines()[0]}",
                hint="pass files written by `k3deploy bench --report`",
            ) from None
    names = [str(p) for p in files]
    differ = differences(reports, names)
    if differ:
        raise UsageError(
            "runs are not like for like: " + "; ".join(differ),
            hint="bench both sides with the same --dataset/--subset/--category/--num-prompts, --output-tokens and --temperature",
        )
    comparison = compare(reports, names)
    err.print(compare_view(comparison))
    if comparison.verdict:
        Reporter().say(comparison.verdict)
    write_charts(reports, html_out, png_out)
    if output is not OutputFormat.table:
        print_json_text(comparison.model_dump_json(indent=1), output)
