"""The `smoke` command: check a running vLLM endpoint against the profile's targets."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from k3deploy.cli.app import FormatOpt, OutputFormat, ProfileOpt, SetOpt, app, get_profile
from k3deploy.cli.output import print_json_text
from k3deploy.cli.rollout import checked_group_template
from k3deploy.console import err, is_interactive
from k3deploy.duration import parse_duration
from k3deploy.errors import UsageError
from k3deploy.fileio.write import check_output, write_output
from k3deploy.reporter import Reporter

if TYPE_CHECKING:  # the command's stage loads when it runs (below): `k3deploy --help` stays light
    from k3deploy.profile.model import Profile
    from k3deploy.report.smoke import SmokeReport


def parse_levels(raw: str) -> list[int]:
    """`--concurrency 1,2,4` as positive integers (smoke and bench)."""
    try:
        levels = [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        levels = []
    if not levels or any(level < 1 for level in levels):
        raise UsageError(
            f"--concurrency {raw!r} is not a list of positive integers", hint="for example --concurrency 1,4,16"
        )
    return levels


def flag_overrides(
    requests: int | None,
    output_tokens: int | None,
    concurrency: str | None,
    min_tok_s: float | None,
    min_acceptance_length: float | None,
    request_timeout: float | None = None,
    overall_timeout: float | None = None,
    wait_ready: float | None = None,
) -> list[str]:
    """The command's flags as profile overrides (applied after --set, so a flag wins)."""
    values = {
        "smoke.request_timeout_s": request_timeout,
        "smoke.overall_timeout_s": overall_timeout,
        "smoke.ready_timeout_s": wait_ready,
        "smoke.requests": requests,
        "smoke.output_tokens": output_tokens,
        "smoke.concurrency": None if concurrency is None else parse_levels(concurrency),
        "targets.decode_tok_s": min_tok_s,
        "targets.min_acceptance_length": min_acceptance_length,
    }
    return [f"{key}={value}" for key, value in values.items() if value is not None]


