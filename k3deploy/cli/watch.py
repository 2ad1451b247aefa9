"""The `watch` command: a live view of the running deployment's figures against the profile's targets."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Annotated

import typer

from k3deploy.cli.app import (
    FormatOpt,
    OutputFormat,
    ProfileOpt,
    SetOpt,
    app,
    checked_endpoint,
    get_profile,
)
from k3deploy.cli.output import as_yaml
from k3deploy.cli.rollout import ContextOpt, KubeconfigOpt, NamespaceOpt
from k3deploy.console import err, is_interactive
from k3deploy.duration import parse_duration
from k3deploy.errors import UsageError
from k3deploy.redact import redact_text, redact_url

if TYPE_CHECKING:
    from k3deploy.profile.model import Profile


def _metrics_base(profile: Profile, endpoint: str | None) -> str | None:
    """The vLLM base URL to scrape: --endpoint, else the local server's, else the profile's endpoint_override; None
    for a Kubernetes deployment without either (the leader is reached through a port-forward)."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.measure.request import normalize_endpoint

    if endpoint is not None:
        return normalize_endpoint(endpoint)
    if not profile.on_kubernetes:
        # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
        from k3deploy.targets import target_for

        return target_for(profile).endpoint(profile)
    if profile.kubernetes.endpoint_override is not None:
        return normalize_endpoint(str(profile.kubernetes.endpoint_override))
    return None


def _prometheus_url(value: str | None) -> str | None:
    """--prometheus as a URL both k3deploy's check and httpx accept (httpx refuses control characters)."""
    url = checked_endpoint(value, "--prometheus")
    if url is not None:
        # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
        import httpx

        try:
            httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise UsageError(
                f"--prometheus {redact_url(url)!r}: {redact_text(str(exc), url)}",
                hint="for example --prometheus http://127.0.0.1:9090",
            ) from None
    return url


def _window(value: str | None, prometheus: str | None) -> str:
    """--window, checked: a PromQL duration, and only with --prometheus (a /metrics source diffs scrapes instead)."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.observe.promql import DEFAULT_WINDOW, checked_window

    if value is None:
        return DEFAULT_WINDOW
    if prometheus is None:
        raise UsageError(
            "--window is the rate window of the Prometheus queries: it needs --prometheus",
            hint="with --endpoint each figure spans one --interval",
        )
    try:
        return checked_window(value)
    except ValueError as exc:
        raise UsageError(f"--window: {exc}", hint="for example --window 5m") from None


def _expressions(profile: Profile, window: str) -> dict[str, str]:
    """The dashboard's expressions of the figures the view shows."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.observe.promql import FIGURES, Scope
    from k3deploy.observe.scope import profile_scope
    from k3deploy.observe.watch_figures import ROWS

    # A local server is no ServiceMonitor target: its series carry no namespace/service labels to select on.
    scope = profile_scope(profile) if profile.on_kubernetes else Scope()
    keys = {key for key, _, _ in ROWS} | {"per_position_acceptance"}
    return {figure.key: figure.expr(scope, window) for figure in FIGURES if figure.key in keys}


