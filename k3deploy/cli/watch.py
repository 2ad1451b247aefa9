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
from k3deploy.cli.rollout import ContextOpt, DetailsOpt, KubeconfigOpt, NamespaceOpt
from k3deploy.console import err, is_interactive
from k3deploy.duration import parse_duration
from k3deploy.errors import UsageError
from k3deploy.redact import redact_text, redact_url

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import RenderableType

    from k3deploy.fault_guard.health import GroupHealth
    from k3deploy.observe.canary_status import CanaryRun
    from k3deploy.profile.model import Profile

    #: A read of the groups: the rows (the last good ones after a failure) and why the read failed (None: it did not).
    GroupsRead = tuple[list[GroupHealth], str | None]


def _group_reader(profile: Profile, kubeconfig: str | None, context: str | None) -> Callable[[], GroupsRead]:
    """`watch --groups`: a read of the release's groups (targets/kubernetes/status.py read_groups) each interval; a
    failed read keeps the last rows and says why."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.errors import K3DeployError
    from k3deploy.kube.api import KubeApi
    from k3deploy.kube.deadline import Deadline
    from k3deploy.kube.options import KubeOptions
    from k3deploy.targets.kubernetes.status import read_groups

    api = KubeApi(KubeOptions(kubeconfig, context, profile.kubernetes.namespace, Deadline(None)))
    last: list[GroupHealth] = []

    def read() -> GroupsRead:
        nonlocal last
        try:
            last = read_groups(api, profile)
        except K3DeployError as exc:
            return last, exc.message
        return last, None

    return read


def _with_groups(figures: RenderableType, read: GroupsRead, details: bool) -> RenderableType:
    """The figures, then the groups' table (more than 4 groups summarised unless `details`; and why the last read
    failed)."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from rich.console import Group
    from rich.text import Text

    from k3deploy.console import safe_text  # (as above)
    from k3deploy.targets.kubernetes.summary import summarised  # (as above)
    from k3deploy.targets.kubernetes.view import SUMMARY_NOTE, groups_table  # (as above)

    rows, error = read
    parts: list[RenderableType] = [figures, groups_table(rows, details) if rows else Text("no serving pods")]
    if summarised(len(rows), details):
        parts.append(Text(SUMMARY_NOTE, style="dim"))
    if error:
        parts.append(Text(f"reading the groups failed: {safe_text(error)}", style="yellow"))
    return Group(*parts)


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


def _canary_reader(profile: Profile, source: object) -> Callable[[], CanaryRun | None] | None:
    """With --prometheus and observe.canary on: a reader of the canary's last run from its series (None: no canary
    line, e.g. a /metrics source, which has no canary series)."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.errors import ScrapeError
    from k3deploy.observe.canary_status import from_series, queries
    from k3deploy.observe.watch_sources import PrometheusSource

    if not isinstance(source, PrometheusSource) or not profile.observe.canary.enabled:
        return None
    wanted = queries(profile)

    def read() -> CanaryRun | None:
        try:
            return from_series(profile, {key: source.query(expr) for key, expr in wanted.items()})
        except ScrapeError:
            return None  # the figures' own row says when Prometheus fails

    return read


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
    groups: Annotated[
        bool,
        typer.Option(
            "--groups",
            help="Also show each serving group's ComputeDomain state and trays' health, read from the cluster "
            "every interval (a Kubernetes profile).",
        ),
    ] = False,
    details: DetailsOpt = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    namespace: NamespaceOpt = None,
    output: FormatOpt = OutputFormat.table,
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
    if groups and not prof.on_kubernetes:
        raise UsageError(
            f"--groups reads a release's groups on a cluster; profile {prof.name} does not run on Kubernetes",
            hint="drop --groups, or pass a Kubernetes profile",
        )
    read_groups = _group_reader(prof, kubeconfig, context) if groups else None
    with contextlib.ExitStack() as stack:
        base = None if prom_url is not None else _metrics_base(prof, endpoint)
        if prom_url is None and base is None:
            # A Kubernetes deployment without --endpoint: its leader, through a port-forward kept open throughout.
            from k3deploy.kube.options import KubeOptions
            from k3deploy.targets.kubernetes.forward import to_leader

            options = KubeOptions(kubeconfig, context, prof.kubernetes.namespace)
            base = stack.enter_context(to_leader(options, prof, "watch")).url
        _watch(prof, base, prom_url, rate_window, interval_s, count, for_s, output, read_groups, details)


def _watch(
    prof: Profile,
    base: str | None,
    prom_url: str | None,
    rate_window: str,
    interval_s: float,
    count: int | None,
    for_s: float | None,
    output: OutputFormat,
    read_groups: Callable[[], GroupsRead] | None,
    details: bool = False,
) -> None:
    """Scrape `base`'s /metrics (or query `prom_url`) every interval and show each tick."""
    # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
    from k3deploy.observe.canary_status import line as canary_line
    from k3deploy.observe.watch_loop import Source, Tick, ticks
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
    canary = _canary_reader(prof, source)
    try:
        if output is not OutputFormat.table:
            for tick in stream:
                if not tick.baseline:
                    line = json_line(tick, source.kind, source.url, prof.targets)
                    doc = json.loads(line)
                    if read_groups is not None:
                        rows, error = read_groups()
                        doc = {**doc, "groups": rows, "groups_error": error}
                    if canary is not None:
                        run = canary()
                        doc = {**doc, "canary": run.as_dict() if run else None}
                    if read_groups is not None or canary is not None:
                        line = json.dumps(doc, separators=(",", ":"))
                    # -o yaml: a stream of YAML documents, one per interval, as -o json gives one line each.
                    typer.echo(
                        line if output is OutputFormat.json else as_yaml(json.loads(line), document=True).rstrip("\n")
                    )
            return
        state = ViewState(source=source.url, profile=prof.name, targets=prof.targets)

        def view() -> RenderableType:
            return render(state) if read_groups is None else _with_groups(render(state), read_groups(), details)

        def update(tick: Tick) -> None:
            state.update(tick)
            if canary is not None:
                state.canary = canary_line(canary())

        if not is_interactive():
            for tick in stream:
                if not tick.baseline:
                    update(tick)
                    err.print(view())
            return
        # Loaded when the command runs: `k3deploy --help` and the other commands stay light.
        from rich.live import Live

        update(next(stream))  # the first scrape, before the live view: a failure is only an error line
        with Live(view(), console=err, auto_refresh=False, transient=False) as live:
            for tick in stream:
                update(tick)
                live.update(view(), refresh=True)
    except KeyboardInterrupt:
        from k3deploy import cli  # the entry point's record of a SIGTERM (loaded already: it runs this command)

        if cli._TERMINATED:  # a SIGTERM is not how a watch ends well: 143, as a shell reports a terminated job
            raise typer.Exit(143) from None
        return  # Ctrl-C is how a watch ends: exit 0, no traceback
    finally:
        stream.close()
        source.close()