@app.command()
def smoke(
    endpoint: Annotated[
        str, typer.Option("--endpoint", help="Base URL of the vLLM OpenAI server, e.g. http://10.0.0.5:8000.")
    ],
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Environment variable holding the API key.")
    ] = None,
    requests: Annotated[
        int | None, typer.Option("--requests", min=1, help="Measured bs=1 requests (smoke.requests).")
    ] = None,
    output_tokens: Annotated[
        int | None, typer.Option("--output-tokens", min=2, help="Tokens per request (smoke.output_tokens).")
    ] = None,
    concurrency: Annotated[str | None, typer.Option("--concurrency", help="Concurrency levels, e.g. 1,4,16.")] = None,
    min_tok_s: Annotated[
        float | None, typer.Option("--min-tok-s", help="Decode tok/s target (targets.decode_tok_s).")
    ] = None,
    min_acceptance_length: Annotated[
        float | None,
        typer.Option("--min-acceptance-length", help="Minimum mean acceptance length (targets.min_acceptance_length)."),
    ] = None,
    request_timeout: Annotated[
        str | None,
        typer.Option(
            "--request-timeout", help="How long one request may take, e.g. 90s, 10m (smoke.request_timeout_s)."
        ),
    ] = None,
    overall_timeout: Annotated[
        str | None,
        typer.Option(
            "--overall-timeout", help="How long the whole smoke run may take, e.g. 30m (smoke.overall_timeout_s)."
        ),
    ] = None,
    wait_ready: Annotated[
        str | None,
        typer.Option(
            "--wait-ready",
            help="Wait up to this long (e.g. 10m) for /health to answer 200 before judging; not counted "
            "in --overall-timeout; exit 3 when it never does (smoke.ready_timeout_s).",
        ),
    ] = None,
    gate_leaders: Annotated[
        bool,
        typer.Option(
            "--gate-leaders",
            help="First gate every leader pod of the profile's release that the API Service does not select yet "
            "(smoke.gate_traffic), each at its own address, and label the ones that pass; the smoke Job's mode, "
            "with its in-cluster credentials.",
        ),
    ] = False,
    group_endpoint: Annotated[
        str | None,
        typer.Option(
            "--group-endpoint",
            help="With --gate-leaders: URL template of a leader ({pod}, {lws}, {group}, {namespace}); default its "
            "cluster DNS name.",
        ),
    ] = None,
    output: FormatOpt = OutputFormat.table,
    report_file: Annotated[Path | None, typer.Option("--report", help="Write the JSON report to this file.")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Let --report replace a file k3deploy did not write (never a symlink).")
    ] = False,
) -> None:
    """Check a running endpoint: liveness, correctness, bs=1 throughput, speculative decoding, targets.

    Exit 0 when every check passes, 1 when one fails, 3 when the endpoint cannot be reached.
    """
    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise UsageError(
                f"--api-key-env {api_key_env}: that environment variable is not set", hint=f"export {api_key_env}=..."
            )
    # Checked before the run: a smoke run takes minutes and its report must not be lost at the end.
    report_out = check_output(report_file, "--report", force=force) if report_file is not None else None
    # The stage loads when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.measure.request import normalize_endpoint
    from k3deploy.report.smoke_view import smoke_view
    from k3deploy.smoke.headline import REHEARSAL_LABEL
    from k3deploy.smoke.runner import SmokeOptions, run_smoke

    normalize_endpoint(endpoint)  # a malformed URL is a usage error before the profile or the network is touched
    if group_endpoint is not None:
        if not gate_leaders:
            raise UsageError("--group-endpoint is for --gate-leaders", hint="add --gate-leaders, or drop it")
        group_endpoint = checked_group_template(group_endpoint)
    prof = get_profile(
        profile,
        (set_ or [])
        + flag_overrides(
            requests,
            output_tokens,
            concurrency,
            min_tok_s,
            min_acceptance_length,
            parse_duration(request_timeout, "--request-timeout"),
            parse_duration(overall_timeout, "--overall-timeout"),
            parse_duration(wait_ready, "--wait-ready"),
        ),
    )

    progress = (lambda msg: err.print(f"[dim]{msg}[/]", markup=True)) if is_interactive() else None

    reporter = Reporter()
    options = SmokeOptions(api_key=api_key, progress=progress, notice=reporter.say)
    if gate_leaders:
        report = _gated(prof, endpoint, group_endpoint, lambda p, url: run_smoke(p, url, options), reporter)
    else:
        report = run_smoke(prof, endpoint, options)
    err.print(smoke_view(report))
    if prof.model.rehearsal:
        reporter.say(f"note: {prof.model.id} is a {REHEARSAL_LABEL}")
    if report_out is not None:
        write_output(report_out, report.to_json())
    if output is not OutputFormat.table:
        # Plain text, not rich's print_json: a report holds every chunk's stamp and highlighting it costs seconds.
        print_json_text(report.model_dump_json(indent=2), output)
    report.raise_for_status()


def _gated(
    profile: Profile,
    endpoint: str,
    template: str | None,
    smoke: Callable[[Profile, str], SmokeReport],
    reporter: Reporter,
) -> SmokeReport:
    """--gate-leaders: gate the leaders not in traffic yet (targets/kubernetes/job_gates.py), then smoke `endpoint`
    (the API Service) unless a gate failed; the gates' checks lead the report."""
    # The cluster client and the gate load only for --gate-leaders (the smoke Job's mode).
    from k3deploy.kube.api import KubeApi
    from k3deploy.kube.options import KubeOptions
    from k3deploy.report.model import Status
    from k3deploy.report.smoke import SmokeReport
    from k3deploy.targets.kubernetes.job_gates import gate_from_inside

    started = datetime.now(UTC)
    gates = gate_from_inside(
        KubeApi(KubeOptions()), profile, lambda p, url: smoke(p, url).failure(), reporter, template
    )
    if any(c.status is Status.FAIL for c in gates):
        return SmokeReport(
            profile=profile.name, endpoint=endpoint, started_at=started, finished_at=datetime.now(UTC), checks=gates
        )
    report = smoke(profile, endpoint)
    return report.model_copy(update={"checks": [*gates, *report.checks]})