@app.command()
def watch(
    profile: ProfileOpt = None,
    set_: SetOpt = None,
    endpoint: Annotated[
        str | None,
        typer.Option("--endpoint", help="Base URL of the vLLM leader whose /metrics to read (e.g. a port-forward)."),
    ] = None,
    prometheus: Annotated[
        str | None,
        typer.Option(
            "--prometheus", help="Base URL of a Prometheus server to query instead (the dashboard's expressions)."
        ),
    ] = None,
    interval: Annotated[str, typer.Option("--interval", help="Time between scrapes, e.g. 5s, 500ms.")] = "5s",
    window: Annotated[
        str | None,
        typer.Option("--window", help="Rate window of the --prometheus queries, e.g. 10m (default 2m)."),
    ] = None,
    count: Annotated[int | None, typer.Option("--count", min=1, help="Stop after this many intervals.")] = None,
    for_: Annotated[str | None, typer.Option("--for", help="Stop after this long, e.g. 10m.")] = None,
    output: FormatOpt = OutputFormat.table,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
) -> None:
    """Watch the running deployment: output and per-request decode tok/s, TTFT, queue, KV cache, prefix cache and
    draft acceptance, each against the profile's target, from counter deltas between scrapes.

    A Kubernetes profile without --endpoint or --prometheus is read from its serving leader through a port-forward,
    as `up` smokes it. `-o json` prints one JSON line per interval. Ends at Ctrl-C (exit 0), --count or --for; exit 3
    when the first scrape fails (a later failure shows a "scrape failed" row and watching goes on).
    """
    if endpoint is not None and prometheus is not None:
        raise UsageError(
            "--endpoint and --prometheus are two sources: give one",
            hint="--endpoint reads /metrics, --prometheus queries Prometheus",
        )
    interval_s = parse_duration(interval, "--interval")
    for_s = parse_duration(for_, "--for")
    assert interval_s is not None  # parse_duration returns None only for None
    prom_url = _prometheus_url(prometheus)
    rate_window = _window(window, prom_url)
    sets = [*(set_ or []), *([f"kubernetes.namespace={namespace}"] if namespace else [])]
    prof = get_profile(profile, sets, check_fit=False)
    with contextlib.ExitStack() as stack:
        base = None if prom_url is not None else _metrics_base(prof, endpoint)
        if prom_url is None and base is None:
            # A Kubernetes deployment without --endpoint: its leader, through a port-forward kept open throughout.
            from k3deploy.kube.options import KubeOptions
            from k3deploy.targets.kubernetes.forward import to_leader

            options = KubeOptions(kubeconfig, context, prof.kubernetes.namespace)
            base = stack.enter_context(to_leader(options, prof, "watch")).url
        _watch(prof, base, prom_url, rate_window, interval_s, count, for_s, output)


def _watch(
    prof: Profile,
    base: str | None,
    prom_url: str | None,
    rate_window: str,
    interval_s: float,
    count: int | None,
    for_s: float | None,
    output: OutputFormat,
) -> None:
    """Scrape `base`'s /metrics (or query `prom_url`) every interval and show each tick."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.observe.watch_loop import Source, ticks
    from k3deploy.observe.watch_sources import MetricsSource, PrometheusSource
    from k3deploy.observe.watch_view import ViewState, json_line, render

    timeout_s = min(10.0, max(1.0, interval_s))
    source: Source
    if prom_url is not None:
        source = PrometheusSource(prom_url, _expressions(prof, rate_window), timeout_s=timeout_s)
    else:
        assert base is not None  # the caller found it when not reading Prometheus
        source = MetricsSource(base, timeout_s=timeout_s)
    stream = ticks(source, interval_s, count=count, for_s=for_s)
    try:
        if output is not OutputFormat.table:
            for tick in stream:
                if not tick.baseline:
                    line = json_line(tick, source.kind, source.url, prof.targets)
                    # -o yaml: a stream of YAML documents, one per interval, as -o json gives one line each.
                    typer.echo(
                        line if output is OutputFormat.json else as_yaml(json.loads(line), document=True).rstrip("\n")
                    )
            return
        state = ViewState(source=source.url, profile=prof.name, targets=prof.targets)
        if not is_interactive():
            for tick in stream:
                if not tick.baseline:
                    state.update(tick)
                    err.print(render(state))
            return
        # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
        from rich.live import Live

        state.update(next(stream))  # the first scrape, before the live view: a failure is only an error line
        with Live(render(state), console=err, auto_refresh=False, transient=False) as live:
            for tick in stream:
                state.update(tick)
                live.update(render(state), refresh=True)
    except KeyboardInterrupt:
        from k3deploy import cli  # the entry point's record of a SIGTERM (loaded already: it runs this command)

        if cli._TERMINATED:  # a SIGTERM is not how a watch ends well: 143, as a shell reports a terminated job
            raise typer.Exit(143) from None
        return  # Ctrl-C is how a watch ends: exit 0, no traceback
    finally:
        stream.close()
        source.close()
